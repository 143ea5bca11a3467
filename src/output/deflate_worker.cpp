#include "output/deflate_worker.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#include "output/small_deflate.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kinetrace::detail {
namespace {

// Lets the other hardware thread of a core run while this one polls.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long the thread polls for more input before it sleeps. Waking a sleeping thread
// takes 50-100 us on a virtual machine, as long as writing a short trace: half a
// millisecond of polling keeps the thread awake from one piece to the next, and from one
// trace to the next when a program writes several in a row.
constexpr auto kPollFor = std::chrono::microseconds(500);

// Polls `ready` for up to kPollFor; whether it became true.
template <typename Ready>
bool pollFor(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + kPollFor;
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpuRelax();
    }
    if (std::chrono::steady_clock::now() >= until) return false;
  }
}

// The thread and what it shares with the sink that holds the claim. The sink writes the
// input and then publishes its size; the thread reads up to what is published, and writes
// the stream, which the sink reads once `done` is set. Both sides' flags are sequentially
// consistent, so that a side that finds the other not sleeping can count on it to see what
// was just stored (the sleep check and the wake-up cannot cross).
class Worker {
 public:
  // The process's worker, started by the first call; nullptr where none can be had.
  static Worker* instance() {
    static Worker* const worker = start();
    if (worker == nullptr || !worker->inThisProcess()) return nullptr;  // a forked child
    return worker;
  }

  bool inThisProcess() const { return pid_ == ::getpid(); }
  bool tryClaim() { return !claimed_.exchange(true, std::memory_order_acquire); }
  void release() { claimed_.store(false, std::memory_order_release); }

  // ---- the claiming sink's side ----
  void beginJob() {
    published_.store(0);
    finishing_.store(false);
    done_.store(false);
    job_.fetch_add(1);
    wakeIfSleeping();
  }
  unsigned char* input() { return input_.get(); }
  void publish(std::size_t size) {
    published_.store(size);
    wakeIfSleeping();
  }
  std::string_view finish(std::size_t size) {
    published_.store(size);
    finishing_.store(true);
    wakeIfSleeping();
    const auto done = [this] { return done_.load(std::memory_order_acquire); };
    if (!pollFor(done)) {
      while (!done()) std::this_thread::yield();  // the thread is not running: let it
    }
    return {reinterpret_cast<const char*>(stream_.output()), result_};
  }

 private:
  static Worker* start() {
    if (std::thread::hardware_concurrency() < 2) return nullptr;  // it would only compete
    auto* worker = new Worker();  // lives as long as the process: never destroyed
    try {
      std::thread([worker] { worker->run(); }).detach();
    } catch (const std::system_error&) {
      delete worker;
      return nullptr;
    }
    return worker;
  }

  Worker() : input_(new unsigned char[kSmallDeflateMaxInput]), pid_(::getpid()) {}

  void wakeIfSleeping() {
    if (!sleeping_.load()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_one();
  }

  // Sleeps until `ready` holds; the sink wakes it after storing what makes it hold.
  template <typename Ready>
  void sleepUntil(Ready ready) {
    std::unique_lock<std::mutex> lock(mutex_);
    sleeping_.store(true);
    wake_.wait(lock, ready);
    sleeping_.store(false);
  }

  void run() {
    uint64_t jobsDone = 0;
    while (true) {
      const auto nextJob = [&] { return job_.load() != jobsDone; };
      if (!pollFor(nextJob)) sleepUntil(nextJob);
      jobsDone = job_.load();
      stream_.restart();
      std::size_t given = 0;
      const auto moreOrFinishing = [&] { return published_.load() > given || finishing_.load(); };
      while (true) {
        const bool finishing = finishing_.load();  // read first: then `published` is final
        const std::size_t published = published_.load();
        if (published > given) {
          stream_.compress(input_.get(), published);
          given = published;
        } else if (finishing) {
          result_ = stream_.finish(input_.get(), published);
          done_.store(true, std::memory_order_release);
          break;
        } else if (!pollFor(moreOrFinishing)) {
          sleepUntil(moreOrFinishing);
        }
      }
    }
  }

  std::unique_ptr<unsigned char[]> input_;
  DeflateStream stream_;
  std::size_t result_ = 0;  // the stream's length, written before `done`
  const pid_t pid_;

  std::atomic<bool> claimed_{false};
  std::atomic<uint64_t> job_{0};
  std::atomic<std::size_t> published_{0};
  std::atomic<bool> finishing_{false};
  std::atomic<bool> done_{false};
  std::atomic<bool> sleeping_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace

std::unique_ptr<StreamedDeflate> StreamedDeflate::claim() {
  Worker* worker = Worker::instance();
  if (worker == nullptr || !worker->tryClaim()) return nullptr;
  worker->beginJob();
  return std::unique_ptr<StreamedDeflate>(new StreamedDeflate(worker));
}

StreamedDeflate::~StreamedDeflate() {
  auto* worker = static_cast<Worker*>(worker_);
  // In a process forked while this stream was open there is no thread to wait for.
  if (!worker->inThisProcess()) return;
  if (!finished_) worker->finish(size_);  // the thread must let go of the input first
  worker->release();
}

std::size_t StreamedDeflate::room() const {
  return kSmallDeflateMaxInput - size_;
}

void StreamedDeflate::append(const char* data, std::size_t size) {
  auto* worker = static_cast<Worker*>(worker_);
  std::memcpy(worker->input() + size_, data, size);
  size_ += size;
  worker->publish(size_);
}

std::string_view StreamedDeflate::finish() {
  if (!finished_) {
    result_ = static_cast<Worker*>(worker_)->finish(size_);
    finished_ = true;
  }
  return result_;
}

}  // namespace kinetrace::detail
