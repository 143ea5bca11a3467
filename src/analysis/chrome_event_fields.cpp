#include "analysis/chrome_event_fields.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace kinetrace::detail {

std::optional<int64_t> microsTextToNanos(const std::string& text) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  int64_t whole = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (whole > (std::numeric_limits<int64_t>::max() - 9) / 10) return std::nullopt;
    whole = whole * 10 + (text[i] - '0');
    digits = true;
  }
  int64_t fraction = 0;  // nanoseconds
  int fractionDigits = 0;
  bool roundUp = false;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      digits = true;
      if (fractionDigits < 3) {
        fraction = fraction * 10 + (text[i] - '0');
        ++fractionDigits;
      } else if (fractionDigits == 3) {
        roundUp = text[i] >= '5';
        ++fractionDigits;
      }
    }
  }
  if (!digits) return std::nullopt;
  if (i != text.size()) {
    // An exponent or something else: through a double, rounded to the nanosecond.
    char* end = nullptr;
    const double micros = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(micros)) return std::nullopt;
    const double nanos = std::round(micros * 1000.0);
    // 2^63 is exact as a double; anything at or beyond it does not fit.
    if (!(nanos > -9223372036854775808.0 && nanos < 9223372036854775808.0)) return std::nullopt;
    return static_cast<int64_t>(nanos);
  }
  while (fractionDigits < 3) {
    fraction *= 10;
    ++fractionDigits;
  }
  // Exact to the last nanosecond of int64: what a writer wrote from an int64 reads back.
  int64_t nanos = 0;
  if (__builtin_mul_overflow(whole, int64_t{1000}, &nanos) ||
      __builtin_add_overflow(nanos, fraction + (roundUp ? 1 : 0), &nanos)) {
    return std::nullopt;
  }
  return negative ? -nanos : nanos;
}

Integer integerOf(const nlohmann::ordered_json& json) {
  if (json.is_number_unsigned()) {
    const auto value = json.get<uint64_t>();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return {IntegerStatus::TooLarge, 0};
    }
    return {IntegerStatus::Fits, static_cast<int64_t>(value)};
  }
  if (json.is_number_integer()) return {IntegerStatus::Fits, json.get<int64_t>()};
  if (json.is_string()) {
    const std::string& text = json.get_ref<const std::string&>();
    if (text.empty()) return {};
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 0);
    if (end != text.c_str() + text.size()) return {};
    if (errno == ERANGE) return {IntegerStatus::TooLarge, 0};
    if (errno != 0) return {};
    return {IntegerStatus::Fits, value};
  }
  return {};
}

FlowId flowIdOf(const nlohmann::ordered_json& json) {
  if (json.is_number_unsigned()) return {FlowIdStatus::Fits, json.get<uint64_t>()};
  if (json.is_number_integer()) {
    const auto value = json.get<int64_t>();
    if (value < 0) return {FlowIdStatus::Negative, 0};
    return {FlowIdStatus::Fits, static_cast<uint64_t>(value)};
  }
  if (json.is_string()) {
    const std::string& text = json.get_ref<const std::string&>();
    if (text.empty() || text[0] == '-')
      return {text.empty() ? FlowIdStatus::NotANumber : FlowIdStatus::Negative, 0};
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 0);
    if (errno != 0 || end != text.c_str() + text.size()) return {};
    return {FlowIdStatus::Fits, value};
  }
  return {};
}

std::optional<int64_t> fittingInt64(const nlohmann::ordered_json& json) {
  if (!json.is_number_integer()) return std::nullopt;  // unsigned ones included
  const Integer integer = integerOf(json);
  if (integer.status != IntegerStatus::Fits) return std::nullopt;
  return integer.value;
}

std::optional<Phase> phaseOf(const std::string& ph) {
  if (ph == "X") return Phase::Complete;
  if (ph == "i" || ph == "I") return Phase::Instant;
  if (ph == "C") return Phase::Counter;
  if (ph == "s") return Phase::FlowStart;
  if (ph == "f") return Phase::FlowEnd;
  if (ph == "M") return Phase::Metadata;
  return std::nullopt;
}

std::string plainReason(std::string what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    const std::size_t tagEnd = what.find("] ");
    if (tagEnd != std::string::npos) what.erase(0, tagEnd + 2);
  }
  if (what.rfind("parse error", 0) == 0) {
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what.erase(0, colon + 2);
  }
  return what;
}

}  // namespace kinetrace::detail
