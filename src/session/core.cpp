#include "session/core.h"

#include <pthread.h>
#include <unistd.h>

namespace kinetrace::detail {

// In a child made by fork() no session records: the parent's session (and its pipeline
// thread) did not come along. Its Profiler object did, and knows it is not its process's.
void coreForkChild() noexcept {
  Core& core = Core::instance();
  core.recordingSession_.store(nullptr, std::memory_order_relaxed);
  // Nor does what it held count here: the parent's pipeline and trace are not reachable in
  // the child, its host chunks are back in the pool (counted again when a recording
  // starts), and CUPTI's buffers are the parent's.
  core.budget_.release(core.budget_.used());
  core.pid_.store(static_cast<int64_t>(::getpid()), std::memory_order_relaxed);
}

Core::Core() : pid_(static_cast<int64_t>(::getpid())) {
  HostRecorder::instance();  // its fork handlers are registered first and run before ours
  pthread_atfork(nullptr, nullptr, &coreForkChild);
}

Core& Core::instance() {
  static Core* core = new Core();  // never destroyed, by design
  return *core;
}

bool Core::claimRecording(const Session* session) {
  const Session* expected = nullptr;
  return recordingSession_.compare_exchange_strong(expected, session);
}

void Core::releaseRecording(const Session* session) {
  const Session* expected = session;
  recordingSession_.compare_exchange_strong(expected, nullptr);
}

}  // namespace kinetrace::detail
