#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/gpu_source.h"
#include "support/result.h"

// The GPU backend a session uses unless a test gives it another. Declared apart from
// cupti_source.h so that the session includes no CUDA header: the same call links to the
// CUPTI backend, or, in a build without the CUDA toolkit, to no_cupti.cpp's refusal.

namespace kinetrace::detail {

// The CUPTI source, or why there is none (built without the CUDA toolkit).
Result<std::unique_ptr<GpuSource>> makeCuptiSource();

// The GPU metrics CUPTI's PM sampling knows on a device's chip, a line each ("name  unit
// type  description"), or why they cannot be listed (no GPU, no driver, no CUPTI).
Result<std::string> listChipGpuMetrics(uint32_t device);

// Whether this process has started using a GPU: the CUDA driver is loaded in it (never loaded
// by this call) and a device's primary context is active, as the CUDA runtime makes it at a
// program's first allocation or launch. A launcher that only counts devices has started the
// driver but made no context. Without the CUDA toolkit, true: nothing can tell.
bool processUsesGpu();

}  // namespace kinetrace::detail
