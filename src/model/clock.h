#pragma once

#include <atomic>
#include <cstdint>

namespace kinetrace::detail {

// The one clock of kinetrace: nanoseconds since the Unix epoch.
//
// Reading CLOCK_REALTIME costs ~20 ns through the vDSO (itself a TSC read plus
// arithmetic), so the hot path reads the CPU's invariant time-stamp counter directly
// (7 ns on bare metal, 12-16 ns measured in the VMs of bench/HISTORY.md) and converts ticks
// to epoch nanoseconds later, off the application's thread. The
// conversion is a line fitted through (ticks, CLOCK_REALTIME) pairs taken when the clock is
// calibrated. Without an invariant TSC, ticks are CLOCK_MONOTONIC nanoseconds.
class Clock {
 public:
  // Raw ticks, for the hot path.
  static inline uint64_t ticks() noexcept;

  // The process-wide clock (calibrated once, on first use).
  static Clock& instance();

  int64_t toEpochNs(uint64_t tick) const noexcept {
    const Mapping& m = mapping();
    return m.epochAtAnchorNs +
           static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(tick - m.anchorTicks)) *
                                m.nsPerTick);
  }
  int64_t nowNs() const noexcept { return toEpochNs(ticks()); }

  // Re-measures the tick rate against CLOCK_REALTIME over the time since the first
  // calibration. Returns how far the old mapping had drifted from CLOCK_REALTIME, in ns.
  // Called between sessions; CUPTI's threads may convert concurrently (timestamp callback).
  int64_t recalibrate();

  bool usesTsc() const { return usesTsc_; }
  double nsPerTick() const { return mapping().nsPerTick; }

  static int64_t realtimeNs() noexcept;

 private:
  Clock();

  // The tick -> epoch line. Readers on other threads (CUPTI's timestamp callback) must
  // never see half of an update, so a new line goes into the next of a few slots and is
  // then published by index; a slot is rewritten only after several more recalibrations
  // (sessions), long after any conversion that read it has finished.
  struct Mapping {
    double nsPerTick = 1.0;
    uint64_t anchorTicks = 0;
    int64_t epochAtAnchorNs = 0;
  };
  static constexpr unsigned kMappingSlots = 4;
  const Mapping& mapping() const noexcept {
    return mappings_[current_.load(std::memory_order_acquire) % kMappingSlots];
  }
  void publish(const Mapping& next) noexcept;

  bool usesTsc_ = false;
  Mapping mappings_[kMappingSlots];
  std::atomic<unsigned> current_{0};
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
