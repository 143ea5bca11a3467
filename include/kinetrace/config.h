#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  // Whether any kind a CUDA graph's nodes run (kernels, copies, memsets) is in the set: what
  // graph-level tracing (GraphTrace::Graph) replaces with one record per launch.
  constexpr bool anyGraphWork() const {
    return has(Activity::Kernel) || has(Activity::Memcpy) || has(Activity::Memset);
  }
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

// Which steps of a loop to record, counted by the program's own step marks
// (kinetrace::step()), as torch.profiler's schedule counts them: `skipFirst` steps, then
// cycles of `wait` steps (nothing), `warmup` steps (CUPTI set up, nothing recorded, so the
// recorded steps do not pay for setting it up) and `active` steps (recorded, one trace per
// cycle). `repeat` cycles, then nothing; 0 repeats forever.
struct Schedule {
  int64_t skipFirst = 0;
  int64_t wait = 0;
  int64_t warmup = 1;
  int64_t active = 1;
  int64_t repeat = 1;
};

// The format of a trace file that kinetrace names itself (Config::traceFormat): the files of
// `kinetrace run` and of an output that is a directory. A file named by its user is written
// in the format its name says (".json", ".json.gz", ".pftrace").
enum class TraceFormat : uint8_t {
  Json,
  JsonGz,
  Pftrace,  // Perfetto's protobuf format
};

// Everything a session is configured with. Build it in code, from the environment, or both:
//
//   kinetrace::Config config = kinetrace::Config::fromEnvironment();
//   config.set("activities", "kernel,memcpy");   // same keys as KINETRACE_* in lower case
//
// Keys (environment variable KINETRACE_<KEY in upper case>), what each accepts and its
// default: docs/CONFIGURATION.md, or `kinetrace help settings`; the fields below hold their
// values. memory_mb caps everything the tracer holds in a process (host event buffers,
// CUPTI's activity buffers and the room to decode one, records waiting to be assembled,
// names, an output's write buffer and, without an output, the trace itself): reached,
// records are dropped and counted in the trace, never an out-of-memory.
//
// The keys of traced processes (delay, duration, capture_range, schedule, step_marks,
// run_id, trace_format) are read by the CUDA injection library that `kinetrace run` loads
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
  std::vector<std::string> gpuMetrics;  // CUPTI's metric names, to sample in order; none: off
  int64_t gpuMetricsIntervalNs = 1'000'000;
  std::size_t gpuMetricsBufferMb = 0;  // 0: sized from the interval
  int64_t delayNs = 0;
  int64_t durationNs = 0;  // 0: until the program exits
  CaptureRange captureRange = CaptureRange::Whole;
  // A process answers dynolog only once it uses a GPU (false), or from its start (true: a
  // CPU-only workload of a CUDA build, traced on demand for its host activity).
  bool dynologAnswersAtStart = false;
  std::string runId;
  TraceFormat traceFormat = TraceFormat::Json;
  std::optional<Schedule> schedule;  // record by steps; none: not by steps
  std::vector<std::string> stepMarks = {"ProfilerStep#", "step"};

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
