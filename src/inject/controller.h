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
#include <vector>

#include "inject/capture_policy.h"
#include "kinetrace/config.h"
#include "kinetrace/profiler.h"
#include "kinetrace/schedule.h"
#include "kinetrace/trace.h"
#include "ondemand/dynolog_client.h"
#include "ondemand/trigger_window.h"
#include "runfiles/trace_naming.h"
#include "runfiles/trigger_channel.h"
#include "session/seam.h"

namespace kinetrace::inject {

using runfiles::RequestReader;
using runfiles::TraceNaming;
using runfiles::TriggerRequest;

struct ControllerOptions {
  Config config;  // KINETRACE_* settings; config.output is the trace directory ("" = cwd)
  TraceNaming naming;
  std::string processName;  // the trace's process name ("python3 train.py")
  std::string commandLine;  // recorded in the trace's metadata
  // When the process started, in CLOCK_BOOTTIME nanoseconds: `delay` counts from here.
  // 0: from begin().
  int64_t processStartBootNs = 0;
  // Makes the process's Profiler (tests substitute one with a stand-in GPU backend).
  // Empty: internal::makeProfiler.
  std::function<std::unique_ptr<Profiler>(Config, const internal::ProfilerOptions&)>
      profilerFactory;
  // Runs on the control thread after a termination signal's trace was saved. Default:
  // restore the signal's default action and raise it again, so the process ends as the
  // signal meant it to.
  std::function<void(int signal)> afterSignal;
  // How long a trigger connection may take to send its request, and how many may wait.
  RequestReader::Limits triggerLimits;
  // Set: the process is also a client of the dynolog daemon (KINETO_USE_DAEMON), which hands
  // it libkineto configs that `dyno gputrace` sent; they are judged like triggers.
  std::optional<ondemand::DynologClientOptions> dynolog;
  // Where the daemon may have traces written besides /tmp/ ($KINETO_ONDEMAND_TRACE_DIR).
  std::string onDemandDir;
};

using ondemand::TriggerWindow;

// Runs the traced process's Profiler: when to record is the capture mode's policy
// (capture_policy.h: the whole run, a delayed window, the windows between the program's own
// cudaProfilerStart/Stop calls, a step schedule, on demand), and the windows `kinetrace
// trigger` asks for once the policy lets go (through the trigger channel,
// runfiles/trigger_channel.h, which the control thread listens on in every mode: a request that
// overlaps a recording or comes while the policy waits is refused with a message), and those the
// dynolog daemon hands over when asked to (ondemand/dynolog_client.h), judged by the same rule
// (ondemand/trigger_decision.h). The controller carries out what
// the policy decides: it starts and stops the Profiler, saves and reports. Each window is
// written, while it is recorded, to a per-process name; a summary follows next to it
// ("<trace>.summary.json"); a window that recorded nothing at all leaves no file. Built on
// the public Profiler and the internal seam only.
//
// Threads: begin() and finish() from any thread (CUDA initialisation, exit()); the
// profiler-API hook from the program's threads inside CUDA calls; a control thread of its
// own runs the delay/duration timers, writes the summaries of traces the hook stopped (so
// cudaProfilerStop() does not wait for them) and handles termination signals. Nothing throws.
class Controller {
 public:
  explicit Controller(ControllerOptions options);
  // Stops the control thread (tests). The process-wide controller is never destroyed: an
  // atexit handler and CUPTI callbacks may reach it until the process is gone.
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Creates the session and starts recording now, arms the delay, or waits for
  // cudaProfilerStart(), as configured.
  void begin();
  // cudaProfilerStart() returned (start) / cudaProfilerStop() was called (!start).
  void onProfilerApi(bool start) noexcept;
  // A step mark (an NVTX range named by Config::stepMarks) starts the next step, on the
  // program's thread. Between the steps where something happens (a cycle of the schedule
  // starts or ends, a triggered window of steps starts or ends) it costs an atomic add and
  // a load.
  void onStepMark() noexcept;
  // Step marks seen so far: the step the next mark starts.
  int64_t steps() const { return steps_.load(std::memory_order_relaxed); }
  // The program is ending: stops recording, saves, and waits until every trace is written.
  // Later calls (exit after a signal) wait for the same saves and return.
  void finish() noexcept;
  // In a child made by fork(): this controller is the parent's; it must never record or save
  // here. Async-signal-safe (called from a pthread_atfork child handler).
  void abandonInForkedChild() noexcept;

  // The write end of the control thread's wake-up pipe. A signal handler writes the signal
  // number (one byte) to it; the control thread then finishes and calls afterSignal.
  int wakeFd() const { return wakeFds_[1]; }

