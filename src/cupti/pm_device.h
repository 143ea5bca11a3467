#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/result.h"

// One device's PM sampling (CUPTI's cupti_pmsampling.h with cupti_profiler_host.h), behind
// an interface so that the sampler's logic (when to start, what a lost or corrupted sample
// is, how an overflow is recovered) runs in tests against a stand-in.

namespace kinetrace::detail {

// A decoded sample's span, in CUPTI's clock.
struct PmSampleSpan {
  uint64_t startNs;
  uint64_t endNs;
};

struct PmDecodeResult {
  enum Outcome {
    Decoded,           // every completed sample handed over
    HardwareOverflow,  // the hardware buffer filled: sampling must be made anew (restart())
    Failed,            // CUPTI refused to decode; `why` says why
  };
  Outcome outcome = Decoded;
  // The host image filled before the hardware buffer was empty: decode again now.
  bool moreWaiting = false;
  std::string why;
};

class PmDevice {
 public:
  virtual ~PmDevice() = default;
  // Everything before sampling starts: the chip's metrics checked (one hardware pass in
  // all), the hardware buffer and the host image sized. "" or why not, in words for the
  // user ("metric \"x\" is not one this GPU (GH100) samples").
  virtual Status prepare(const std::vector<std::string>& metricNames, uint64_t intervalNs,
                         std::size_t hardwareBufferBytes, uint32_t maxSamples) = 0;
  virtual Status start() = 0;
  virtual void stop() noexcept = 0;
  // Decodes what the hardware recorded, appends each completed sample's span and its values
  // (one per metric, in prepare()'s order) and empties the host image for the next call.
  virtual PmDecodeResult decode(std::vector<PmSampleSpan>& spans, std::vector<double>& values) = 0;
  // After a hardware overflow: sampling made anew, with a hardware buffer of that size, and
  // started again (CUPTI decodes nothing more until then). A larger buffer makes the host
  // images grow in proportion (they must take in all it holds); hostBytes() says so after.
  virtual Status restart(std::size_t hardwareBufferBytes) = 0;
  // The host memory prepare() took (images), for the memory budget.
  virtual std::size_t hostBytes() const = 0;
};

// The CUPTI implementation for one device (by CUDA ordinal); null in a build without CUDA.
std::unique_ptr<PmDevice> makeCuptiPmDevice(uint32_t device);

}  // namespace kinetrace::detail
