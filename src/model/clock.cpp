#include "model/clock.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kinetrace::detail {

bool gClockUsesTsc = false;

namespace {

int64_t monotonicNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// An invariant TSC ticks at a constant rate in every power state and on every core. CPUID
// reports it in leaf 0x80000007 (EDX bit 8); some hypervisors hide that bit but the kernel
// still lists constant_tsc and nonstop_tsc, so either source is accepted.
bool hasInvariantTsc() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8))) return true;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

// KINETRACE_CLOCK: "auto" (or unset), "tsc", "monotonic". Config::fromEnvironment() refuses
// any other value with an error; the clock, calibrated before any configuration may have
// been read, says so once and goes on with "auto".
bool chooseTsc() {
  const char* choice = std::getenv("KINETRACE_CLOCK");
  std::string value = choice != nullptr ? choice : "";
  if (value == "monotonic") return false;
  const bool invariant = hasInvariantTsc();
  if (value == "tsc" && !invariant) {
    std::fprintf(stderr,
                 "kinetrace warning: KINETRACE_CLOCK=tsc, but this CPU has no invariant TSC; "
                 "using CLOCK_MONOTONIC\n");
  } else if (!value.empty() && value != "auto" && value != "tsc") {
    std::fprintf(stderr,
                 "kinetrace warning: KINETRACE_CLOCK=%s is not auto, tsc or monotonic; "
                 "using auto\n",
                 value.c_str());
  }
  return invariant;
}

struct ClockPair {
  uint64_t ticks;
  int64_t realtimeNs;
};

// Reads CLOCK_REALTIME between two tick reads and keeps the tightest bracket of a few
// tries, so a pair is off by half the bracket at most (tens of nanoseconds).
ClockPair samplePair() {
  ClockPair best{0, 0};
  uint64_t bestWidth = ~0ull;
  for (int i = 0; i < 16; ++i) {
    uint64_t before = Clock::ticks();
    int64_t real = Clock::realtimeNs();
    uint64_t after = Clock::ticks();
    if (after - before < bestWidth) {
      bestWidth = after - before;
      best = {before + (after - before) / 2, real};
    }
  }
  return best;
}

}  // namespace

int64_t Clock::realtimeNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Clock& Clock::instance() {
  static Clock* clock = new Clock();  // never destroyed: atexit handlers convert late
  return *clock;
}

Clock::Clock() {
  usesTsc_ = chooseTsc();
  gClockUsesTsc = usesTsc_;
  ClockPair first = samplePair();
  Mapping line;
  if (usesTsc_) {
    // A 10 ms baseline gives the tick rate to a few parts per million; recalibrate() at
    // each session start lengthens the baseline further.
    int64_t until = monotonicNs() + 10'000'000;
    while (monotonicNs() < until) {
    }
    ClockPair second = samplePair();
    line.nsPerTick = static_cast<double>(second.realtimeNs - first.realtimeNs) /
                     static_cast<double>(second.ticks - first.ticks);
  }
  line.anchorTicks = first.ticks;
  line.epochAtAnchorNs = first.realtimeNs;
  publish(line);
}

Clock::Mapping Clock::mapping() const noexcept {
  while (true) {
    const uint32_t before = sequence_.load(std::memory_order_acquire);
    Mapping m;
    m.nsPerTick = nsPerTick_.load(std::memory_order_relaxed);
    m.anchorTicks = anchorTicks_.load(std::memory_order_relaxed);
    m.epochAtAnchorNs = epochAtAnchorNs_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1u) == 0 && sequence_.load(std::memory_order_relaxed) == before) return m;
  }
}

void Clock::publish(const Mapping& next) noexcept {
  const uint32_t sequence = sequence_.load(std::memory_order_relaxed);
  sequence_.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  nsPerTick_.store(next.nsPerTick, std::memory_order_relaxed);
  anchorTicks_.store(next.anchorTicks, std::memory_order_relaxed);
  epochAtAnchorNs_.store(next.epochAtAnchorNs, std::memory_order_relaxed);
  sequence_.store(sequence + 2, std::memory_order_release);
}

int64_t Clock::recalibrate() {
  ClockPair now = samplePair();
  int64_t drift = toEpochNs(now.ticks) - now.realtimeNs;
  Mapping line = mapping();
  if (usesTsc_ && now.ticks > line.anchorTicks) {
    // Same anchor, rate fitted over everything since it: the baseline only grows.
    line.nsPerTick = static_cast<double>(now.realtimeNs - line.epochAtAnchorNs) /
                     static_cast<double>(now.ticks - line.anchorTicks);
  } else if (!usesTsc_) {
    // Ticks are CLOCK_MONOTONIC: only the offset to the epoch can move (NTP steps).
    line.anchorTicks = now.ticks;
    line.epochAtAnchorNs = now.realtimeNs;
  }
  publish(line);
  return drift;
}

}  // namespace kinetrace::detail
