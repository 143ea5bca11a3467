#pragma once

// The fields of a Chrome trace event as the model holds them: a time in microseconds as
// written to exact nanoseconds, a pid or tid as int64, a flow id as uint64, a phase letter as
// a Phase. Each says why a value does not fit, so the reader can tell a value to skip (not
// a number) from one to refuse (a number out of range, which dropping or wrapping would
// move to another time or process). Separate from the reader: pure functions of one value,
// where the hostile inputs (2^63, "-0x1", "1e400") are met.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kinetrace/event.h"

namespace kinetrace::detail {

// Microseconds as written ("1234.5678", "12", "-3.25", "1.5e3") to nanoseconds, exactly
// for plain decimals (a double holds an epoch time in microseconds only to ~0.25 us), a
// fourth decimal of 5 or more rounding away from zero; an exponent goes through a double.
// nullopt when not a number or out of int64's range.
std::optional<int64_t> microsTextToNanos(const std::string& text);

// An integer as the model holds it (int64), or why not: nlohmann reads every non-negative
// integer as unsigned, and one past 2^63 - 1 must not wrap into a negative one. A string
// holding an integer ("12", "0x1f") counts as one.
enum class IntegerStatus { Fits, NotANumber, TooLarge };
struct Integer {
  IntegerStatus status = IntegerStatus::NotANumber;
  int64_t value = 0;
};
Integer integerOf(const nlohmann::ordered_json& json);

// A flow's id: any 64-bit unsigned number, or its text. A negative one has no place among
// them (the model's ids are unsigned) and is not made one by wrapping.
enum class FlowIdStatus { Fits, NotANumber, Negative };
struct FlowId {
  FlowIdStatus status = FlowIdStatus::NotANumber;
  uint64_t value = 0;
};
FlowId flowIdOf(const nlohmann::ordered_json& json);

// A JSON integer (not a string) that fits int64_t, or nullopt.
std::optional<int64_t> fittingInt64(const nlohmann::ordered_json& json);

// The phases the model holds ("X", "i" or "I", "C", "s", "f", "M"); nullopt for the others.
std::optional<Phase> phaseOf(const std::string& ph);

// The reason in one of nlohmann's messages, without its tag and place:
// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." and
// "[json.exception.out_of_range.406] number overflow parsing '1e400'" give what follows.
std::string plainReason(std::string what);

}  // namespace kinetrace::detail
