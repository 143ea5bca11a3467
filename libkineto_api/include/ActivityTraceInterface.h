// kinetrace's libkineto-compatible API: a stopped trace.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace libkineto {

struct ITraceActivity;

class ActivityTraceInterface {
 public:
  virtual ~ActivityTraceInterface() = default;
  // Every activity: the host activities handed over with transferCpuTrace() (the same
  // objects, which the caller may still change before save()), then the GPU side.
  virtual const std::vector<const ITraceActivity*>* activities() { return nullptr; }
  // Writes the trace: Chrome trace JSON, ".json.gz" compressed, or Perfetto's format for
  // ".pftrace".
  virtual void save(const std::string& /*path*/) {}
};

}  // namespace libkineto
