#include "inject/controller.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "inject/nvtx_injection.h"
#include "inject/nvtx_payload.h"
#include "inject/process_hooks.h"
#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "ondemand/kineto_config.h"
#include "ondemand/trigger_decision.h"
#include "runfiles/run_manifest.h"
#include "session/schedule_phase.h"
#include "support/log.h"

namespace kinetrace::inject {

using runfiles::answer;
using runfiles::appendManifest;
using runfiles::listenForTriggers;
using runfiles::ManifestEntry;
using runfiles::ManifestEvent;
using runfiles::parseRequest;
using runfiles::summaryPathFor;
using runfiles::traceFileName;
using runfiles::TriggerListener;
namespace {

using detail::Failure;
using detail::log;
using detail::Result;
using detail::Status;

// Wake-up bytes: 1..64 are signal numbers.
constexpr unsigned char kWake = 0;
constexpr unsigned char kQuit = 0xff;

// The controller the CUPTI profiler-control hook reaches (a plain C function pointer).
std::atomic<Controller*> gProfilerApiTarget{nullptr};

void profilerApiTrampoline(bool start) {
  if (Controller* controller = gProfilerApiTarget.load(std::memory_order_acquire)) {
    controller->onProfilerApi(start);
  }
}

// The controller NVTX step marks reach (nvtx_injection.h).
std::atomic<Controller*> gStepMarkTarget{nullptr};

void stepMarkTrampoline() noexcept {
  if (Controller* controller = gStepMarkTarget.load(std::memory_order_acquire)) {
    controller->onStepMark();
  }
}

constexpr int64_t kNoStepEvent = INT64_MAX;

bool isAbsolute(const std::string& path) {
  return !path.empty() && path[0] == '/';
}

std::string currentDirectory() {
  std::string buffer(4096, '\0');
  if (::getcwd(buffer.data(), buffer.size()) == nullptr) return ".";
  buffer.resize(std::strlen(buffer.c_str()));
  return buffer;
}

// Tells `kinetrace run` what became of this process's recording (runfiles/run_manifest.h); the
// message is `context` + `why`. Without a run id no command is waiting to read it.
void noteOutcome(const ControllerOptions& options, const std::string& dir, ManifestEvent event,
                 int window, std::string_view path = {}, std::string_view context = {},
                 std::string_view why = {}) noexcept {
  if (options.config.runId.empty()) return;
  try {
    ManifestEntry entry{event, options.naming.pid, window, std::string(path),
                        std::string(context) + std::string(why)};
    appendManifest(dir, options.config.runId, entry);
  } catch (...) {
    // Out of memory copying the entry: the report will lack this outcome.
  }
}

}  // namespace

int64_t bootTimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t realTimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t processStartBootTimeNs() {
  // Field 22 of /proc/self/stat: start time in clock ticks after boot. The command name
  // (field 2) may hold spaces and parentheses, so fields are counted after its last ')'.
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 22) {
      long ticksPerSecond = ::sysconf(_SC_CLK_TCK);
      if (ticksPerSecond <= 0) return 0;
      return static_cast<int64_t>(std::stoull(field) *
                                  (1000000000ull / static_cast<uint64_t>(ticksPerSecond)));
    }
  }
  return 0;
}

Controller::Controller(ControllerOptions options) : options_(std::move(options)) {
  if (::pipe2(wakeFds_, O_CLOEXEC | O_NONBLOCK) != 0) wakeFds_[0] = wakeFds_[1] = -1;
}

Controller::~Controller() {
  finish();
  if (controlThread_.joinable()) {
    unsigned char quit = kQuit;
    if (::write(wakeFds_[1], &quit, 1) != 1) {
      // The pipe is full of wake-ups; the thread drains it and sees the quit on a retry.
    }
    controlThread_.join();
  }
  for (int fd : wakeFds_) {
    if (fd >= 0) ::close(fd);
  }
  if (triggerFd_ >= 0) ::close(triggerFd_);
}

