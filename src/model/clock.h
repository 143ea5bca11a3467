#pragma once

#include <atomic>
#include <cstdint>

namespace kinetrace::detail {

// The one clock of kinetrace: nanoseconds since the Unix epoch.
//
// Reading CLOCK_REALTIME goes through the vDSO (itself a TSC read plus arithmetic), so the
// hot path reads the CPU's invariant time-stamp counter directly and converts ticks to epoch
// nanoseconds later, off the application's thread (what each costs: bench/README.md). The
// conversion is a line fitted through (ticks, CLOCK_REALTIME) pairs taken when the clock is
// calibrated. Without an invariant TSC, or with KINETRACE_CLOCK=monotonic, ticks are
// CLOCK_MONOTONIC nanoseconds.
class Clock {
 public:
  // Raw ticks, for the hot path.
  static inline uint64_t ticks() noexcept;

  // The process-wide clock (calibrated once, on first use; reads KINETRACE_CLOCK then).
  static Clock& instance();

  int64_t toEpochNs(uint64_t tick) const noexcept {
    const Mapping m = mapping();
    return m.epochAtAnchorNs +
           static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(tick - m.anchorTicks)) *
                                m.nsPerTick);
  }
  int64_t nowNs() const noexcept { return toEpochNs(ticks()); }

  // Re-measures the tick rate against CLOCK_REALTIME over the time since the first
  // calibration. Returns how far the old mapping had drifted from CLOCK_REALTIME, in ns.
  // One caller at a time (the session starting); other threads may convert meanwhile
  // (CUPTI's timestamp callback, the pipeline thread) and see the old line or the new one,
  // never a mix.
  int64_t recalibrate();

  bool usesTsc() const { return usesTsc_; }
  double nsPerTick() const { return mapping().nsPerTick; }

  static int64_t realtimeNs() noexcept;

 private:
  Clock();

  struct Mapping {
    double nsPerTick = 1.0;
    uint64_t anchorTicks = 0;
    int64_t epochAtAnchorNs = 0;
  };
  // A sequence lock: the writer makes the sequence odd, stores, makes it even; a reader
  // retries while it is odd or changed under it. Every field is an atomic, so a reader
  // that races the writer reads defined (if stale) values and throws them away.
  Mapping mapping() const noexcept;
  void publish(const Mapping& next) noexcept;

  bool usesTsc_ = false;
  std::atomic<uint32_t> sequence_{0};
  std::atomic<double> nsPerTick_{1.0};
  std::atomic<uint64_t> anchorTicks_{0};
  std::atomic<int64_t> epochAtAnchorNs_{0};
};

// Whether Clock::ticks() reads the TSC; set once, before any session records.
extern bool gClockUsesTsc;

}  // namespace kinetrace::detail

#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <time.h>

namespace kinetrace::detail {

inline uint64_t Clock::ticks() noexcept {
#if defined(__x86_64__)
  if (__builtin_expect(gClockUsesTsc, 1)) return __rdtsc();
#endif
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace kinetrace::detail
