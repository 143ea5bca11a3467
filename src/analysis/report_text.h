#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/trace_analysis.h"

// The figures of `kinetrace analyze`'s text as people read them: what the text report and the
// findings' sentences share.

namespace kinetrace::detail::report_text {

// "9.87 us", "123.4 us", "4.56 ms", "7.89 s"; a negative one signed.
std::string duration(int64_t ns);
// `part` of `whole`, "12.3%"; "-" of no whole.
std::string percent(int64_t part, int64_t whole);
// "1,234,567".
std::string count(uint64_t n);
// "1 thread", "2,048 threads": a count with its noun, singular or plural.
std::string counted(uint64_t n, std::string_view one, std::string_view many);
// "12.3 kB", "4.5 MB", "1.23 GB".
std::string bytes(int64_t b);
// At most `width` letters, "..." where cut.
std::string shorten(const std::string& name, std::size_t width = 70);
// "rank 3"; "trace 2" for a trace without a rank (`index`: its place in the report).
std::string who(const RankReport& r, std::size_t index);
// A share of 1 as a whole percentage, "42%".
std::string share(double fraction);

}  // namespace kinetrace::detail::report_text
