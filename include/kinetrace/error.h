#pragma once

#include <stdexcept>
#include <string>

#include "kinetrace/export.h"

namespace kinetrace {

// The one error type the public API throws. Its message names the thing to fix:
// the configuration key, the file path, the URL scheme.
class KINETRACE_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kinetrace
