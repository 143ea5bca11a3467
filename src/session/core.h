#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "host/host_recorder.h"
#include "model/memory_budget.h"

namespace kinetrace::detail {

class Session;

// The one core of a process: the host recorder, the memory budget every holder of trace
// data counts against, and which session may record. Every front-end (the C++ API, the
// CUDA injection, the libkineto-compatible API) reaches it through a Profiler, so a process
// has one recorder and one CUPTI subscriber however kinetrace was loaded.
//
// Never destroyed: thread_local buffers, atexit handlers and CUPTI callbacks reach it until
// the process is gone.
class Core {
 public:
  static Core& instance();

  HostRecorder& recorder() { return HostRecorder::instance(); }
  MemoryBudget& budget() { return budget_; }

  // Makes `session` the one that records; false while another holds the right.
  bool claimRecording(const Session* session);
  void releaseRecording(const Session* session);
  // The process this core lives in (after fork(), the child's).
  int64_t pid() const { return pid_.load(std::memory_order_relaxed); }

 private:
  Core();
  friend void coreForkChild() noexcept;

  MemoryBudget budget_;
  std::atomic<const Session*> recordingSession_{nullptr};
  std::atomic<int64_t> pid_{0};
};

}  // namespace kinetrace::detail
