// PM sampling on one device through CUPTI (cupti_pmsampling.h, cupti_profiler_host.h).
//
// Pitfalls met on the H200 (CUDA 13.0) that shape this code: the host image must hold every
// sample the hardware buffer can (a full image makes CUPTI drop the rest of the backlog, and
// a small one gave corrupted samples), so both are sized from the same sample count; after
// a hardware buffer overflow every decode fails with CUPTI_ERROR_OUT_OF_MEMORY until the
// sampling object is made anew; a second SetConfig on the same object is ignored.

#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <mutex>

#include "cupti/cupti_api.h"
#include "cupti/driver_api.h"
#include "cupti/make_cupti_source.h"
#include "cupti/pm_device.h"
#include "support/log.h"

namespace kinetrace::detail {
namespace {

template <typename Params>
Params cuptiParams(std::size_t structSize) {
  Params params;
  std::memset(&params, 0, sizeof(params));
  params.structSize = structSize;
  return params;
}
#define KINETRACE_PARAMS(Type) cuptiParams<Type>(Type##_STRUCT_SIZE)

// cuptiProfilerInitialize once per process, before any PM sampling call.
Status initializeProfiler() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] {
    auto params = KINETRACE_PARAMS(CUpti_Profiler_Initialize_Params);
    status = cuptiStatus(cuptiProfilerInitialize(&params), "cuptiProfilerInitialize");
  });
  return status;
}

const char* supportWord(CUpti_Profiler_Support_Level level) {
  switch (level) {
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED:
      return "supported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED:
      return "disabled by the system";
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
      return "unsupported";
    default:
      return "unknown";
  }
}

