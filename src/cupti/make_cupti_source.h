#pragma once

#include <memory>

#include "model/gpu_source.h"
#include "support/result.h"

// The GPU backend a session uses unless a test gives it another. Declared apart from
// cupti_source.h so that the session includes no CUDA header: the same call links to the
// CUPTI backend, or, in a build without the CUDA toolkit, to no_cupti.cpp's refusal.

namespace kinetrace::detail {

// The CUPTI source, or why there is none (built without the CUDA toolkit).
Result<std::unique_ptr<GpuSource>> makeCuptiSource();

}  // namespace kinetrace::detail
