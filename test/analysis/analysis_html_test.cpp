// What the HTML report shows, checked without a browser: short kernel names with the full
// name kept for hover, the queue-depth time series it draws, the tables of the text report,
// memory in the unit that fits on the window's time axis, and what it says when a trace has
// no steps; the findings' terminal markup (`code`, flags) turned into what a page says, the
// over-time charts' y axes, the memory peak's label clear of its line, and the idle gaps'
// table without empty cells. (test/analysis/html_report_in_browser.sh checks the rendered
// page's layout.)

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/analysis_html_charts.h"
#include "analysis/trace_analysis.h"
#include "analysis_trace_builder.h"

namespace kinetrace::detail {
namespace {

TEST(ShortKernelNameTest, DropsTemplateArgumentsArgumentListsAndNamespaces) {
  const std::pair<const char*, const char*> cases[] = {
      {"void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, "
       "at::detail::Array<char*, 3>)",
       "vectorized_elementwise_kernel"},
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
       "ncclDevKernel_AllReduce_Sum_f32_RING_LL"},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, "
       "false>(float*, float const*, int, int, int, bool const*, int, bool)",
       "softmax_warp_forward"},
      {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
       "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()"
       "() const::{lambda(float)#1}>(at::TensorIteratorBase&, ...)::{lambda(int)#1}>(int, "
       "...)",
       "elementwise_kernel"},
      // A wrapper's name says nothing; its first template argument does.
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_"
       "align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8::Params)",
       "Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8>"},
      {"void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::Kernel_traits<128>, true> "
       ">(flash::FlashAttnFwdSm90<flash::Kernel_traits<128>, true>::Params)",
       "device_kernel<FlashAttnFwdSm90>"},
      // Not declarations: kept whole.
      {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32",
       "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"},
      {"triton_poi_fused_add_0", "triton_poi_fused_add_0"},
      {"Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"},
      {"Memset (Device)", "Memset (Device)"},
      // Cut off inside its arguments (a name past the trace's limit): what came before.
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float", "reduce_kernel"},
  };
  for (const auto& [full, shown] : cases) EXPECT_EQ(html::shortKernelName(full), shown) << full;
}

