#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "ActivityTraceInterface.h"
#include "ClientInterface.h"
#include "activity_trace.h"
#include "ondemand/dynolog_client.h"
#include "ondemand/trigger_window.h"

namespace kinetrace::kineto {

class ActivityProfiler;

// libkineto's on-demand tracing on kinetrace: with KINETO_USE_DAEMON set, the process polls
// the dynolog daemon (ondemand/dynolog_client.h) and records the windows `dyno gputrace` asks
// for, judged by the rule `kinetrace trigger` uses (ondemand/trigger_decision.h). It drives
// the framework's registered client as libkineto does: prepare() with what the request asks
// (input shapes, memory, stack, flops, modules), start() once recording, stop() before the
// trace is taken, so PyTorch's ops reach the trace through transferCpuTrace().
//
// A window of a duration starts and ends on this driver's thread; a window of steps on the
// thread that calls the framework's step() (as libkineto's), at the step boundary. Traces
// are written on the driver's thread, so a step that ends a window returns before the file
// is written. While the program's own torch.profiler records, requests are refused (busy).
//
// Threads: the dynolog client's (configs), the driver's (times, saves), and the framework's
// (onStep). No lock is held while the framework's client runs: it may need the Python
// interpreter, which the stepping thread holds.
class OnDemand {
 public:
  using ClientLookup = std::function<libkineto::ClientInterface*()>;

  // `dynolog`: how to reach the daemon; nothing: no daemon client (tests offer configs with
  // handleConfig). `onDemandDir`: $KINETO_ONDEMAND_TRACE_DIR.
  OnDemand(ActivityProfiler& profiler, ClientLookup client,
           std::optional<ondemand::DynologClientOptions> dynolog, std::string onDemandDir,
           int64_t pid);
  ~OnDemand();
  OnDemand(const OnDemand&) = delete;
  OnDemand& operator=(const OnDemand&) = delete;

  // A config the daemon handed over: taken (logged "taken") or refused (logged with why).
  void handleConfig(const std::string& config);
  // The framework's step(): a relaxed add, and the lock only at a window's first or last step.
  void onStep() noexcept;
  // Steps seen so far.
  int64_t steps() const { return steps_.load(std::memory_order_relaxed); }
  // Whether the daemon must be told "busy".
  bool busy();
  // Waits until every taken window has ended and been written, or `timeoutMs` passed; true
  // when none is left (tests, and the exit path).
  bool waitUntilIdle(int timeoutMs);
  // The process exits: stops polling and the driver's thread; a window still recording is
  // dropped with a message (the framework is being torn down and cannot be asked to stop).
  void shutDown() noexcept;
  // In a child made by fork() (a DataLoader worker): the threads are the parent's and do not
  // exist here; from now on nothing is polled, recorded or joined. Async-signal-safe.
  void abandonInForkedChild() noexcept;

 private:
  enum class State { Idle, Pending, Starting, Recording, Stopping, Off };
  struct Save {
    std::unique_ptr<ActivityTrace> trace;
    std::string path;
    detail::PathRule rule;  // the request's: where the trace may be written
  };

  void run();
  // Starts the pending window (the lock is not held; the state is Starting).
  void startWindow(int64_t atStep);
  // Ends the recording window and queues its trace (the state is Stopping).
  void endWindow(int64_t atStep);
  void updateNextStepEventLocked();
  void write(Save& save);

  ActivityProfiler& profiler_;
  ClientLookup client_;
  std::string onDemandDir_;
  int64_t pid_;

  std::mutex mutex_;
  std::condition_variable changed_;
  State state_ = State::Idle;
  std::optional<ondemand::TriggerWindow> window_;
  int windows_ = 0;         // windows started so far
  int64_t stopAtNs_ = 0;    // Recording by time: when it ends (CLOCK_BOOTTIME)
  int64_t stopAtStep_ = 0;  // Recording by steps: the step that ends it
  int64_t firstStep_ = -1;
  std::deque<Save> saves_;
  bool writing_ = false;  // a trace taken off saves_ is being written
  bool quit_ = false;
  std::atomic<bool> abandoned_{false};  // a forked child's copy

  std::atomic<int64_t> steps_{0};
  std::atomic<int64_t> nextStepEvent_{INT64_MAX};

  std::thread thread_;
  std::unique_ptr<ondemand::DynologClient> dynolog_;  // last: its callbacks use the above
};

}  // namespace kinetrace::kineto
