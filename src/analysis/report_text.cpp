#include "analysis/report_text.h"

#include <fmt/format.h>

#include "support/text.h"

namespace kinetrace::detail::report_text {
namespace {

// |n| of any int64, INT64_MIN included (whose negation does not fit an int64).
uint64_t magnitude(int64_t n) {
  return n < 0 ? uint64_t{0} - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
}

}  // namespace

std::string duration(int64_t ns) {
  const double v = static_cast<double>(magnitude(ns));
  const uint64_t m = magnitude(ns);
  const char* sign = ns < 0 ? "-" : "";
  if (m < 10'000) return fmt::format("{}{:.2f} us", sign, v / 1e3);
  if (m < 1'000'000) return fmt::format("{}{:.1f} us", sign, v / 1e3);
  if (m < 10'000'000'000) return fmt::format("{}{:.2f} ms", sign, v / 1e6);
  return fmt::format("{}{:.2f} s", sign, v / 1e9);
}

std::string percent(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%",
                                 100.0 * static_cast<double>(part) / static_cast<double>(whole))
                   : "-";
}

std::string count(uint64_t n) {
  return withThousands(n);
}

std::string counted(uint64_t n, std::string_view one, std::string_view many) {
  return withThousands(n) + " " + std::string(n == 1 ? one : many);
}

std::string bytes(int64_t b) {
  const double v = static_cast<double>(b);
  if (magnitude(b) < 1'000'000) return fmt::format("{:.1f} kB", v / 1e3);
  if (magnitude(b) < 1'000'000'000) return fmt::format("{:.1f} MB", v / 1e6);
  return fmt::format("{:.2f} GB", v / 1e9);
}

std::string shorten(const std::string& name, std::size_t width) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

std::string who(const RankReport& r, std::size_t index) {
  return r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("trace {}", index + 1);
}

std::string share(double fraction) {
  return fmt::format("{:.0f}%", 100 * fraction);
}

}  // namespace kinetrace::detail::report_text