// The control thread listens for `kinetrace trigger` in every mode; without the channel the
// process is traced as configured and cannot be triggered.
void Controller::openTriggerChannel() {
  Result<TriggerListener> listener = listenForTriggers(options_.config.runId, options_.naming.pid);
  if (listener.ok()) {
    triggerFd_ = listener.value().fd;
    triggerSocket_ = listener.value().path;
    requests_ = std::make_unique<RequestReader>(triggerFd_, options_.triggerLimits);
    return;
  }
  const std::string& why = listener.why();
  triggerSocket_.clear();
  const bool onDemand = options_.config.captureRange == CaptureRange::OnDemand;
  log(onDemand ? LogLevel::Error : LogLevel::Info,
      "kinetrace trigger cannot reach this process: {}", why);
  // On demand, nothing will ever be recorded: the report says why, not "no CUDA call".
  if (onDemand) {
    noteOutcome(options_, outputDir_, ManifestEvent::TracingOff, 0, "",
                "on demand, but kinetrace trigger cannot reach it: ", why);
  }
}

void Controller::begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ != State::Created) return;
  const Config& config = options_.config;
  detail::setLogLevel(config.logLevel);

  outputDir_ = config.output.empty() ? currentDirectory() : config.output;
  if (!isAbsolute(outputDir_)) outputDir_ = currentDirectory() + "/" + outputDir_;
  while (outputDir_.size() > 1 && outputDir_.back() == '/') outputDir_.pop_back();
  detail::PathRule making;
  making.createDirectories = true;
  if (Result<detail::OpenDirectory> dir = detail::openDirectory(outputDir_, making); !dir.ok()) {
    log(LogLevel::Error, "traces cannot be written to {}: {}", outputDir_, dir.why());
  }

  options_.naming.format = config.traceFormat;
  Config profilerConfig = config;
  profilerConfig.output.clear();  // the controller names each window's file itself
  try {
    policy_ = makeCapturePolicy(config, options_.processStartBootNs);
    internal::ProfilerOptions profilerOptions;
    profilerOptions.insideDriverInit = true;  // InitializeInjection runs inside cuInit
    profilerOptions.processName = options_.processName;
    if (policy_->usesProfilerApi()) {
      gProfilerApiTarget.store(this, std::memory_order_release);
      profilerOptions.profilerControl = &profilerApiTrampoline;
    }
    profiler_ = options_.profilerFactory ? options_.profilerFactory(profilerConfig, profilerOptions)
                                         : internal::makeProfiler(profilerConfig, profilerOptions);
    if (!options_.commandLine.empty())
      profiler_->addMetadata("kinetrace_command_line", options_.commandLine);
    if (!config.runId.empty()) profiler_->addMetadata("kinetrace_run_id", config.runId);
    profiler_->addMetadata("kinetrace_capture", policy_->name());

    const bool timed = config.delayNs > 0 || config.durationNs > 0;
    if (config.schedule) {
      if (timed || config.captureRange != CaptureRange::Whole) {
        log(LogLevel::Warning,
            "delay, duration and capture_range are ignored with a schedule (steps decide)");
      }
      profiler_->addMetadata("kinetrace_schedule", detail::formatSchedule(*config.schedule));
    } else if (policy_->usesProfilerApi() && timed) {
      log(LogLevel::Warning, "delay and duration are ignored with capture_range=cudaProfilerApi");
    } else if (config.captureRange == CaptureRange::OnDemand && timed) {
      log(LogLevel::Warning, "delay and duration are ignored on demand (the trigger says)");
    }
    state_ = State::PolicyWaits;
    CaptureStep first = policy_->begin(bootTimeNs());
    if (first.prepare) {
      // With cudaProfilerApi: subscribes to CUPTI now, so the program's cudaProfilerStart()
      // reaches us; nothing is collected until then. A failure here turns tracing off.
      profiler_->prepare();
      first.prepare = false;
    }
    applyLocked(first);
  } catch (const std::exception& error) {
    log(LogLevel::Error, "tracing is off for this process: {}", error.what());
    noteOutcome(options_, outputDir_, ManifestEvent::TracingOff, 0, "", "", error.what());
    state_ = State::Done;
  }
  log(LogLevel::Debug, "controller for pid {} ready ({}); traces go to {}", options_.naming.pid,
      policy_ ? policy_->name() : "no policy", outputDir_);
  if (state_ != State::Done) {
    // Step marks are followed in every mode: a trigger may ask for steps at any time.
    updateNextStepEventLocked();
    gStepMarkTarget.store(this, std::memory_order_release);
    try {
      setStepMarks(config.stepMarks, &stepMarkTrampoline);
    } catch (const std::exception& error) {
      log(LogLevel::Warning, "step marks are not followed: {}", error.what());
    }
    // A program that links kinetrace marks its steps with kinetrace::step() instead.
    internal::setStepListener(&stepMarkTrampoline);
  }
  if (state_ != State::Done && options_.dynolog) {
    // Its thread only polls the daemon; what it hands over takes the lock like a trigger.
    dynolog_ = std::make_unique<ondemand::DynologClient>(
        *options_.dynolog, [this] { return busyForTriggers(); },
        [this](const std::string& text) { handleDynologConfig(text); });
    log(LogLevel::Debug, "dynolog: polling the daemon every {} s as job {}",
        options_.dynolog->intervalSeconds, options_.dynolog->identity.jobId);
  }
  if (wakeFds_[0] >= 0) {
    if (state_ != State::Done) openTriggerChannel();
    controlThread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "kinetrace-ctl");  // visible in top -H
      controlLoop();
    });
  }
}

