// Linked instead of the CUPTI backend when kinetrace is built without the CUDA toolkit.

#include "model/gpu_source.h"

namespace kinetrace::detail {

std::unique_ptr<GpuSource> makeCuptiSource(std::string& whyNot) {
  whyNot = "this kinetrace was built without the CUDA toolkit (CUPTI backend compiled out)";
  return nullptr;
}

}  // namespace kinetrace::detail
