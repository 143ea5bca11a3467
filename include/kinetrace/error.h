#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kinetrace/export.h"

namespace kinetrace {

// What an Error is about, for code that decides on it (its message is for people).
enum class ErrorKind : uint8_t {
  Other,
  Setting,  // a configuration key that does not exist, or a value it does not take
};

// The one error type the public API throws. Its message names the thing to fix:
// the configuration key, the file path, the URL scheme.
class KINETRACE_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::Other)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace kinetrace
