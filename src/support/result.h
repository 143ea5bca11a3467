#pragma once

#include <string>
#include <utility>
#include <variant>

// How an internal operation says it could not be done when its caller is expected to go on
// without it: a GPU without CUPTI, a trigger socket that cannot be made, a request that does
// not parse. The reason is words for the user ("CUPTI refused to start: ..."), passed up
// unchanged until an edge shows it or records it in the trace.
//
// The other error path is kinetrace::Error (include/kinetrace/error.h), an exception for bad
// input and misuse (a malformed trace file, an invalid configuration), thrown where it is
// found and caught at the edges: the public API's documented throws, the kinetrace command's
// main, and the entry points that must not throw into the traced program. See
// docs/ARCHITECTURE.md, "Errors".

namespace kinetrace::detail {

// Why an operation failed.
struct Failure {
  std::string why;
};

// An operation with nothing to return: it succeeded, or here is why not.
class [[nodiscard]] Status {
 public:
  Status() = default;                                                       // succeeded
  Status(Failure failure) : why_(std::move(failure.why)), failed_(true) {}  // NOLINT: implicit

  bool ok() const { return !failed_; }
  const std::string& why() const { return why_; }

 private:
  std::string why_;
  bool failed_ = false;
};

// A value, or why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Result(Failure failure) : state_(std::in_place_index<1>, std::move(failure)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  // Only when !ok().
  const std::string& why() const { return std::get<1>(state_).why; }

 private:
  std::variant<T, Failure> state_;
};

}  // namespace kinetrace::detail