void Controller::startLocked(const char* why, const std::string& requestedPath,
                             const detail::PathRule& rule) {
  const int window = windows_ + 1;
  const std::string path = requestedPath.empty()
                               ? outputDir_ + "/" + traceFileName(options_.naming, window)
                               : requestedPath;
  try {
    profiler_->addMetadata("kinetrace_window", static_cast<int64_t>(window));
    internal::startUnder(*profiler_, path, rule);
  } catch (const std::exception& error) {
    log(LogLevel::Error, "recording could not start: {}", error.what());
    noteOutcome(options_, outputDir_, ManifestEvent::TracingOff, windows_ + 1, "",
                "recording could not start: ", error.what());
    state_ = State::Done;
    return;
  }
  windows_ = window;
  state_ = State::Recording;
  recordingPath_ = path;
  recordingRule_ = rule;
  stopAtNs_ = 0;  // the caller says when the window ends
  log(LogLevel::Info, "recording window {} started: {}", windows_, why);
}

void Controller::stopLocked(int64_t atStep) {
  try {
    // What NVTX sent, up to now: a trace without NVTX ranges then says whether the program
    // made no NVTX calls or made them outside the window.
    // And what its payload extension gave: schemas kept, registrations refused, payloads
    // naming no known schema (their events are recorded without arguments).
    const NvtxCounts nvtx = nvtxCounts();
    const NvtxPayloadCounts payloads = nvtxPayloadCounts();
    profiler_->addMetadata("kinetrace_nvtx",
                           Value::object({{"instances", nvtx.instances},
                                          {"calls", nvtx.calls},
                                          {"recorded", nvtx.recorded},
                                          {"payload_schemas", payloads.schemas},
                                          {"payload_registrations_refused", payloads.refused},
                                          {"payloads_undecoded", payloads.undecoded}}));
    if (windowFirstStep_ >= 0) {
      // The steps whose marks fell inside the window: when it did not end at a step mark
      // (exit, a signal), the last of them may be cut short.
      const int64_t end = atStep >= 0 ? atStep : steps_.load(std::memory_order_relaxed);
      profiler_->addMetadata("kinetrace_steps", Value::object({{"first", windowFirstStep_},
                                                               {"count", end - windowFirstStep_},
                                                               {"cycle", recordingCycle_}}));
    }
    Trace trace = profiler_->stop();
    std::lock_guard<std::mutex> lock(savesMutex_);
    pending_.push_back(
        PendingSave{std::move(trace), windows_, "", trigger_.has_value(), recordingRule_});
  } catch (const std::exception& error) {
    log(LogLevel::Error, "recording could not stop cleanly: {}", error.what());
    noteOutcome(options_, outputDir_, ManifestEvent::SaveFailed, windows_, "",
                "recording could not stop cleanly: ", error.what());
  }
  stopAtNs_ = 0;
  stopAtStep_ = 0;
  windowFirstStep_ = -1;
  recordingCycle_ = 0;
}

void Controller::onProfilerApi(bool start) noexcept {
  // Exiting: the exit path holds the session and may be waiting for the GPU; a program thread
  // still calling cudaProfilerStart/Stop must not wait for it inside a CUDA call.
  if (finishing_.load() || abandoned_.load()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!policy_ || (state_ != State::PolicyWaits && !policyRecordingLocked())) return;
  // A window it stops is written by the control thread: cudaProfilerStop() returns now.
  applyLocked(policy_->onProfilerApi(start, policyRecordingLocked(), bootTimeNs()));
}

