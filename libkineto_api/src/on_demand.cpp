#include "on_demand.h"

#include <fmt/format.h>
#include <pthread.h>
#include <time.h>

#include <exception>

#include "activity_profiler.h"
#include "ondemand/kineto_config.h"
#include "ondemand/trigger_decision.h"
#include "support/log.h"

namespace kinetrace::kineto {

using detail::log;

namespace {

constexpr int64_t kNoStepEvent = INT64_MAX;

int64_t clockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

OnDemand::OnDemand(ActivityProfiler& profiler, ClientLookup client,
                   std::optional<ondemand::DynologClientOptions> dynolog, std::string onDemandDir,
                   int64_t pid)
    : profiler_(profiler),
      client_(std::move(client)),
      onDemandDir_(std::move(onDemandDir)),
      pid_(pid) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "kinetrace-odm");  // visible in top -H
    run();
  });
  if (dynolog) {
    dynolog_ = std::make_unique<ondemand::DynologClient>(
        *dynolog, [this] { return busy(); },
        [this](const std::string& config) { handleConfig(config); });
  }
}

OnDemand::~OnDemand() {
  shutDown();
}

bool OnDemand::busy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ != State::Idle) return true;
  }
  return profiler_.isActive();  // the program's own torch.profiler
}

void OnDemand::handleConfig(const std::string& config) {
  if (abandoned_.load()) return;
  const std::optional<ondemand::TriggerRequest> asked =
      ondemand::requestFromDaemon(config, pid_, onDemandDir_);
  if (!asked) return;
  const ondemand::TriggerRequest& request = *asked;
  std::lock_guard<std::mutex> lock(mutex_);
  ondemand::ProcessState now;
  now.ending = quit_ || state_ == State::Off;
  now.recording = state_ == State::Recording || state_ == State::Starting;
  if (window_) {
    now.window = windows_ + (state_ == State::Starting ? 1 : 0);
    now.recordingPath = window_->path();
    if (state_ == State::Pending) now.pendingPath = window_->path();
  }
  if (state_ == State::Stopping) now.heldBy = "the last on-demand trace is being taken";
  if (profiler_.isActive() && state_ == State::Idle) {
    now.heldBy = "the program's own torch.profiler is recording";
  }
  if (const std::optional<std::string> refusal = ondemand::refusalNow(now)) {
    log(LogLevel::Warning, "dynolog's request refused: {}", *refusal);
    return;
  }
  const std::string path = ondemand::triggeredPath(
      request.output, "/tmp", "libkineto_activities_" + std::to_string(pid_) + ".json");
  const int64_t nowBootNs = clockNs(CLOCK_BOOTTIME);
  const int64_t nextStep = steps_.load(std::memory_order_relaxed);
  ondemand::TriggerWindow window(request, path, nowBootNs, clockNs(CLOCK_REALTIME), nextStep);
  if (std::optional<std::string> tooFar = ondemand::whyStartTooFar(window, nowBootNs, nextStep)) {
    log(LogLevel::Warning, "dynolog's request refused: {}", *tooFar);
    return;
  }
  if (detail::Status usable = ondemand::prepareOutput(path, request.outputRule); !usable.ok()) {
    log(LogLevel::Warning, "dynolog's request refused: the trace cannot be written to {}: {}", path,
        usable.why());
    return;
  }
  window_.emplace(std::move(window));
  state_ = State::Pending;
  updateNextStepEventLocked();
  changed_.notify_all();
  log(LogLevel::Info, "dynolog's request taken: {}",
      ondemand::acceptedAnswer(*window_, steps_.load(std::memory_order_relaxed),
                               "the framework has not called step() yet")
          .substr(3));
}

void OnDemand::onStep() noexcept {
  const int64_t step = steps_.fetch_add(1, std::memory_order_relaxed);
  if (step < nextStepEvent_.load(std::memory_order_relaxed)) return;
  bool start = false;
  bool end = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == State::Pending && window_->dueAtStep(step)) {
      state_ = State::Starting;
      start = true;
    } else if (state_ == State::Recording && stopAtStep_ != 0 && step >= stopAtStep_) {
      state_ = State::Stopping;
      end = true;
    }
    // Until the window has started or ended, no other step needs the lock.
    if (start || end) {
      nextStepEvent_.store(kNoStepEvent, std::memory_order_relaxed);
    } else {
      updateNextStepEventLocked();
    }
  }
  // On the stepping thread, as libkineto does: the window holds whole steps.
  if (start) startWindow(step);
  if (end) endWindow(step);
}

void OnDemand::updateNextStepEventLocked() {
  int64_t next = kNoStepEvent;
  if (state_ == State::Pending && window_->bySteps()) next = window_->startStep();
  if (state_ == State::Recording && stopAtStep_ != 0) next = stopAtStep_;
  nextStepEvent_.store(next, std::memory_order_relaxed);
}

