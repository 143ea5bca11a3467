#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kinetrace/export.h"
#include "kinetrace/sink.h"

namespace kinetrace {

namespace detail {
struct TraceData;
}

// What a trace holds and what it could not hold. Every loss counter is also written into
// the trace's metadata (zero included); non-zero ones are logged when the session stops.
struct TraceStats {
  uint64_t hostRanges = 0;
  uint64_t hostInstants = 0;
  uint64_t counterSamples = 0;
  uint64_t gpuKernels = 0;
  uint64_t gpuMemcpys = 0;
  uint64_t gpuMemsets = 0;
  uint64_t gpuSyncs = 0;
  uint64_t gpuMemoryEvents = 0;
  uint64_t apiCalls = 0;
  uint64_t droppedHostEvents = 0;      // host buffer cap reached
  uint64_t droppedGpuRecords = 0;      // records CUPTI dropped (no buffer space)
  uint64_t gpuBufferRequestsRefused = 0;  // CUPTI asked for a buffer beyond the cap
  uint64_t outOfWindowEvents = 0;      // recorded but outside [start, stop]
  uint64_t unfinishedRanges = 0;       // still open at stop, closed at the stop time
};

// The result of a session: an immutable, shareable set of records. Cheap to copy.
class KINETRACE_API Trace {
 public:
  Trace();
  explicit Trace(std::shared_ptr<detail::TraceData> data);

  // Writes the trace to a path or URL: "trace.json", "file:///abs/trace.json", or a scheme
  // registered with registerSink(). The file appears whole or not at all. Errors (an
  // unwritable path, an unknown scheme) throw kinetrace::Error naming the path or scheme.
  void save(const std::string& url) const;

  // Streams the trace into any sink.
  void writeTo(Sink& sink) const;

  // Free-form top-level metadata ("model": "resnet50"). Replaces an earlier value of the key.
  void addMetadata(const std::string& key, std::string_view value);
  void addMetadata(const std::string& key, const char* value) { addMetadata(key, std::string_view(value)); }
  void addMetadata(const std::string& key, int64_t value);
  void addMetadata(const std::string& key, double value);
  // A value that is already JSON text ({"rank": 0}). Invalid JSON throws kinetrace::Error.
  void addMetadataJson(const std::string& key, const std::string& json);

  TraceStats stats() const;
  // Start and stop of the recording window, nanoseconds since the Unix epoch.
  int64_t startNs() const;
  int64_t stopNs() const;

  const detail::TraceData& data() const { return *data_; }

 private:
  std::shared_ptr<detail::TraceData> data_;
};

}  // namespace kinetrace