void Controller::onStepMark() noexcept {
  const int64_t step = steps_.fetch_add(1, std::memory_order_relaxed);
  if (step < nextStepEvent_.load(std::memory_order_relaxed)) return;
  // Exiting: as in onProfilerApi, a program thread must not wait for the exit path.
  if (finishing_.load() || abandoned_.load()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (policy_ && policy_->followsSteps() &&
      (state_ == State::PolicyWaits || policyRecordingLocked())) {
    applyLocked(policy_->onStep(step, policyRecordingLocked()), step);
  } else if (state_ == State::TriggerPending && trigger_->dueAtStep(step)) {
    startTriggerLocked(step);
  } else if (state_ == State::Recording && stopAtStep_ != 0 && step >= stopAtStep_) {
    stopLocked(step);
    state_ = State::WaitingForTrigger;
    trigger_.reset();
    wake();  // the control thread writes the file; the program's step goes on now
  }
  updateNextStepEventLocked();
}

void Controller::applyLocked(const CaptureStep& step, int64_t atStep) {
  if (step.stop && policyRecordingLocked()) {
    stopLocked(atStep);
    state_ = State::PolicyWaits;
    wake();  // the control thread writes the file; the program goes on now
  }
  if (step.prepare && state_ != State::Recording) {
    try {
      profiler_->prepare();  // once subscribed, CUPTI stays so: later calls are cheap
    } catch (const std::exception& error) {
      log(LogLevel::Warning, "{}: could not set up GPU recording ahead: {}", policy_->name(),
          error.what());
    }
  }
  if (step.start && state_ == State::PolicyWaits) {
    startLocked(step.why);
    if (state_ == State::Recording) {
      stopAtNs_ = step.stopAtNs;
      windowFirstStep_ = step.firstStep;
      recordingCycle_ = step.cycle;
    } else {
      // Not started (logged): the policy may try again at its next window, or tracing is off.
      state_ = policy_->startFailed() ? State::PolicyWaits : State::Done;
    }
  }
  if (step.released && state_ == State::PolicyWaits) {
    state_ = State::WaitingForTrigger;
    // On demand lets go at once: nothing has ended then.
    if (atStep >= 0) {
      log(LogLevel::Info,
          "{}: the last window ended at step {}; from now on the process records when triggered",
          policy_->name(), atStep);
    }
  }
  updateNextStepEventLocked();
}

// Which step's mark must take the lock: every one while a schedule runs, the first or last
// step of a triggered window of steps, none otherwise.
void Controller::updateNextStepEventLocked() {
  int64_t next = kNoStepEvent;
  if (policy_ && policy_->followsSteps() &&
      (state_ == State::PolicyWaits || policyRecordingLocked())) {
    next = 0;
  } else if (state_ == State::TriggerPending && trigger_->bySteps()) {
    next = trigger_->startStep();
  } else if (state_ == State::Recording && stopAtStep_ != 0) {
    next = stopAtStep_;
  }
  nextStepEvent_.store(next, std::memory_order_relaxed);
}

const char* Controller::stateName() const {
  switch (state_) {
    case State::Created:
      return "created";
    case State::PolicyWaits:
      return policy_->waitingState();
    case State::WaitingForTrigger:
      return "idle";
    case State::TriggerPending:
      return "triggered";
    case State::Recording:
      return "recording";
    case State::Done:
      return "done";
  }
  return "unknown";
}

void Controller::finish() noexcept {
  if (abandoned_.load()) return;
  finishing_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == State::Recording) stopLocked();
    if (state_ == State::TriggerPending && trigger_->bySteps()) {
      log(LogLevel::Warning,
          "the triggered window of {} steps never started: step {} was not reached ({} step "
          "marks seen; NVTX ranges named {})",
          trigger_->steps(), trigger_->startStep(), steps_.load(),
          fmt::join(options_.config.stepMarks, ","));
    }
    state_ = State::Done;
    // The hook may still be called (CUPTI stays subscribed until the process ends); with no
    // target it does nothing.
    Controller* self = this;
    gProfilerApiTarget.compare_exchange_strong(self, nullptr);
    self = this;
    gStepMarkTarget.compare_exchange_strong(self, nullptr);
    nextStepEvent_.store(kNoStepEvent, std::memory_order_relaxed);
    if (!triggerSocket_.empty()) ::unlink(triggerSocket_.c_str());
  }
  // Outside the lock: the client's thread may be waiting for it to hand over a config.
  if (dynolog_) dynolog_->stop();
  drainSaves();
}

