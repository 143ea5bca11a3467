#include "fuzz_support.h"

#include <dirent.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KINETRACE_FUZZ_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KINETRACE_FUZZ_SANITIZED 1
#endif

#ifdef KINETRACE_FUZZ_SANITIZED
// The sanitizers' allocator interface (sanitizer/allocator_interface.h, which GCC does not
// install), declared here.
extern "C" {
int __sanitizer_install_malloc_and_free_hooks(void (*mallocHook)(const volatile void*, size_t),
                                              void (*freeHook)(const volatile void*));
int __sanitizer_get_ownership(const volatile void* pointer);
size_t __sanitizer_get_allocated_size(const volatile void* pointer);
void __sanitizer_print_stack_trace();
}
#endif

namespace kinetrace::fuzz {
namespace {

// Bytes the heap holds now, and while a limit is armed: the level it started from, the
// highest level since, and the limit (0: none armed). Atomics, as the code under test may
// allocate from threads of its own (the .pftrace writer's deflate threads).
std::atomic<int64_t> heapLive{0};
std::atomic<int64_t> heapBase{0};
std::atomic<int64_t> heapPeak{0};
std::atomic<int64_t> heapLimit{0};
const char* heapLimitWhat = "";

void writeAll(const char* text, std::size_t size) {
  while (size > 0) {
    const ssize_t wrote = ::write(STDERR_FILENO, text, size);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    text += wrote;
    size -= static_cast<std::size_t>(wrote);
  }
}

void writeFinding(const char* message) {
  constexpr char kPrefix[] = "kinetrace fuzz finding: ";
  writeAll(kPrefix, sizeof kPrefix - 1);
  writeAll(message, std::strlen(message));
  writeAll("\n", 1);
}

void noteAllocated(std::size_t size) {
  const int64_t live = heapLive.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed) +
                       static_cast<int64_t>(size);
  const int64_t limit = heapLimit.load(std::memory_order_relaxed);
  if (limit == 0) return;
  const int64_t above = live - heapBase.load(std::memory_order_relaxed);
  int64_t peak = heapPeak.load(std::memory_order_relaxed);
  while (above > peak && !heapPeak.compare_exchange_weak(peak, above, std::memory_order_relaxed)) {
  }
  if (above <= limit) return;
  // Disarmed first: what reporting does must not report again.
  if (heapLimit.exchange(0) == 0) return;
  char message[256];
  std::snprintf(message, sizeof message,
                "%s held %lld bytes of heap, over its limit of %lld (this allocation: %zu bytes)",
                heapLimitWhat, static_cast<long long>(above), static_cast<long long>(limit), size);
  writeFinding(message);
#ifdef KINETRACE_FUZZ_SANITIZED
  __sanitizer_print_stack_trace();
#endif
  std::abort();
}

void noteFreed(std::size_t size) {
  heapLive.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
}

#ifdef KINETRACE_FUZZ_SANITIZED
void mallocHook(const volatile void* /*pointer*/, size_t size) {
  noteAllocated(size);
}
void freeHook(const volatile void* pointer) {
  // Called before the allocator checks the free: a pointer it does not own (a double free,
  // which it is about to report) has no size to ask for.
  if (__sanitizer_get_ownership(pointer) != 0) noteFreed(__sanitizer_get_allocated_size(pointer));
}
// Installed before main(), so that the live count includes what static constructors hold.
const bool hooksInstalled = __sanitizer_install_malloc_and_free_hooks(mallocHook, freeHook) != 0;
#endif

}  // namespace

void reportFinding(const char* message) {
  writeFinding(message);
  std::abort();
}

HeapLimit::HeapLimit(std::size_t limit, const char* what) {
#ifdef KINETRACE_FUZZ_SANITIZED
  if (!hooksInstalled) reportFinding("the sanitizer took no allocator hooks: no heap limit");
#endif
  heapLimitWhat = what;
  heapBase.store(heapLive.load(std::memory_order_relaxed), std::memory_order_relaxed);
  heapPeak.store(0, std::memory_order_relaxed);
  heapLimit.store(static_cast<int64_t>(limit));
}

HeapLimit::~HeapLimit() {
  heapLimit.store(0);
}

std::size_t HeapLimit::peakBytes() const {
  return static_cast<std::size_t>(heapPeak.load(std::memory_order_relaxed));
}

MemoryFile::MemoryFile() : fd_(::memfd_create("kinetrace-fuzz-input", MFD_CLOEXEC)) {
  if (fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemoryFile::~MemoryFile() {
  ::close(fd_);
}

const std::string& MemoryFile::hold(const uint8_t* data, std::size_t size) {
  if (::ftruncate(fd_, 0) != 0) reportFinding("cannot empty the memfd holding the input");
  std::size_t done = 0;
  while (done < size) {
    const ssize_t wrote = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) reportFinding("cannot write the input into its memfd");
    done += static_cast<std::size_t>(wrote);
  }
  return path_;
}

std::size_t openDescriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  std::size_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

}  // namespace kinetrace::fuzz

#ifndef KINETRACE_FUZZ_SANITIZED
// Without a sanitizer's hooks, C++ allocations are counted here. libstdc++'s other forms
// (arrays, nothrow, sized delete) call these two.
void* operator new(std::size_t size) {
  void* pointer = std::malloc(size == 0 ? 1 : size);
  if (pointer == nullptr) throw std::bad_alloc();
  kinetrace::fuzz::noteAllocated(::malloc_usable_size(pointer));
  return pointer;
}

void operator delete(void* pointer) noexcept {
  if (pointer == nullptr) return;
  kinetrace::fuzz::noteFreed(::malloc_usable_size(pointer));
  std::free(pointer);
}

void operator delete(void* pointer, std::size_t /*size*/) noexcept {
  operator delete(pointer);
}
#endif
