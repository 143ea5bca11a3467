#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kinetrace/export.h"
#include "kinetrace/log_level.h"

namespace kinetrace {

// What a session records. Host recording needs nothing; the GPU kinds need the CUPTI
// backend and are reported as unavailable (not an error) when it cannot run.
enum class Activity : uint32_t {
  Host = 1u << 0,        // ranges, instants, counters recorded through the host API
  Kernel = 1u << 1,      // GPU kernels, concurrent
  Memcpy = 1u << 2,      // GPU copies, peer-to-peer included
  Memset = 1u << 3,      // GPU memsets
  Sync = 1u << 4,        // stream / event / context synchronisation, stream-wait-event
  Memory = 1u << 5,      // device allocations and frees
  Overhead = 1u << 6,    // CUPTI's own overhead records
  Launch = 1u << 7,      // launch-side calls (launch, copy, sync, malloc) with flows to GPU work
  RuntimeAll = 1u << 8,  // every CUDA runtime call (expensive: ~1.25x step time)
  DriverAll = 1u << 9,   // every CUDA driver call (expensive: ~1.40x step time)
};

class KINETRACE_API ActivitySet {
 public:
  constexpr ActivitySet() = default;
  constexpr explicit ActivitySet(uint32_t bits) : bits_(bits) {}

  // What a session records unless told otherwise: host ranges, kernels, copies, memsets
  // and launch correlation -- what costs no more than CUPTI's own kernel records (measured
  // in bench/README.md). Sync, memory and overhead records are added on request.
  static ActivitySet defaults();
  static ActivitySet all();
  // Parses a comma-separated list of names ("host,kernel,memcpy"); "default" and "all" are
  // accepted too. Throws kinetrace::Error naming the first unknown name.
  static ActivitySet parse(std::string_view list);

  constexpr bool has(Activity a) const { return (bits_ & static_cast<uint32_t>(a)) != 0; }
  ActivitySet& add(Activity a) {
    bits_ |= static_cast<uint32_t>(a);
    return *this;
  }
  ActivitySet& remove(Activity a) {
    bits_ &= ~static_cast<uint32_t>(a);
    return *this;
  }
  constexpr bool anyGpu() const { return (bits_ & ~static_cast<uint32_t>(Activity::Host)) != 0; }
  constexpr uint32_t bits() const { return bits_; }
  std::string toString() const;
  bool operator==(const ActivitySet& other) const { return bits_ == other.bits_; }