void Controller::abandonInForkedChild() noexcept {
  abandoned_.store(true);
  finishing_.store(true);
  // The core's own fork handler has already stopped recording in the child and dropped
  // the parent's events; the child's copy of the profiler knows it is not its process's.
  for (int& fd : wakeFds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  // The socket and its connections are the parent's: closed here, never removed or answered.
  if (requests_) requests_->abandon();
  if (triggerFd_ >= 0) ::close(triggerFd_);
  triggerFd_ = -1;
  if (dynolog_) dynolog_->abandonInForkedChild();
  // The parent's control thread does not exist here; its std::thread object must never be
  // joined or destroyed (the controller is never destroyed in the injected process).
}

bool Controller::recording() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_ == State::Recording;
}

std::vector<std::string> Controller::savedTraces() const {
  std::lock_guard<std::mutex> lock(savesMutex_);
  return saved_;
}

void Controller::wake() {
  unsigned char byte = kWake;
  // A full pipe already holds a wake-up: nothing is lost when this write fails.
  if (wakeFds_[1] >= 0 && ::write(wakeFds_[1], &byte, 1) < 0) return;
}

int Controller::runDueTimers() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = bootTimeNs();
  if (state_ == State::PolicyWaits && policy_->nextTimerNs() != 0 &&
      now >= policy_->nextTimerNs()) {
    applyLocked(policy_->onTimer(now));
  }
  if (state_ == State::TriggerPending && trigger_->dueAtTime(now)) startTriggerLocked(-1);
  if (state_ == State::Recording && stopAtNs_ != 0 && now >= stopAtNs_) {
    stopLocked();
    // The configured window (or a triggered one) is over: only a trigger records again.
    state_ = State::WaitingForTrigger;
    trigger_.reset();
    updateNextStepEventLocked();
  }
  int64_t next = 0;
  if (state_ == State::PolicyWaits) next = policy_->nextTimerNs();
  if (state_ == State::TriggerPending && !trigger_->bySteps()) next = trigger_->startAtNs();
  if (state_ == State::Recording && stopAtNs_ != 0) next = stopAtNs_;
  if (next == 0) return -1;
  return static_cast<int>(
      std::min<int64_t>(saturatingAdd(next - now, 999999) / 1000000, 60 * 60 * 1000));
}

void Controller::controlLoop() {
  std::vector<pollfd> waits;
  while (true) {
    int timeoutMs = runDueTimers();
    drainSaves();
    waits.assign(1, pollfd{wakeFds_[0], POLLIN, 0});
    if (requests_) {
      requests_->addPollFds(&waits);
      const int64_t deadline = requests_->nextDeadlineNs();
      if (deadline != INT64_MAX) {
        const int64_t untilMs = std::max<int64_t>(0, (deadline - bootTimeNs() + 999999) / 1000000);
        if (timeoutMs < 0 || untilMs < timeoutMs) timeoutMs = static_cast<int>(untilMs);
      }
    }
    const int ready = ::poll(waits.data(), waits.size(), timeoutMs);
    if (ready < 0 && errno != EINTR) return;
    // Signals and quitting first; no request is ever waited for, so they act at once.
    if (ready > 0 && (waits[0].revents & POLLIN) != 0) {
      unsigned char bytes[64];
      const ssize_t count = ::read(wakeFds_[0], bytes, sizeof bytes);
      for (ssize_t i = 0; i < count; ++i) {
        if (bytes[i] == kQuit) return;
        if (bytes[i] != kWake) handleSignal(bytes[i]);
      }
    }
    if (requests_) {
      for (RequestReader::Request& request : requests_->service(bootTimeNs())) {
        handleRequest(std::move(request));
      }
    }
  }
}

