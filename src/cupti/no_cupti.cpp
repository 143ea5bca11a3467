// Linked instead of the CUPTI backend when kinetrace is built without the CUDA toolkit.

#include "cupti/make_cupti_source.h"

namespace kinetrace::detail {

Result<std::unique_ptr<GpuSource>> makeCuptiSource() {
  return Failure{"this kinetrace was built without the CUDA toolkit (CUPTI backend compiled out)"};
}

Result<std::string> listChipGpuMetrics(uint32_t) {
  return Failure{"this kinetrace was built without the CUDA toolkit (CUPTI backend compiled out)"};
}

bool processUsesGpu() {
  return true;
}

}  // namespace kinetrace::detail
