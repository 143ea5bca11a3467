#pragma once

#include <cstdint>
#include <string>

#include "support/result.h"

// What `kinetrace help metrics` shows beyond the short names: the front-ends reach the GPU
// backend only through the session layer (docs/ARCHITECTURE.md), so the listing is asked
// for here.

namespace kinetrace::detail {

// The GPU metrics the device's chip can sample, a line each, or why they cannot be listed
// (no GPU, no driver, a build without CUPTI).
Result<std::string> listGpuMetricsOfDevice(uint32_t device);

}  // namespace kinetrace::detail
