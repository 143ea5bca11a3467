#include "session/gpu_metric_listing.h"

#include "cupti/make_cupti_source.h"

namespace kinetrace::detail {

Result<std::string> listGpuMetricsOfDevice(uint32_t device) {
  return listChipGpuMetrics(device);
}

}  // namespace kinetrace::detail