TEST(HtmlTextTest, BytesAndDurationsTakeTheUnitThatFits) {
  EXPECT_EQ(html::bytes(400), "400 B");
  EXPECT_EQ(html::bytes(2'400), "2.4 kB");
  EXPECT_EQ(html::bytes(118'000'000), "118.0 MB");
  EXPECT_EQ(html::bytes(80'000'000'000), "80.00 GB");
  EXPECT_EQ(html::duration(3'000), "3.00 us");
  EXPECT_EQ(html::duration(753'530'000), "753.5 ms");
  // No bare "0": a time has its unit ("communication 0" read as a count).
  EXPECT_EQ(html::duration(0), "0 us");
  EXPECT_EQ(html::duration(INT64_MIN), "-9223372036.85 s") << "no overflow negating it";
  EXPECT_EQ(html::nameHtml("void k<int>(int)"),
            "<span class=\"name\" title=\"void k&lt;int&gt;(int)\">k</span>");
  // The start of the trace with its unit, as any other moment.
  EXPECT_EQ(html::sinceStart(0), "0.00 us");
  EXPECT_EQ(html::sinceStart(12'340'000), "12.3 ms");
}

TEST(HtmlTextTest, SentencesSetTheirCodeSpansAsCode) {
  EXPECT_EQ(html::sentenceHtml("record them with `kinetrace run --torch` & `a<b>`, then look"),
            "record them with <code>kinetrace run --torch</code> &amp; <code>a&lt;b&gt;</code>, "
            "then look");
  EXPECT_EQ(html::sentenceHtml("`at the start` and at the end: `x`"),
            "<code>at the start</code> and at the end: <code>x</code>");
  // A backtick without its pair is a name's own character: kept, escaped as the rest.
  EXPECT_EQ(html::sentenceHtml("range `a<b> ended"), "range `a&lt;b&gt; ended");
}

TEST(HtmlTextTest, LongNamesBreakAtTheirPartsOnly) {
  EXPECT_EQ(html::nameHtml("sm90_xmma_gemm_f32f32_tn_n", 80),
            "<span>sm90_<wbr>xmma_<wbr>gemm_<wbr>f32f32_<wbr>tn_<wbr>n</span>");
  // After "::" and "__" as a whole, never inside an entity, and a clipped name's "..." whole.
  EXPECT_EQ(html::nameHtml("at::native<T>::__next__", 80, false),
            "<span>at::<wbr>native&lt;T&gt;::<wbr>__<wbr>next__</span>");
  EXPECT_EQ(html::nameHtml("a_b_c_d_e_f_g_h", 10, false),
            "<span class=\"name\" title=\"a_b_c_d_e_f_g_h\">a_<wbr>b_<wbr>c_<wbr>d...</span>");
}

// A 240 us window (one bin a microsecond): three kernels queued at 10, 11 and 12 us on
// stream 7, started at 20, 30 and 40 us; one on stream 9 waiting from 100 to 105 us. No
// step ranges; 400 bytes allocated at 60 us, 2,400 at 200 us.
AnalysisReport queuedTrace() {
  const std::string add =
      "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>";
  TraceBuilder t;
  t.range("main", 0, 240);
  t.op(add, 10, 11, 20, 30);
  t.op(add, 11, 12, 30, 40);
  t.op("gemm", 12, 13, 40, 50);
  t.op("gemm", 100, 101, 105, 110, "kernel", 9);
  t.memory(60, 400).memory(200, 2'400);
  return analyzeTraces(one(t.take()), AnalysisOptions{});
}

TEST(QueueDepthTimelineTest, HoldsTheMostQueuedInEachBinPerStream) {
  const AnalysisReport report = queuedTrace();
  const RankReport& r = report.ranks.at(0);
  ASSERT_EQ(r.devices.size(), 1u);
  ASSERT_EQ(r.devices[0].timelineBinNs, 1 * kUs);
  ASSERT_EQ(r.queueDepthTimelines.size(), 2u);
  const QueueDepthTimeline& seven = r.queueDepthTimelines[0];
  EXPECT_EQ(seven.stream, 7u);
  ASSERT_EQ(seven.maxDepth.size(), static_cast<std::size_t>(DeviceReport::kTimelineBins));
  std::vector<int> expected(DeviceReport::kTimelineBins, 0);
  expected[10] = 1;
  expected[11] = 2;
  for (int b = 12; b < 20; ++b) expected[b] = 3;
  for (int b = 20; b < 30; ++b) expected[b] = 2;
  for (int b = 30; b < 40; ++b) expected[b] = 1;
  EXPECT_EQ(seven.maxDepth, expected);
  const QueueDepthTimeline& nine = r.queueDepthTimelines[1];
  EXPECT_EQ(nine.stream, 9u);
  std::vector<int> nineExpected(DeviceReport::kTimelineBins, 0);
  for (int b = 100; b < 105; ++b) nineExpected[b] = 1;
  EXPECT_EQ(nine.maxDepth, nineExpected);

  // The JSON report carries the series, with its bins' start and width.
  const nlohmann::json json = nlohmann::json::parse(reportJson(report));
  const nlohmann::json& series = json["ranks"][0]["queue_depth_timeline"];
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0]["stream"], 7);
  EXPECT_EQ(series[0]["bin_ns"], 1 * kUs);
  EXPECT_EQ(series[0]["start_ns"], kBase);
  EXPECT_EQ(series[0]["max_depth"][15], 3);
}

TEST(HtmlReportTest, ShowsTheTablesChartsAndWhatATraceWithoutStepsLacks) {
  const std::string page = reportHtml(queuedTrace(), AnalysisOptions{});
  for (const char* chart : {"gpu-time", "timeline", "queue-depth", "memory", "launch-latency"}) {
    EXPECT_NE(page.find(std::string("data-chart=\"") + chart + "\""), std::string::npos) << chart;
  }
  EXPECT_EQ(page.find("data-chart=\"steps\""), std::string::npos);
  EXPECT_NE(page.find("No step ranges in this trace"), std::string::npos);
  for (const char* heading : {"<th>queue depth, most</th>", "<th>share of GPU operation time</th>",
                              "<h3>Tiny kernels</h3>", "<th>issued from (host range)</th>"}) {
    EXPECT_NE(page.find(heading), std::string::npos) << heading;
  }
  // Short names, the full one on hover.
  EXPECT_NE(page.find("title=\"void at::native::vectorized_elementwise_kernel&lt;4, "
                      "at::native::AddFunctor&lt;float&gt;&gt;\">vectorized_<wbr>elementwise_<wbr>"
                      "kernel<"),
            std::string::npos);
  // Memory in kB, on the window's axis: the memory chart's last tick is the timeline's.
  EXPECT_NE(page.find("peak 2.4 kB"), std::string::npos);
  EXPECT_NE(page.find(">3 kB</text>"), std::string::npos);
  auto lastTick = [&page](const std::string& chart) {
    const std::size_t from = page.find("data-chart=\"" + chart + "\"");
    const std::size_t to = page.find("</svg>", from);
    const std::size_t tick = page.rfind("class=\"tick\"", to);
    const std::size_t open = page.find('>', tick) + 1;
    return tick > from ? page.substr(open, page.find('<', open) - open) : std::string();
  };
  EXPECT_EQ(lastTick("timeline"), "240 us");
  EXPECT_EQ(lastTick("memory"), "240 us");
  EXPECT_EQ(lastTick("queue-depth"), "240 us");
  // How to see every event.
  EXPECT_NE(page.find("https://ui.perfetto.dev"), std::string::npos);
  EXPECT_NE(page.find("kinetrace convert t.json trace.pftrace"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
}

// The SVG of one chart of the page; "" where it has none.
std::string chartOf(const std::string& page, const std::string& chart) {
  const std::size_t from = page.find("<svg class=\"chart\" data-chart=\"" + chart + "\"");
  if (from == std::string::npos) return "";
  return page.substr(from, page.find("</svg>", from) - from);
}

// The text of a chart's labels, in the order drawn.
std::vector<std::string> labelsOf(const std::string& svg) {
  std::vector<std::string> labels;
  for (std::size_t at = svg.find("<text "); at != std::string::npos;
       at = svg.find("<text ", at + 1)) {
    const std::size_t open = svg.find('>', at) + 1;
    labels.push_back(svg.substr(open, svg.find('<', open) - open));
  }
  return labels;
}

// A numeric attribute of the element that starts at `at` ("y" of a <text>).
double attributeOf(const std::string& svg, std::size_t at, const std::string& name) {
  const std::size_t value = svg.find(" " + name + "=\"", at) + name.size() + 3;
  return std::stod(svg.substr(value, svg.find('"', value) - value));
}

bool has(const std::vector<std::string>& labels, const std::string& label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

TEST(HtmlReportTest, FindingsShowCodeAsCodeNotBackticks) {
  // No step ranges: the finding that says how to mark them names `kinetrace run`.
  const std::string page = reportHtml(queuedTrace(), AnalysisOptions{});
  EXPECT_NE(page.find("<code>kinetrace run</code>"), std::string::npos);
  EXPECT_EQ(page.find('`'), std::string::npos) << page.substr(page.find('`') - 60, 120);
}

// Eight steps of 100 us, each with a kernel launched in 1 us; in the last, three wait 300 us
// behind a long one: launch latency's p99 far above its median.
AnalysisReport stepsAndOutliersTrace() {
  TraceBuilder t;
  for (int k = 0; k < 8; ++k) {
    const int64_t at = k * 100;
    t.range("ProfilerStep#" + std::to_string(k), at, at + 100);
    for (int i = 0; i < 8; ++i)
      t.op("gemm", at + i * 10, at + i * 10 + 1, at + i * 10 + 1, at + i * 10 + 5);
  }
  t.op("long", 800, 801, 801, 1'200);
  for (int i = 0; i < 3; ++i) t.op("queued", 802 + i, 803 + i, 1'200 + i * 2, 1'201 + i * 2);
  AnalysisOptions options;
  options.stepsShown = 3;
  return analyzeTraces(one(t.take()), options);
}

TEST(HtmlReportTest, NamesNoCommandLineFlagOfTheReport) {
  const AnalysisReport report = stepsAndOutliersTrace();
  ASSERT_TRUE(std::any_of(report.findings.begin(), report.findings.end(),
                          [](const Finding& f) { return f.id == "launch-latency-outliers"; }));
  AnalysisOptions options;
  options.stepsShown = 3;
  const std::string page = reportHtml(report, options);
  EXPECT_EQ(page.find("--json"), std::string::npos) << page.substr(page.find("--json") - 80, 100);
  EXPECT_NE(page.find("the first 3 of 8 steps, all of them in the JSON report"), std::string::npos);
  EXPECT_NE(page.find("the JSON report&#39;s <code>launch_latency.outliers</code>"),
            std::string::npos);
}

TEST(HtmlReportTest, OverTimeChartsHaveALabelledYAxis) {
  const std::string page = reportHtml(queuedTrace(), AnalysisOptions{});
  // Busy time: a 0-100% axis per GPU, named.
  const std::vector<std::string> timeline = labelsOf(chartOf(page, "timeline"));
  for (const char* label : {"busy", "0%", "50%", "100%"})
    EXPECT_TRUE(has(timeline, label)) << label;
  // Queue depth: operations, each stream to its most (stream 7: 3, stream 9: 1), named.
  const std::string queue = chartOf(page, "queue-depth");
  const std::vector<std::string> queueLabels = labelsOf(queue);
  EXPECT_TRUE(has(queueLabels, "operations queued"));
  std::vector<std::string> ticks;
  for (std::size_t at = queue.find("class=\"tick\""); at != std::string::npos;
       at = queue.find("class=\"tick\"", at + 1)) {
    const std::size_t open = queue.find('>', at) + 1;
    ticks.push_back(queue.substr(open, queue.find('<', open) - open));
  }
  // Stream 7's axis, stream 9's, then the time axis.
  ASSERT_GE(ticks.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(ticks.begin(), ticks.begin() + 6),
            (std::vector<std::string>{"0", "1", "2", "3", "0", "1"}));
}

TEST(HtmlReportTest, TheMemoryPeakLabelIsClearOfTheLine) {
  const std::string svg = chartOf(reportHtml(queuedTrace(), AnalysisOptions{}), "memory");
  const std::size_t label = svg.rfind("<text ", svg.find(">peak 2.4 kB<"));
  ASSERT_NE(label, std::string::npos);
  // The line's highest point (the smallest y), and the label's baseline above it with room
  // for its descent.
  const std::size_t points = svg.find("points=\"", svg.find("<polyline")) + 8;
  std::istringstream list(svg.substr(points, svg.find('"', points) - points));
  double highest = 1e9;
  for (std::string point; list >> point;)
    highest = std::min(highest, std::stod(point.substr(point.find(',') + 1)));
  EXPECT_LT(attributeOf(svg, label, "y") + 4, highest);
}

TEST(HtmlReportTest, IdleGapsSayWhenWithAUnitAndLeaveNoCellEmpty) {
  const std::string page = reportHtml(queuedTrace(), AnalysisOptions{});
  const std::size_t from = page.find("<h3>Longest idle gaps</h3>");
  ASSERT_NE(from, std::string::npos);
  const std::string gaps = page.substr(from, page.find("</table>", from) - from);
  // Nothing was found in this trace's gaps (no synchronisation records): no such column.
  EXPECT_EQ(gaps.find("found in the trace"), std::string::npos);
  EXPECT_EQ(gaps.find("<td></td>"), std::string::npos);
  EXPECT_NE(gaps.find("<th>from trace start</th>"), std::string::npos);
  // The gap before the first operation starts the window: at "0.00 us", not a bare "0".
  EXPECT_NE(gaps.find("<td class=\"n\">0.00 us</td>"), std::string::npos);
  EXPECT_EQ(gaps.find("<td class=\"n\">0</td>"), std::string::npos);
}

TEST(HtmlReportTest, TablesScrollInTheirOwnBoxAndOnlyNamesBreakInsideAWord) {
  const std::string page = reportHtml(queuedTrace(), AnalysisOptions{});
  std::size_t tables = 0;
  for (std::size_t at = page.find("<table"); at != std::string::npos;
       at = page.find("<table", at + 1)) {
    ++tables;
    EXPECT_EQ(page.rfind("<div class=\"scroll\">", at), at - 20) << page.substr(at, 80);
  }
  EXPECT_GT(tables, 5u);
  EXPECT_NE(page.find("div.scroll { overflow-x: auto;"), std::string::npos);
  // Ordinary text breaks between words; a kernel's name may inside it, at its parts.
  EXPECT_EQ(page.find("overflow-wrap: anywhere"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"name\"><span class=\"name\" title=\"void "
                      "at::native::vectorized_elementwise_kernel"),
            std::string::npos);
}

}  // namespace
}  // namespace kinetrace::detail

namespace kinetrace::detail {
namespace {

// A trace recorded without a GPU was a near-empty page ("No GPU operations in this trace"):
// it shows why, and the host's steps, ranges and threads.
TEST(HostOnlyReportTest, ShowsWhyThereIsNoGpuActivityAndWhatTheHostDid) {
  TraceBuilder b;
  b.threadName(1, "main").threadName(2, "data loader");
  for (int64_t step = 0; step < 3; ++step) {
    b.range("ProfilerStep#" + std::to_string(step), step * 100, step * 100 + 90);
    b.range("load batch", step * 100, step * 100 + 80, 0, "user_annotation", 2);
  }
  const AnalysisReport report =
      analyzeTraces(one(b.take({{"kinetrace_gpu_status", "no NVIDIA driver: <libcuda>"}})), {});
  const std::string page = reportHtml(report, {});
  EXPECT_EQ(page.find("No GPU operations in this trace"), std::string::npos);
  EXPECT_NE(page.find("The recorder says why: no NVIDIA driver: &lt;libcuda&gt;."),
            std::string::npos)
      << "said, and escaped";
  EXPECT_NE(page.find("6 ranges on 2 threads over 290.0 us"), std::string::npos) << page;
  EXPECT_NE(page.find("<h4>Steps (3)</h4>"), std::string::npos);
  EXPECT_NE(page.find("<h4>Ranges by total time</h4>"), std::string::npos);
  EXPECT_NE(page.find("<h4>Threads by time inside a range</h4>"), std::string::npos);
  EXPECT_NE(page.find("data loader"), std::string::npos);
}

}  // namespace
}  // namespace kinetrace::detail