void Controller::handleRequest(RequestReader::Request received) {
  const int fd = received.fd;
  if (!received.peerAllowed) {
    answer(fd, "refused only the process's owner may trigger it");
    return;
  }
  const Result<TriggerRequest> parsed = parseRequest(received.line);
  if (!parsed.ok()) {
    answer(fd, "refused " + parsed.why());
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (parsed.value().verb == TriggerRequest::Verb::Status) {
    answer(fd, fmt::format("ok step={} state={}", steps_.load(std::memory_order_relaxed),
                           finishing_.load() ? "done" : stateName()));
    return;
  }
  offerTriggerLocked(parsed.value(), [fd](const std::string& line) { return answer(fd, line); });
}

void Controller::handleDynologConfig(const std::string& config) {
  const std::optional<TriggerRequest> request =
      ondemand::requestFromDaemon(config, options_.naming.pid, options_.onDemandDir);
  if (!request) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // No one waits for an answer: the daemon has none to hear. The process's log says it.
  offerTriggerLocked(*request, [](const std::string& line) {
    if (line.rfind("ok ", 0) == 0) {
      log(LogLevel::Info, "dynolog's request taken: {}", line.substr(3));
    } else {
      // "refused WHY", as a trigger's answer: said the way libkineto_api's log says it.
      const bool refused = line.rfind("refused ", 0) == 0;
      log(LogLevel::Warning, "dynolog's request refused: {}", refused ? line.substr(8) : line);
    }
    return true;
  });
}

bool Controller::busyForTriggers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finishing_.load() || state_ != State::WaitingForTrigger;
}

void Controller::offerTriggerLocked(const TriggerRequest& request,
                                    const std::function<bool(const std::string&)>& deliver) {
  ondemand::ProcessState now;
  now.ending = finishing_.load() || state_ == State::Done || state_ == State::Created;
  now.recording = state_ == State::Recording;
  now.window = windows_;
  now.recordingPath = recordingPath_;
  now.recordsUntilExit = stopAtNs_ == 0 && stopAtStep_ == 0;
  if (state_ == State::TriggerPending) now.pendingPath = trigger_->path();
  if (state_ == State::PolicyWaits) now.heldBy = policy_->refusal();
  if (const std::optional<std::string> refusal = ondemand::refusalNow(now)) {
    deliver("refused " + *refusal);
    return;
  }
  const int window = windows_ + 1;
  const std::string path =
      ondemand::triggeredPath(request.output, outputDir_, traceFileName(options_.naming, window));
  const int64_t nowBootNs = bootTimeNs();
  const int64_t nextStep = steps_.load(std::memory_order_relaxed);
  TriggerWindow asked(request, path, nowBootNs, realTimeNs(), nextStep);
  if (std::optional<std::string> tooFar = ondemand::whyStartTooFar(asked, nowBootNs, nextStep)) {
    deliver("refused " + *tooFar);
    return;
  }
  if (Status usable = ondemand::prepareOutput(path, request.outputRule); !usable.ok()) {
    deliver("refused the trace cannot be written to " + path + ": " + usable.why());
    return;
  }
  trigger_.emplace(std::move(asked));
  state_ = State::TriggerPending;
  updateNextStepEventLocked();
  wake();  // a window of a duration is timed by the control thread
  const std::string noSteps =
      fmt::format("no step marks seen yet: NVTX ranges named {}, or kinetrace::step() calls",
                  fmt::join(options_.config.stepMarks, ","));
  if (!deliver(
          ondemand::acceptedAnswer(*trigger_, steps_.load(std::memory_order_relaxed), noSteps))) {
    undoTriggerLocked();
    return;
  }
  if (trigger_->bySteps()) {
    log(LogLevel::Info, "triggered ({}): window {} records {} steps from step {} to {}",
        request.origin, window, trigger_->steps(), trigger_->startStep(), path);
  } else {
    log(LogLevel::Info, "triggered ({}): window {} records {} ms to {}", request.origin, window,
        trigger_->durationNs() / 1000000, path);
  }
}

// The client asking for the window left before it heard "ok" (and told its user there was no
// answer): the window, not yet started (the lock is held), is not recorded.
void Controller::undoTriggerLocked() {
  log(LogLevel::Warning,
      "a trigger's client left before its answer; its window ({}) is not recorded",
      trigger_->path());
  state_ = State::WaitingForTrigger;
  trigger_.reset();
  updateNextStepEventLocked();
}