 private:
  uint32_t bits_ = 0;
};

// When a program traced through CUDA injection (`kinetrace run`) records.
enum class CaptureRange {
  Whole,            // from CUDA initialisation (or after `delay`) to exit (or for `duration`)
  CudaProfilerApi,  // between the program's own cudaProfilerStart() and cudaProfilerStop()
  OnDemand,         // only when `kinetrace trigger` asks; nothing (not even CUPTI) until then
};

// How host timestamps are read. Auto uses the CPU's invariant time-stamp counter when it
// has one (cheapest), else CLOCK_MONOTONIC.
enum class HostClock { Auto, Tsc, Monotonic };

// How the work of a CUDA graph launch is traced.
enum class GraphTrace {
  Node,   // every kernel, copy and memset the graph ran, each linked to its launch
  Graph,  // one slice per graph launch, from its first node's start to its last node's end:
          // cheaper for graphs of many small nodes, but what ran inside is not seen
};

// Everything a session is configured with. Build it in code, from the environment, or both:
//
//   kinetrace::Config config = kinetrace::Config::fromEnvironment();
//   config.set("activities", "kernel,memcpy");   // same keys as KINETRACE_* in lower case
//
// Keys (environment variable KINETRACE_<KEY in upper case>):
//   output            where the trace is written while recording (path or URL; an existing
//                     directory gets one file per session; ".json.gz" is compressed,
//                     ".pftrace" is Perfetto's protobuf format).
//                     Empty: the trace stays in memory for Profiler::stop() to return
//   activities        comma list, see ActivitySet::parse
//   log_level         error | warning | info | debug
//   memory_mb         the cap on everything the tracer holds in a process: host event
//                     buffers, CUPTI's activity buffers and the room to decode one of
//                     them, records waiting to be assembled, names, an output's write
//                     buffer (about 1.3 MB) and, without an output, the trace itself.
//                     Reached: records are dropped and counted in the trace, never an
//                     out-of-memory. 1..1048576; a cap without room to decode a CUPTI
//                     buffer records no GPU activity and says why; one without room for
//                     an output's write buffer (memory_mb=1) refuses to start with an
//                     output. Profiler::addMetadata() entries may take an eighth of it
//   gpu_buffer_kb     size of one CUPTI activity buffer (16..1048576)
//   gpu_flush_ms      how often kinetrace asks CUPTI, from a thread of its own, for every
//                     buffer whose records are complete, full or not
//                     (cuptiActivityFlushAll(0); CUPTI's own period, set to the same, hands
//                     over full buffers only), so records never wait long for their buffer
//                     to fill; 0: never asked (buffers then wait until full). A launch waits
//                     for its record while CUPTI holds a buffer lent before the record was
//                     due, up to 10 minutes (CUPTI's flush leaves out a buffer holding an
//                     incomplete record: on a GPU never idle, until it is full)
//   clock             auto | tsc | monotonic (see HostClock); read once per process
//   cuda_graph_trace  node | graph (see GraphTrace): a graph launch's kernels, copies and
//                     memsets one by one (the default), or one slice per launch
//   gpu_metrics       GPU hardware metrics sampled over time (CUPTI's PM sampling), as
//                     counter tracks per GPU and as each kernel's averages: "default"
//                     (sm,dram,tensor,gr), a comma list of short names (sm, dram, tensor,
//                     gr, fma, dram_read, dram_write) and metrics as CUPTI names them (one
//                     hardware pass in all; `kinetrace help metrics`), or "" / "none" (the
//                     default: no sampling). A GPU or driver that refuses says why once;
//                     tracing goes on without metrics
//   gpu_metrics_interval  the sampling interval, "1ms" unless set; 1us..1s
//   gpu_metrics_buffer_mb  the buffer the GPU writes raw samples into, per GPU, in MiB
//                     (counted in memory_mb); 0, the default: sized from the interval
//                     (1 s of samples of a busy GPU, 32..512 MiB). A full one loses samples
//                     (counted in the trace) and is doubled, within memory_mb and 512 MiB
//   delay             (injection) time from the traced process's start to the recording's:
//                     "5s", "200ms", "1.5m", "90" (seconds); units ns, us, ms, s, m, h
//   duration          (injection) how long to record; "0" (the default) until exit
//   capture_range     (injection) "none" (whole run), "cudaProfilerApi" or "onDemand"
//   schedule          (injection) record by the program's steps, as torch.profiler's
//                     schedule does: "wait=1,warmup=1,active=3,repeat=2[,skip_first=N]"
//                     (repeat 0: forever); one trace per cycle. Steps are the NVTX ranges
//                     named by step_marks. Not with delay, duration or another capture_range
//   step_marks        (injection) comma list of NVTX range names that start a step: a range
//                     (push or start, any domain) whose message begins with one of them,
//                     compared without case, then anything but a letter ("step 12",
//                     "ProfilerStep#12", "Step_3"). Default "ProfilerStep#,step". Step marks
//                     drive `schedule` and `kinetrace trigger --steps`
//   run_id            (injection) a tag put in trace file names, so the files of one
//                     `kinetrace run` can be found among others ([A-Za-z0-9._-], <= 64)
//   trace_format      (injection) the files' format: "json" (the default), "json.gz" or
//                     "pftrace" (Perfetto's protobuf, its packets compressed inside
//                     the file: a few per cent of the JSON's size; open it in
//                     ui.perfetto.dev)
//
// The injection keys are read by the CUDA injection library that `kinetrace run` loads
// into a program; a Profiler created in code ignores them (its caller decides when to
// start and stop). With the injection, `output` names a directory, not a file.
struct KINETRACE_API Config {
  std::string output;
  ActivitySet activities = ActivitySet::defaults();
  LogLevel logLevel = LogLevel::Warning;
  std::size_t memoryMb = 1024;
  std::size_t gpuBufferKb = 4096;
  uint32_t gpuFlushMs = 1000;
  HostClock clock = HostClock::Auto;
  GraphTrace cudaGraphTrace = GraphTrace::Node;
  std::string gpuMetrics;  // "" or a list checked by set()
  int64_t gpuMetricsIntervalNs = 1'000'000;
  std::size_t gpuMetricsBufferMb = 0;  // 0: sized from the interval
  int64_t delayNs = 0;
  int64_t durationNs = 0;  // 0: until the program exits
  CaptureRange captureRange = CaptureRange::Whole;
  std::string runId;
  std::string traceFormat = "json";  // json | json.gz | pftrace
  std::string schedule;              // "" or a schedule, checked by set()
  std::string stepMarks = "ProfilerStep#,step";

  // The cap in bytes (memoryMb << 20).
  std::size_t memoryCapBytes() const { return memoryMb << 20; }

  // Reads every KINETRACE_* variable. A bad value throws kinetrace::Error naming the
  // variable and what it accepts; a variable that is no key (a typo, a newer kinetrace's
  // key) is reported once as a warning naming it, and otherwise ignored.
  static Config fromEnvironment();

  // Sets one key from text. Unknown key or bad value: kinetrace::Error naming both.
  void set(std::string_view key, std::string_view value);
};

}  // namespace kinetrace
