#pragma once

#include <cstdint>

namespace kinetrace::detail {

// The one clock of kinetrace: nanoseconds since the Unix epoch.
//
// Reading CLOCK_REALTIME costs ~20 ns through the vDSO, which alone would use most of a
// range's budget, so the hot path reads the CPU's invariant time-stamp counter (~7 ns)
// and converts ticks to epoch nanoseconds later, off the application's thread. The
// conversion is a line fitted through (ticks, CLOCK_REALTIME) pairs taken when the clock is
// calibrated. Without an invariant TSC, ticks are CLOCK_MONOTONIC nanoseconds.
class Clock {
 public:
  // Raw ticks, for the hot path.
  static inline uint64_t ticks() noexcept;

  // The process-wide clock (calibrated once, on first use).
  static Clock& instance();

  int64_t toEpochNs(uint64_t tick) const noexcept {
    return epochAtAnchorNs_ +
           static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(tick - anchorTicks_)) *
                                nsPerTick_);
  }
  int64_t nowNs() const noexcept { return toEpochNs(ticks()); }
  uint64_t fromEpochNs(int64_t epochNs) const noexcept {
    return anchorTicks_ +
           static_cast<uint64_t>(static_cast<double>(epochNs - epochAtAnchorNs_) / nsPerTick_);
  }

  // Re-measures the tick rate against CLOCK_REALTIME over the time since the last
  // calibration and re-anchors. Returns the largest disagreement seen between the old
  // mapping and CLOCK_REALTIME, in nanoseconds (the drift since the last calibration).
  int64_t recalibrate();

  bool usesTsc() const { return usesTsc_; }
  double nsPerTick() const { return nsPerTick_; }

  static int64_t realtimeNs() noexcept;

 private:
  Clock();
  bool usesTsc_ = false;
  double nsPerTick_ = 1.0;
  uint64_t anchorTicks_ = 0;
  int64_t epochAtAnchorNs_ = 0;
};

}  // namespace kinetrace::detail

#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <time.h>

namespace kinetrace::detail {

extern bool gClockUsesTsc;

inline uint64_t Clock::ticks() noexcept {
#if defined(__x86_64__)
  if (__builtin_expect(gClockUsesTsc, 1)) return __rdtsc();
#endif
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace kinetrace::detail
