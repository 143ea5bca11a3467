// What the HTML report shows, checked without a browser: short kernel names with the full
// name kept for hover, the queue-depth time series it draws, the tables of the text report,
// memory in the unit that fits on the window's time axis, and what it says when a trace has
// no steps. (test/analysis/html_report_in_browser.sh checks the rendered page's layout.)

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
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
  EXPECT_EQ(html::nameHtml("void k<int>(int)"),
            "<span class=\"name\" title=\"void k&lt;int&gt;(int)\">k</span>");
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
                      "at::native::AddFunctor&lt;float&gt;&gt;\">vectorized_elementwise_kernel<"),
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

}  // namespace
}  // namespace kinetrace::detail