void Controller::startTriggerLocked(int64_t atStep) {
  try {
    profiler_->addMetadata("kinetrace_trigger", ondemand::triggerMetadata(*trigger_));
  } catch (const std::exception& error) {
    log(LogLevel::Warning, "the trigger's metadata is not recorded: {}", error.what());
  }
  startLocked(trigger_->request().origin == "dynolog" ? "dynolog" : "kinetrace trigger",
              trigger_->path(), trigger_->request().outputRule);
  if (state_ != State::Recording) {
    // It could not start (logged): the next trigger may try again.
    state_ = State::WaitingForTrigger;
    trigger_.reset();
    return;
  }
  if (trigger_->bySteps()) {
    stopAtNs_ = 0;  // steps end this window, never a duration
    stopAtStep_ = trigger_->endAtStep(atStep);
    windowFirstStep_ = atStep;
  } else {
    stopAtNs_ = trigger_->endAtNs(bootTimeNs());
  }
}

void Controller::handleSignal(int signal) {
  log(LogLevel::Info, "signal {}: saving the trace before the process ends", signal);
  finish();
  if (options_.afterSignal) {
    options_.afterSignal(signal);
  } else {
    reraiseWithDefaultAction(signal);
  }
}

void Controller::drainSaves() {
  std::unique_lock<std::mutex> lock(savesMutex_);
  while (true) {
    // One save at a time, in window order: the manifest then lists windows as they ended,
    // even when the control thread and an exiting thread drain together.
    if (!pending_.empty() && savesInFlight_ == 0) {
      PendingSave next = std::move(pending_.front());
      pending_.pop_front();
      ++savesInFlight_;
      lock.unlock();
      save(next);
      lock.lock();
      --savesInFlight_;
      savesChanged_.notify_all();
      continue;
    }
    if (pending_.empty() && savesInFlight_ == 0) return;
    // Another thread is writing a trace: finish() returns only once every trace is on disk.
    savesChanged_.wait(lock);
  }
}

namespace {

// A process that initialised CUDA but did nothing with it (torchrun's agent, a tool that
// only counts devices) would otherwise leave an empty trace beside the real ones.
bool recordedNothing(const TraceStats& s) {
  return s.gpuKernels == 0 && s.gpuMemcpys == 0 && s.gpuMemsets == 0 && s.gpuGraphs == 0 &&
         s.gpuSyncs == 0 && s.gpuMemoryEvents == 0 && s.apiCalls == 0 && s.hostRanges == 0 &&
         s.hostInstants == 0 && s.counterSamples == 0;
}

}  // namespace

void Controller::save(PendingSave& pending) {
  const Trace& trace = pending.trace;
  const std::string& path = trace.outputPath();
  if (!trace.saveError().empty()) {
    log(LogLevel::Error, "the trace of window {} could not be written to {}: {}", pending.window,
        path, trace.saveError());
    noteOutcome(options_, outputDir_, ManifestEvent::SaveFailed, pending.window, path, "",
                trace.saveError());
    return;
  }
  if (!pending.keepEmpty && recordedNothing(trace.stats())) {
    log(LogLevel::Info, "window {} recorded no activity: no trace written", pending.window);
    if (!path.empty()) {
      if (Status removed = detail::removeOutput(path, pending.rule); !removed.ok()) {
        log(LogLevel::Warning, "the empty trace of window {} stays: {}", pending.window,
            removed.why());
      }
    }
    noteOutcome(options_, outputDir_, ManifestEvent::NothingRecorded, pending.window);
    return;
  }
  try {
    // The summary follows its trace, so a summary never names a trace that is not there.
    internal::writeFileAtomically(summaryPathFor(path), internal::summaryJson(trace, path),
                                  pending.rule);
    noteOutcome(options_, outputDir_, ManifestEvent::Saved, pending.window, path);
    std::lock_guard<std::mutex> lock(savesMutex_);
    saved_.push_back(path);
    log(LogLevel::Info, "trace written to {}", path);
  } catch (const std::exception& error) {
    log(LogLevel::Error, "the summary of window {} could not be saved: {}", pending.window,
        error.what());
    noteOutcome(options_, outputDir_, ManifestEvent::SaveFailed, pending.window, path, "",
                error.what());
  }
}

}  // namespace kinetrace::inject