void OnDemand::startWindow(int64_t atStep) {
  const ondemand::TriggerWindow window = *window_;  // Starting: only this thread changes it
  libkineto::ClientInterface* client = client_ ? client_() : nullptr;
  const ondemand::FrameworkOptions& framework = window.request().framework;
  if (client != nullptr) {
    client->prepare(framework.inputShapes, framework.profileMemory, framework.withStack,
                    framework.withFlops, framework.withModules);
  }
  const std::optional<std::string> refused = profiler_.startOnDemand(window);
  if (refused) {
    log(LogLevel::Warning, "dynolog's request could not start: {}", *refused);
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = State::Idle;
    window_.reset();
    updateNextStepEventLocked();
    changed_.notify_all();
    return;
  }
  // The framework's own recording (its ops, with their correlation ids) from now on.
  if (client != nullptr) {
    try {
      client->start();
    } catch (const std::exception& error) {
      log(LogLevel::Warning,
          "the framework's profiler did not start ({}): the on-demand trace "
          "holds GPU activity only",
          error.what());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = State::Recording;
  ++windows_;
  if (window.bySteps()) {
    firstStep_ = atStep;
    stopAtStep_ = window.endAtStep(atStep);
  } else {
    stopAtNs_ = window.endAtNs(clockNs(CLOCK_BOOTTIME));
  }
  updateNextStepEventLocked();
  changed_.notify_all();
  log(LogLevel::Info, "on-demand recording started ({}), to {}", window.request().origin,
      window.path());
}

void OnDemand::endWindow(int64_t atStep) {
  libkineto::ClientInterface* client = client_ ? client_() : nullptr;
  if (client != nullptr) {
    try {
      client->stop();  // hands the framework's ops over (transferCpuTrace)
    } catch (const std::exception& error) {
      log(LogLevel::Warning, "the framework's profiler did not stop cleanly: {}", error.what());
    }
  }
  Save save;
  save.path = window_->path();
  save.rule = window_->request().outputRule;
  std::vector<std::pair<std::string, Value>> metadata;
  metadata.emplace_back("kinetrace_trigger", ondemand::triggerMetadata(*window_));
  if (firstStep_ >= 0) {
    const int64_t end = atStep >= 0 ? atStep : steps_.load(std::memory_order_relaxed);
    metadata.emplace_back("kinetrace_steps",
                          Value::object({{"first", firstStep_}, {"count", end - firstStep_}}));
  }
  save.trace = profiler_.stopOnDemand(std::move(metadata));
  std::lock_guard<std::mutex> lock(mutex_);
  saves_.push_back(std::move(save));
  state_ = State::Idle;
  window_.reset();
  stopAtNs_ = 0;
  stopAtStep_ = 0;
  firstStep_ = -1;
  updateNextStepEventLocked();
  changed_.notify_all();
}

void OnDemand::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (!saves_.empty()) {
      Save save = std::move(saves_.front());
      saves_.pop_front();
      writing_ = true;
      lock.unlock();
      write(save);
      lock.lock();
      writing_ = false;
      changed_.notify_all();
      continue;
    }
    if (quit_) return;
    const int64_t now = clockNs(CLOCK_BOOTTIME);
    if (state_ == State::Pending && window_->dueAtTime(now)) {
      state_ = State::Starting;
      lock.unlock();
      startWindow(-1);
      lock.lock();
      continue;
    }
    if (state_ == State::Recording && stopAtNs_ != 0 && now >= stopAtNs_) {
      state_ = State::Stopping;
      lock.unlock();
      endWindow(-1);
      lock.lock();
      continue;
    }
    int64_t wakeAt = INT64_MAX;
    if (state_ == State::Pending && !window_->bySteps()) wakeAt = window_->startAtNs();
    if (state_ == State::Recording && stopAtNs_ != 0) wakeAt = stopAtNs_;
    if (wakeAt == INT64_MAX) {
      changed_.wait(lock);
    } else {
      // The boot clock goes on in suspend; waits are short enough that the steady clock serves.
      changed_.wait_for(lock, std::chrono::nanoseconds(wakeAt - now));
    }
  }
}

void OnDemand::write(Save& save) {
  try {
    save.trace->saveUnder(save.path, save.rule);
    log(LogLevel::Info, "on-demand trace written to {}", save.path);
  } catch (const std::exception& error) {
    log(LogLevel::Error, "the on-demand trace could not be written to {}: {}", save.path,
        error.what());
  }
}

bool OnDemand::waitUntilIdle(int timeoutMs) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::milliseconds(timeoutMs), [this] {
    return (state_ == State::Idle || state_ == State::Off) && saves_.empty() && !writing_;
  });
}

void OnDemand::abandonInForkedChild() noexcept {
  abandoned_.store(true);
  nextStepEvent_.store(kNoStepEvent, std::memory_order_relaxed);
  if (dynolog_) dynolog_->abandonInForkedChild();
}

void OnDemand::shutDown() noexcept {
  // A forked child's threads never existed here: there is nothing to stop or join.
  if (abandoned_.load()) return;
  if (dynolog_) dynolog_->stop();
  bool dropped = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == State::Off) return;
    dropped = state_ == State::Recording || state_ == State::Starting;
    quit_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();  // writes the traces already taken
  std::lock_guard<std::mutex> lock(mutex_);
  if (dropped) {
    std::fprintf(stderr,
                 "kinetrace (PyTorch profiler backend): the process exited while an on-demand "
                 "trace was recording (to %s); it was not saved\n",
                 window_ ? window_->path().c_str() : "?");
  }
  state_ = State::Off;
}

}  // namespace kinetrace::kineto