// Why this device cannot be sampled, or "".
std::string unsupportedBecause(uint32_t device) {
  auto params = KINETRACE_PARAMS(CUpti_Profiler_DeviceSupported_Params);
  params.cuDevice = static_cast<CUdevice>(device);
  params.api = CUPTI_PROFILER_PM_SAMPLING;
  if (Status asked =
          cuptiStatus(cuptiProfilerDeviceSupported(&params), "cuptiProfilerDeviceSupported");
      !asked.ok()) {
    return asked.why();
  }
  if (params.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return {};
  return fmt::format(
      "the GPU does not support PM sampling here (architecture {}, vGPU {}, confidential "
      "compute {}, SLI {}, WSL {})",
      supportWord(params.architecture), supportWord(params.vGpu),
      supportWord(params.confidentialCompute), supportWord(params.sli), supportWord(params.wsl));
}

class HostObject {
 public:
  ~HostObject() { reset(); }
  Status create(const std::string& chip, const std::vector<uint8_t>& availability) {
    reset();
    auto params = KINETRACE_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    params.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    params.pChipName = chip.c_str();
    params.pCounterAvailabilityImage = availability.data();
    Status made = cuptiStatus(cuptiProfilerHostInitialize(&params), "cuptiProfilerHostInitialize");
    if (made.ok()) object_ = params.pHostObject;
    return made;
  }
  void reset() noexcept {
    if (object_ == nullptr) return;
    auto params = KINETRACE_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    params.pHostObject = object_;
    cuptiProfilerHostDeinitialize(&params);
    object_ = nullptr;
  }
  CUpti_Profiler_Host_Object* get() const { return object_; }

 private:
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

CUptiResult addMetrics(HostObject& host, std::vector<const char*>& names) {
  auto params = KINETRACE_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  params.pHostObject = host.get();
  params.ppMetricNames = names.data();
  params.numMetrics = names.size();
  return cuptiProfilerHostConfigAddMetrics(&params);
}

// How long each step of a device's set-up took, said in one info line: the set-up delays a
// window's first sample, and which step costs it differs by driver and chip.
class SetUpSteps {
 public:
  void lap(const char* step) {
    const auto now = std::chrono::steady_clock::now();
    fmt::format_to(std::back_inserter(said_), "{}{} {:.1f} ms", said_.empty() ? "" : ", ", step,
                   std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }
  const std::string& said() const { return said_; }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::string said_;
};

class CuptiPmDevice final : public PmDevice {
 public:
  explicit CuptiPmDevice(uint32_t device) : device_(device) {}
  ~CuptiPmDevice() override { release(); }

  Status prepare(const std::vector<std::string>& metricNames, uint64_t intervalNs,
                 std::size_t hardwareBufferBytes, uint32_t maxSamples) override {
    SetUpSteps steps;
    if (Status initialized = initializeProfiler(); !initialized.ok()) return initialized;
    if (std::string why = unsupportedBecause(device_); !why.empty()) return Failure{why};
    steps.lap("profiler");
    auto chipParams = KINETRACE_PARAMS(CUpti_Device_GetChipName_Params);
    chipParams.deviceIndex = device_;
    if (Status named = cuptiStatus(cuptiDeviceGetChipName(&chipParams), "cuptiDeviceGetChipName");
        !named.ok()) {
      return named;
    }
    chip_ = chipParams.pChipName != nullptr ? chipParams.pChipName : "";

    auto availability = KINETRACE_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
    availability.deviceIndex = device_;
    if (Status sized = cuptiStatus(cuptiPmSamplingGetCounterAvailability(&availability),
                                   "cuptiPmSamplingGetCounterAvailability");
        !sized.ok()) {
      return sized;
    }
    availability_.assign(availability.counterAvailabilityImageSize, 0);
    availability.pCounterAvailabilityImage = availability_.data();
    if (Status read = cuptiStatus(cuptiPmSamplingGetCounterAvailability(&availability),
                                  "cuptiPmSamplingGetCounterAvailability");
        !read.ok()) {
      return read;
    }

    steps.lap("chip and counters");
    nameStorage_ = metricNames;
    names_.clear();
    for (const std::string& name : nameStorage_) names_.push_back(name.c_str());
    if (Status made = host_.create(chip_, availability_); !made.ok()) return made;
    steps.lap("host object");
    if (CUptiResult added = addMetrics(host_, names_); added != CUPTI_SUCCESS) {
      return Failure{whichMetricIsRefused(metricNames, added)};
    }
    steps.lap("metrics");
    auto imageSize = KINETRACE_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    imageSize.pHostObject = host_.get();
    if (Status sized = cuptiStatus(cuptiProfilerHostGetConfigImageSize(&imageSize),
                                   "cuptiProfilerHostGetConfigImageSize");
        !sized.ok()) {
      return sized;
    }
    config_.assign(imageSize.configImageSize, 0);
    auto image = KINETRACE_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    image.pHostObject = host_.get();
    image.configImageSize = config_.size();
    image.pConfigImage = config_.data();
    if (Status made =
            cuptiStatus(cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");
        !made.ok()) {
      return made;
    }
    auto passes = KINETRACE_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    passes.configImageSize = config_.size();
    passes.pConfigImage = config_.data();
    if (Status counted = cuptiStatus(cuptiProfilerHostGetNumOfPasses(&passes),
                                     "cuptiProfilerHostGetNumOfPasses");
        !counted.ok()) {
      return counted;
    }
    if (passes.numOfPasses != 1) {
      return Failure{fmt::format(
          "these metrics need {} hardware passes on {} and PM sampling gathers one: ask for "
          "fewer, or for their one-pass forms (kinetrace help metrics)",
          passes.numOfPasses, chip_)};
    }
    steps.lap("config image");
    intervalNs_ = intervalNs;
    hardwareBufferBytes_ = hardwareBufferBytes;
    maxSamples_ = maxSamples;
    if (Status made = makeSampler(&steps); !made.ok()) return made;
    log(LogLevel::Info, "GPU metrics on GPU {} ({}): set-up steps: {}", device_, chip_,
        steps.said());
    return {};
  }

  Status start() override {
    auto params = KINETRACE_PARAMS(CUpti_PmSampling_Start_Params);
    params.pPmSamplingObject = sampler_;
    return cuptiStatus(cuptiPmSamplingStart(&params), "cuptiPmSamplingStart");
  }

  void stop() noexcept override {
    auto params = KINETRACE_PARAMS(CUpti_PmSampling_Stop_Params);
    params.pPmSamplingObject = sampler_;
    cuptiSucceeded(cuptiPmSamplingStop(&params), "cuptiPmSamplingStop");
  }

  PmDecodeResult decode(std::vector<PmSampleSpan>& spans, std::vector<double>& values) override {
    PmDecodeResult result;
    if (image_.empty()) {
      if (Status made = makeHostImage(); !made.ok()) {
        result.outcome = PmDecodeResult::Failed;
        result.why = made.why();
        return result;
      }
    }
    auto params = KINETRACE_PARAMS(CUpti_PmSampling_DecodeData_Params);
    params.pPmSamplingObject = sampler_;
    params.pCounterDataImage = image_.data();
    params.counterDataImageSize = image_.size();
    CUptiResult decoded = cuptiPmSamplingDecodeData(&params);
    if (decoded == CUPTI_ERROR_OUT_OF_MEMORY || params.overflow != 0) {
      result.outcome = PmDecodeResult::HardwareOverflow;
    } else if (decoded != CUPTI_SUCCESS) {
      result.outcome = PmDecodeResult::Failed;
      result.why = cuptiStatus(decoded, "cuptiPmSamplingDecodeData").why();
      return result;
    }
    result.moreWaiting =
        params.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;

    auto info = KINETRACE_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
    info.pCounterDataImage = image_.data();
    info.counterDataImageSize = image_.size();
    if (Status read = cuptiStatus(cuptiPmSamplingGetCounterDataInfo(&info),
                                  "cuptiPmSamplingGetCounterDataInfo");
        !read.ok()) {
      result.outcome = PmDecodeResult::Failed;
      result.why = read.why();
      return result;
    }
    const std::size_t metrics = names_.size();
    for (std::size_t i = 0; i < info.numCompletedSamples; ++i) {
      auto sample = KINETRACE_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
      sample.pPmSamplingObject = sampler_;
      sample.pCounterDataImage = image_.data();
      sample.counterDataImageSize = image_.size();
      sample.sampleIndex = i;
      auto evaluate = KINETRACE_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
      evaluate.pHostObject = host_.get();
      evaluate.pCounterDataImage = image_.data();
      evaluate.counterDataImageSize = image_.size();
      evaluate.rangeIndex = i;
      evaluate.ppMetricNames = names_.data();
      evaluate.numMetrics = metrics;
      const std::size_t at = values.size();
      values.resize(at + metrics);
      evaluate.pMetricValues = values.data() + at;
      if (cuptiPmSamplingCounterDataGetSampleInfo(&sample) != CUPTI_SUCCESS ||
          cuptiProfilerHostEvaluateToGpuValues(&evaluate) != CUPTI_SUCCESS) {
        // Kept with an empty span: the sampler counts it as corrupted.
        sample.startTimestamp = sample.endTimestamp = 0;
      }
      spans.push_back(PmSampleSpan{sample.startTimestamp, sample.endTimestamp});
    }
    // The image is used again from empty: a copy of it as initialised is faster than
    // initialising it anew.
    std::memcpy(image_.data(), blankImage_.data(), image_.size());
    return result;
  }

  Status restart(std::size_t hardwareBufferBytes) override {
    stop();
    disableSampler();
    // The host image grows with the hardware buffer: it must take in all the buffer holds.
    if (hardwareBufferBytes > hardwareBufferBytes_ && hardwareBufferBytes_ > 0) {
      maxSamples_ = static_cast<uint32_t>(std::min<uint64_t>(
          uint64_t{maxSamples_} * hardwareBufferBytes / hardwareBufferBytes_, UINT32_MAX));
    }
    hardwareBufferBytes_ = hardwareBufferBytes;
    if (Status made = makeSampler(); !made.ok()) return made;
    return start();
  }

  std::size_t hostBytes() const override {
    return 2 * counterDataBytes_ + config_.size() + availability_.size();
  }

 private:
  // The sampling object, configured; `steps` times its parts. The host image it decodes into
  // is made at the first decode, after sampling started: at 1 ms its thousands of samples
  // take about as long to initialise as the rest of the set-up, which would otherwise delay
  // a window's first sample.
  Status makeSampler(SetUpSteps* steps = nullptr) {
    auto enable = KINETRACE_PARAMS(CUpti_PmSampling_Enable_Params);
    enable.deviceIndex = device_;
    if (Status enabled = cuptiStatus(cuptiPmSamplingEnable(&enable), "cuptiPmSamplingEnable");
        !enabled.ok()) {
      return enabled;
    }
    sampler_ = enable.pPmSamplingObject;
    if (steps != nullptr) steps->lap("enable");
    auto config = KINETRACE_PARAMS(CUpti_PmSampling_SetConfig_Params);
    config.pPmSamplingObject = sampler_;
    config.configSize = config_.size();
    config.pConfig = config_.data();
    config.hardwareBufferSize = hardwareBufferBytes_;
    config.samplingInterval = intervalNs_;
    config.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    config.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    if (Status set = cuptiStatus(cuptiPmSamplingSetConfig(&config), "cuptiPmSamplingSetConfig");
        !set.ok()) {
      return set;
    }
    if (steps != nullptr) steps->lap("set config");
    auto size = KINETRACE_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
    size.pPmSamplingObject = sampler_;
    size.pMetricNames = names_.data();
    size.numMetrics = names_.size();
    size.maxSamples = maxSamples_;
    if (Status sized = cuptiStatus(cuptiPmSamplingGetCounterDataSize(&size),
                                   "cuptiPmSamplingGetCounterDataSize");
        !sized.ok()) {
      return sized;
    }
    counterDataBytes_ = size.counterDataSize;
    if (steps != nullptr) steps->lap("host image size");
    image_.clear();
    blankImage_.clear();
    return {};
  }

  // The host image for this sampling object, initialised, and a blank copy to reset it with.
  Status makeHostImage() {
    const auto began = std::chrono::steady_clock::now();
    image_.assign(counterDataBytes_, 0);
    auto initialize = KINETRACE_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
    initialize.pPmSamplingObject = sampler_;
    initialize.counterDataSize = image_.size();
    initialize.pCounterData = image_.data();
    if (Status made = cuptiStatus(cuptiPmSamplingCounterDataImageInitialize(&initialize),
                                  "cuptiPmSamplingCounterDataImageInitialize");
        !made.ok()) {
      image_.clear();
      return made;
    }
    blankImage_ = image_;
    log(LogLevel::Info,
        "GPU metrics on GPU {}: host image of {} samples ({:.1f} MiB) made in {:.1f} ms", device_,
        maxSamples_, static_cast<double>(image_.size()) / (1 << 20),
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began)
            .count());
    return {};
  }

  void disableSampler() noexcept {
    if (sampler_ == nullptr) return;
    auto params = KINETRACE_PARAMS(CUpti_PmSampling_Disable_Params);
    params.pPmSamplingObject = sampler_;
    cuptiSucceeded(cuptiPmSamplingDisable(&params), "cuptiPmSamplingDisable");
    sampler_ = nullptr;
  }

  void release() noexcept {
    disableSampler();
    host_.reset();
  }

  // CUPTI refused the set: name the metric it refuses alone, or say the set is refused.
  std::string whichMetricIsRefused(const std::vector<std::string>& metricNames,
                                   CUptiResult result) {
    for (const std::string& name : metricNames) {
      HostObject probe;
      if (!probe.create(chip_, availability_).ok()) break;
      std::vector<const char*> one{name.c_str()};
      if (addMetrics(probe, one) != CUPTI_SUCCESS) {
        return fmt::format(
            "metric \"{}\" is not one {} samples (kinetrace help metrics lists those it does)",
            name, chip_);
      }
    }
    return fmt::format("{} refused these metrics together: {}", chip_, describeCuptiResult(result));
  }

  uint32_t device_;
  std::string chip_;
  std::vector<uint8_t> availability_;
  std::vector<uint8_t> config_;
  std::vector<std::string> nameStorage_;
  std::vector<const char*> names_;  // into nameStorage_, as CUPTI takes them
  HostObject host_;
  CUpti_PmSampling_Object* sampler_ = nullptr;
  std::size_t counterDataBytes_ = 0;  // the host image's size, known before it is made
  std::vector<uint8_t> image_;
  std::vector<uint8_t> blankImage_;
  uint64_t intervalNs_ = 0;
  std::size_t hardwareBufferBytes_ = 0;
  uint32_t maxSamples_ = 0;
};

const char* metricTypeName(CUpti_MetricType type) {
  switch (type) {
    case CUPTI_METRIC_TYPE_COUNTER:
      return "counter";
    case CUPTI_METRIC_TYPE_RATIO:
      return "ratio";
    case CUPTI_METRIC_TYPE_THROUGHPUT:
      return "throughput";
    default:
      return "?";
  }
}

}  // namespace

Result<std::string> listChipGpuMetrics(uint32_t device) {
  DriverApi driver;
  if (Status opened = driver.open(true); !opened.ok()) return Failure{opened.why()};
  if (Status initialized = initializeProfiler(); !initialized.ok())
    return Failure{initialized.why()};
  auto chipParams = KINETRACE_PARAMS(CUpti_Device_GetChipName_Params);
  chipParams.deviceIndex = device;
  if (Status named = cuptiStatus(cuptiDeviceGetChipName(&chipParams), "cuptiDeviceGetChipName");
      !named.ok()) {
    return Failure{named.why()};
  }
  const std::string chip = chipParams.pChipName != nullptr ? chipParams.pChipName : "?";
  auto availability = KINETRACE_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
  availability.deviceIndex = device;
  std::vector<uint8_t> image;
  Status read = cuptiStatus(cuptiPmSamplingGetCounterAvailability(&availability),
                            "cuptiPmSamplingGetCounterAvailability");
  if (read.ok()) {
    image.assign(availability.counterAvailabilityImageSize, 0);
    availability.pCounterAvailabilityImage = image.data();
    read = cuptiStatus(cuptiPmSamplingGetCounterAvailability(&availability),
                       "cuptiPmSamplingGetCounterAvailability");
  }
  if (!read.ok()) return Failure{read.why()};
  HostObject host;
  if (Status made = host.create(chip, image); !made.ok()) return Failure{made.why()};
  std::string out = fmt::format(
      "GPU {} ({}): base metrics PM sampling knows. Sample one as CUPTI names it with a "
      "rollup and a submetric, e.g. dram__throughput.avg.pct_of_peak_sustained_elapsed; "
      "some need a collection prefix to fit one pass (TriageCompute., TPC.TriageCompute.).\n",
      device, chip);
  for (CUpti_MetricType type :
       {CUPTI_METRIC_TYPE_THROUGHPUT, CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO}) {
    auto base = KINETRACE_PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params);
    base.pHostObject = host.get();
    base.metricType = type;
    if (!cuptiSucceeded(cuptiProfilerHostGetBaseMetrics(&base),
                        "cuptiProfilerHostGetBaseMetrics")) {
      continue;
    }
    for (std::size_t i = 0; i < base.numMetrics; ++i) {
      auto properties = KINETRACE_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
      properties.pHostObject = host.get();
      properties.pMetricName = base.ppMetricNames[i];
      const bool described = cuptiProfilerHostGetMetricProperties(&properties) == CUPTI_SUCCESS;
      out += fmt::format(
          "  {:<60} {:<10} {}\n", base.ppMetricNames[i], metricTypeName(type),
          described && properties.pDescription != nullptr ? properties.pDescription : "");
    }
  }
  return out;
}

std::unique_ptr<PmDevice> makeCuptiPmDevice(uint32_t device) {
  return std::make_unique<CuptiPmDevice>(device);
}

}  // namespace kinetrace::detail
