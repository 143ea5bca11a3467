// kinetrace's libkineto-compatible API: what every activity of a trace answers.
//
// PyTorch calls these through the vtable: the order of the virtual functions is ABI.
#pragma once

#include <cstdint>
#include <string>

#include "ActivityType.h"

namespace libkineto {

class ActivityLogger;
struct TraceSpan;

struct ITraceActivity {
  virtual ~ITraceActivity() = default;
  // Where it ran: a process id for host activities, a device index for GPU ones.
  [[nodiscard]] virtual int64_t deviceId() const = 0;
  // Within the device: a thread id for host activities, a stream id for GPU ones.
  [[nodiscard]] virtual int64_t resourceId() const = 0;
  [[nodiscard]] virtual int32_t getThreadId() const = 0;
  [[nodiscard]] virtual int64_t timestamp() const = 0;  // start, epoch nanoseconds
  [[nodiscard]] virtual int64_t duration() const = 0;   // nanoseconds
  [[nodiscard]] virtual int64_t correlationId() const = 0;
  // The arrow the activity starts or ends (a launch and the GPU work it started).
  [[nodiscard]] virtual int flowType() const = 0;
  [[nodiscard]] virtual int64_t flowId() const = 0;
  [[nodiscard]] virtual bool flowStart() const = 0;
  [[nodiscard]] virtual ActivityType type() const = 0;
  [[nodiscard]] virtual const std::string name() const = 0;
  // The host activity this one belongs to (a kernel's CPU op), or nullptr.
  [[nodiscard]] virtual const ITraceActivity* linkedActivity() const = 0;
  [[nodiscard]] virtual const TraceSpan* traceSpan() const = 0;
  virtual void log(ActivityLogger& logger) const = 0;
  // The activity's arguments as the inside of a JSON object ("a": 1, "b": "x").
  [[nodiscard]] virtual const std::string metadataJson() const = 0;
  [[nodiscard]] virtual const std::string getMetadataValue(const std::string& /*key*/) const {
    return "";
  }

  // Microseconds by truncation, the one conversion every writer must share.
  static int64_t nsToUs(int64_t ns) { return ns / 1000; }
};

}  // namespace libkineto
