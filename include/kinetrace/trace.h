#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kinetrace/export.h"
#include "kinetrace/sink.h"
#include "kinetrace/value.h"

namespace kinetrace {

class Trace;
namespace detail {
struct TraceData;
const TraceData& dataOf(const Trace& trace);
}  // namespace detail

// What a trace holds and what it could not hold. Every loss counter is also written into
// the trace's metadata (zero included); non-zero ones are logged when the session stops.
struct TraceStats {
  uint64_t hostRanges = 0;
  uint64_t hostInstants = 0;
  uint64_t counterSamples = 0;
  uint64_t gpuKernels = 0;
  uint64_t gpuMemcpys = 0;
  uint64_t gpuMemsets = 0;
  uint64_t gpuGraphs = 0;  // whole-graph runs (graph-level tracing: Config::cudaGraphTrace)
  uint64_t gpuSyncs = 0;
  uint64_t gpuMemoryEvents = 0;
  uint64_t apiCalls = 0;
  uint64_t droppedHostEvents = 0;         // the memory cap was reached while recording
  uint64_t droppedGpuRecords = 0;         // records CUPTI dropped (no buffer space)
  uint64_t gpuBufferRequestsRefused = 0;  // CUPTI asked for a buffer beyond the memory cap
  uint64_t droppedAssembledRecords = 0;   // assembled records the cap left no room for
  uint64_t outOfWindowEvents = 0;         // recorded but outside [start, stop]
  uint64_t unfinishedRanges = 0;          // still open at stop, closed at the stop time
  uint64_t namesCut = 0;                  // names longer than 4,096 bytes, cut (kinetrace/host.h)
  uint64_t droppedMetadata = 0;           // addMetadata() entries refused (the memory cap)
  uint64_t peakMemoryBytes = 0;           // the most the tracer held at once
  uint64_t memoryCapBytes = 0;            // Config::memoryMb in bytes
};

// The result of a session: an immutable, shareable set of records. Cheap to copy.
//
// When the session had an output (Config::output), its events were written there while
// recording and are not held in memory: outputPath() says where, and save()/writeTo() of
// such a trace throw kinetrace::Error saying so. When writing to the output failed,
// saveError() says why and the trace holds in memory what could not be written.
class KINETRACE_API Trace {
 public:
  Trace();
  explicit Trace(std::shared_ptr<const detail::TraceData> data);

  // Writes the trace to a path or URL: "trace.json", "trace.json.gz",
  // "file:///abs/trace.json", or a scheme registered with registerSink(). The file appears
  // whole or not at all; a symbolic link is followed and its target replaced, keeping its
  // mode (and owner where allowed), except another user's link in a sticky, world-writable
  // directory such as /tmp, which is refused as the kernel's protected_symlinks would. Errors
  // (an unwritable path, a path that is not a regular file, a refused link, an unknown scheme)
  // throw kinetrace::Error naming the path or scheme.
  void save(const std::string& url) const;

  // Streams the trace into any sink.
  void writeTo(Sink& sink) const;

  // Top-level metadata ("model": "resnet50"), written by later save()/writeTo() calls.
  // Replaces an earlier value of the key. For metadata in a trace written while
  // recording, use Profiler::addMetadata() before stop().
  void addMetadata(const std::string& key, Value value);
  // A value given as JSON text ({"rank": 0}). Invalid JSON throws kinetrace::Error.
  void addMetadataJson(const std::string& key, const std::string& json);

  TraceStats stats() const;
  // Start and stop of the recording window, nanoseconds since the Unix epoch.
  int64_t startNs() const;
  int64_t stopNs() const;
  // Where stop() wrote the trace while recording; "" when it was not written.
  const std::string& outputPath() const;
  // Why writing to Config::output failed; "" when it did not fail (or there was none).
  const std::string& saveError() const;
  // Whether the events are held in memory (save() and writeTo() can write them).
  bool hasEvents() const;
  // Every top-level metadata value the trace carries, in order.
  Metadata metadata() const;

 private:
  friend const detail::TraceData& detail::dataOf(const Trace& trace);
  std::shared_ptr<const detail::TraceData> data_;
  Metadata extra_;  // addMetadata() after the session: written after the trace's own
};

}  // namespace kinetrace
