#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/trace_analysis.h"

// The pieces of `kinetrace analyze --html`'s page: text helpers and the charts, each drawn
// as inline SVG with its numbers written on it (axes with units, value labels), so nothing
// needs a hover or a script to be read. Charts over time share one horizontal layout
// (kTimeLeft, kTimePlot), so the GPU timeline, queue depth and memory line up bin for bin.

namespace kinetrace::detail::html {

std::string escape(std::string_view text);
// The report's style sheet (<style>...</style>), for every page written in its style.
std::string_view pageStyle();
// A sentence written for the terminal (a finding's), as HTML: escaped, and its `code` spans
// set as <code>, never left as backticks. A backtick without its pair (one in a name the
// trace holds) is kept as it is.
std::string sentenceHtml(std::string_view text);
// Durations in the unit that fits them ("3.00 us", "12.5 ms"), as the text report writes.
std::string duration(int64_t ns);
// A moment as the time since the trace's start, as duration() writes it; the start itself
// with its unit too ("0.00 us"), where an amount of nothing is a plain "0".
std::string sinceStart(int64_t ns);
// Bytes in the unit that fits them: kB, MB or GB.
std::string bytes(int64_t b);
std::string percent(int64_t part, int64_t whole);

// A kernel's name for display: template arguments and argument lists left out, and the
// namespaces ("void at::native::vectorized_elementwise_kernel<4, ...>(...)" ->
// "vectorized_elementwise_kernel"); a generic wrapper keeps its first template argument
// ("cutlass::Kernel2<cutlass_80_..._align8>(...)" -> "Kernel2<cutlass_80_..._align8>").
// Names that are not C++ declarations ("Memcpy HtoD (Pageable -> Device)") are kept.
std::string shortKernelName(std::string_view name);
// `text` cut to `width` characters, with an ellipsis.
std::string clip(std::string_view text, std::size_t width);
// HTML: the short form of a name shown, the full name on hover. A name is one long word
// ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"), so it may break after its
// "_", "::", ".", "/" and "," (<wbr>) where a narrow column needs it, not mid-part.
std::string nameHtml(std::string_view full, std::size_t width = 80, bool kernel = true);

// The parts of a time breakdown, in the order and colours every chart and table uses.
struct Part {
  const char* name;
  const char* heading;  // short, for a table's column
  const char* colour;
  const char* textColour;  // for a value written on a bar of that colour
  int64_t TimeBreakdown::*field;
};
// The first kBusyParts are busy time, the rest idle time.
constexpr std::size_t kBusyParts = 3;
constexpr std::size_t kPartCount = 9;
extern const Part kParts[kPartCount];

// One stacked horizontal bar per row, each part's share of the row's window written on it
// where it fits, with a 0-100% axis.
std::string breakdownBars(std::string_view chart,
                          const std::vector<std::pair<std::string, TimeBreakdown>>& rows);
// How busy each GPU was, bin by bin, on the window's time axis: a row per GPU, each with a
// 0-100% y axis.
std::string timelineChart(const RankReport& r);
// Queue depth over time, a row per stream (at most `maxStreams`, the busiest), on the same
// axis, each row with a y axis of operations to its most; "" when no stream had a launch call
// to count.
std::string queueDepthChart(const RankReport& r, std::size_t maxStreams);
// Allocated memory on the same axis, with a y axis in the unit that fits and the peak's
// value above the plot, where the line never crosses it.
std::string memoryChart(const RankReport& r);
// Each kind of copy's bandwidth on the same axis, a row per kind: the time-weighted mean of
// each slice (CopyBandwidthReport); "" when the trace has no copies.
std::string copyBandwidthChart(const RankReport& r);
// Launch latencies by power-of-two bucket, counts on the bars and on a y axis.
std::string latencyHistogram(const RankReport& r);

}  // namespace kinetrace::detail::html