  bool recording() const;
  // The socket `kinetrace trigger` reaches this process on; "" when there is none (and why
  // is logged).
  const std::string& triggerSocket() const { return triggerSocket_; }
  // Paths of the traces saved so far, in order.
  std::vector<std::string> savedTraces() const;
  const std::string& outputDirectory() const { return outputDir_; }

 private:
  enum class State {
    Created,
    PolicyWaits,        // before or between the capture policy's windows: it decides
    WaitingForTrigger,  // the policy let go: only a trigger records
    TriggerPending,     // a triggered window (trigger_) waits for its start time or step
    Recording,
    Done,
  };
  struct PendingSave {
    Trace trace;
    int window;
    std::string path;
    bool keepEmpty = false;  // a triggered window: its trace was asked for, empty or not
    detail::PathRule rule;   // what the trace was written under: its summary goes the same way
  };

  void controlLoop();
  int runDueTimers();  // returns ms until the next timer, -1 when none
  void handleSignal(int signal);
  // Records to `path` (the window's own name in the output directory when empty), written
  // under `rule`.
  void startLocked(const char* why, const std::string& path = "",
                   const detail::PathRule& rule = {});
  // `atStep`: the step whose mark ends the window (it is not in it); -1: not a step mark.
  void stopLocked(int64_t atStep = -1);
  // Carries out what the policy decided; `atStep`: the step mark it came at (-1: none).
  void applyLocked(const CaptureStep& step, int64_t atStep = -1);
  bool policyRecordingLocked() const { return state_ == State::Recording && !trigger_; }
  // The triggered window started, or could not (then a later trigger may try again).
  void startTriggerLocked(int64_t atStep);
  void updateNextStepEventLocked();
  const char* stateName() const;
  void drainSaves();
  void save(PendingSave& pending);
  void wake();
  void openTriggerChannel();
  void handleRequest(RequestReader::Request request);
  // A libkineto config the dynolog daemon handed over (on the client's thread).
  void handleDynologConfig(const std::string& config);
  // Whether the daemon must be told "busy": a trigger would be refused now.
  bool busyForTriggers() const;
  // Takes or refuses a request from either channel. `deliver` gives the asker the answer
  // and says whether it arrived; when it did not, the window is undone.
  void offerTriggerLocked(const TriggerRequest& request,
                          const std::function<bool(const std::string&)>& deliver);
  void undoTriggerLocked();

  ControllerOptions options_;
  std::string outputDir_;

  mutable std::mutex mutex_;  // the profiler and the state
  std::unique_ptr<Profiler> profiler_;
  State state_ = State::Created;
  int windows_ = 0;
  std::unique_ptr<CapturePolicy> policy_;
  int64_t stopAtNs_ = 0;  // CLOCK_BOOTTIME; Recording with a duration; 0 = none
  // The triggered window: pending or recording (then its end goes back to waiting).
  std::optional<TriggerWindow> trigger_;
  std::string recordingPath_;       // the window being recorded
  detail::PathRule recordingRule_;  // and the rule its files are written under
  // Steps (step marks): the schedule's cycle, and a triggered window of steps.
  int64_t recordingCycle_ = 0;    // the schedule's cycle being recorded; 0: none
  int64_t stopAtStep_ = 0;        // Recording: the step whose mark ends the window; 0 = none
  int64_t windowFirstStep_ = -1;  // the step the recording window started at; -1: not by steps
  std::atomic<int64_t> steps_{0};
  // The step whose mark needs the controller; the marks before it only count.
  std::atomic<int64_t> nextStepEvent_{INT64_MAX};

  std::atomic<bool> finishing_{false};
  std::atomic<bool> abandoned_{false};

  mutable std::mutex savesMutex_;
  std::condition_variable savesChanged_;
  std::deque<PendingSave> pending_;
  int savesInFlight_ = 0;
  std::vector<std::string> saved_;

  int wakeFds_[2] = {-1, -1};
  int triggerFd_ = -1;
  std::unique_ptr<RequestReader> requests_;  // the trigger socket's waiting connections
  std::string triggerSocket_;
  std::unique_ptr<ondemand::DynologClient> dynolog_;  // started by begin(), when asked for
  std::thread controlThread_;
};

// CLOCK_BOOTTIME now and at this process's start (from /proc/self/stat; 0 if unreadable).
int64_t bootTimeNs();
// CLOCK_REALTIME now: the clock a trigger's start time is given in (shared by a host's
// processes).
int64_t realTimeNs();
int64_t processStartBootTimeNs();

}  // namespace kinetrace::inject
