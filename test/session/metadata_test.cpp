#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "kinetrace/sink.h"
#include "model/trace_data.h"
#include "session/metadata.h"
#include "session/session_support.h"
#include "support/test_support.h"

// Metadata a program adds: to the Profiler (before the start it goes before the events,
// while recording after them) and to a finished Trace (kept by later saves, never seen by a
// copy taken before).

namespace kinetrace {
namespace {

using testing::errorOf;
using testing::fileContents;
using testing::hostOnly;
using testing::metadataValue;
using testing::TempDir;

TEST(MetadataTest, TraceMetadataAddedAfterStopIsKeptByLaterSavesAndNotSeenByEarlierCopies) {
  Profiler profiler(hostOnly());
  profiler.start();
  { Range range("step"); }
  Trace trace = profiler.stop();
  const Trace before = trace;
  trace.addMetadata("model", "resnet50");
  trace.addMetadata("model", "resnet101");  // replaces
  trace.addMetadataJson("distributed", R"({"rank": 3, "world_size": 8})");

  TempDir dir;
  const std::string path = (dir / "trace.json").string();
  trace.save(path);
  const std::string text = fileContents(path);
  const nlohmann::json root = nlohmann::json::parse(text);
  EXPECT_EQ(root["model"], "resnet101");
  EXPECT_EQ(root["distributed"]["rank"], 3);
  EXPECT_EQ(text.find("resnet50"), std::string::npos) << "one value per key";
  EXPECT_GT(text.find("\"model\""), text.find("\"traceEvents\""));

  MemorySink sink;
  trace.writeTo(sink);
  ASSERT_NE(sink.metadata("model"), nullptr);
  EXPECT_EQ(*sink.metadata("model"), Value("resnet101"));
  EXPECT_EQ(metadataValue(trace.metadata(), "model"), Value("resnet101"));

  // The copy taken before holds the same events and none of the later metadata.
  MemorySink earlier;
  before.writeTo(earlier);
  EXPECT_EQ(earlier.metadata("model"), nullptr);
  EXPECT_TRUE(metadataValue(before.metadata(), "model").isNull());
  EXPECT_EQ(earlier.events().size(), sink.events().size());
  const std::string copyPath = (dir / "before.json").string();
  before.save(copyPath);
  EXPECT_EQ(fileContents(copyPath).find("\"model\""), std::string::npos);
}

TEST(MetadataTest, InvalidJsonMetadataIsAnErrorNamingTheKey) {
  Trace trace;
  const std::string message = errorOf([&] { trace.addMetadataJson("config", "{rank: 3"); });
  EXPECT_NE(message.find("\"config\""), std::string::npos) << message;
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
}

TEST(MetadataTest, ProfilerMetadataBeforeStartPrecedesTheEventsAndDuringRecordingFollowsThem) {
  TempDir dir;
  const std::string path = (dir / "trace.json").string();
  Profiler profiler(hostOnly());
  profiler.addMetadata("before_start", "job 17");
  profiler.start(path);
  { Range range("step"); }
  profiler.addMetadata("while_recording", 42);
  Trace trace = profiler.stop();

  const std::string text = fileContents(path);
  const std::size_t events = text.find("\"traceEvents\"");
  ASSERT_NE(events, std::string::npos);
  ASSERT_NE(text.find("\"before_start\""), std::string::npos);
  ASSERT_NE(text.find("\"while_recording\""), std::string::npos);
  EXPECT_LT(text.find("\"before_start\""), events) << "readers that stop at traceEvents see it";
  EXPECT_GT(text.find("\"while_recording\""), events);
  const nlohmann::json root = nlohmann::json::parse(text);
  EXPECT_EQ(root["before_start"], "job 17");
  EXPECT_EQ(root["while_recording"], 42);
  EXPECT_EQ(metadataValue(trace.metadata(), "while_recording"), Value(42));

  // Both stay for later recordings, each where it was first written: a value given while
  // recording (NVTX counts, say) may change in every window, so it keeps coming at the end.
  profiler.start();
  Trace next = profiler.stop();
  MemorySink sink;
  next.writeTo(sink);
  EXPECT_EQ(metadataValue(sink.header().metadata, "before_start"), Value("job 17"));
  EXPECT_EQ(metadataValue(sink.footer(), "while_recording"), Value(42));
  EXPECT_EQ(metadataValue(sink.header().metadata, "while_recording"), Value())
      << "written once, after the events";
}

TEST(MetadataTest, KinetracesOwnKeysWinOverTheUsers) {
  Profiler profiler(hostOnly());
  profiler.addMetadata("kinetrace_memory_cap_bytes", "mine");
  profiler.start();
  profiler.addMetadata("kinetrace_record_counts", "mine too");
  Trace trace = profiler.stop();
  const Metadata metadata = trace.metadata();
  EXPECT_EQ(metadataValue(metadata, "kinetrace_memory_cap_bytes"), Value(uint64_t{1024} << 20));
  EXPECT_EQ(metadataValue(metadata, "kinetrace_record_counts").kind(), Value::Kind::Object);
}

// The clock offset bound is given for the trace and for each device, whose clock is
// converted on its own.
TEST(MetadataTest, TheClockOffsetBoundIsGivenPerDeviceToo) {
  detail::TraceData trace;
  trace.clockBounds.atMost(30);
  trace.clockBounds.atLeast(-50);
  detail::ClockOffsetBound first;
  first.atMost(50);
  first.atLeast(-200);
  detail::ClockOffsetBound second;
  second.atMost(30);
  trace.clockBounds.devices = {{0, first}, {1, second}};
  const Metadata footer = detail::footerMetadata(trace, {}, {});
  const Value bound = metadataValue(footer, "kinetrace_gpu_clock_offset_bound_ns");
  ASSERT_EQ(bound.kind(), Value::Kind::Object);
  EXPECT_EQ(*bound.find("low"), Value(int64_t{-50}));
  EXPECT_EQ(*bound.find("high"), Value(int64_t{30}));
  const Value* devices = bound.find("devices");
  ASSERT_NE(devices, nullptr);
  ASSERT_EQ(devices->asArray().size(), 2u);
  const Value& one = devices->asArray()[0];
  EXPECT_EQ(*one.find("device"), Value(int64_t{0}));
  EXPECT_EQ(*one.find("low"), Value(int64_t{-200}));
  EXPECT_EQ(*one.find("high"), Value(int64_t{50}));
  const Value& two = devices->asArray()[1];
  EXPECT_EQ(*two.find("device"), Value(int64_t{1}));
  EXPECT_EQ(two.find("low"), nullptr) << "no synchronisation bounded device 1 from below";
}

TEST(MetadataTest, GpuMetricsSayWhatWasSampledAndWhatSamplingLost) {
  detail::TraceData trace;
  EXPECT_EQ(metadataValue(detail::footerMetadata(trace, {}, {}), "kinetrace_gpu_metrics").kind(),
            Value::Kind::Null)
      << "no key when no metric was sampled";
  trace.tables.gpuMetrics.metrics = {
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput",
       detail::MetricUnit::Percent},
      {"dram__bytes_read.sum.per_second", "DRAM read", detail::MetricUnit::BytesPerSecond}};
  trace.tables.gpuMetrics.intervalNs = 1'000'000;
  trace.counts[detail::RecordKind::MetricSample] = 600;
  trace.losses.gpuMetricSamplesLost = 3;
  trace.losses.gpuMetricSamplesCorrupted = 2;
  trace.losses.gpuMetricSetupSamplesDropped = 1;
  trace.losses.kernelsWithoutTheirSamples = 4;
  trace.losses.kernelsWhoseSamplesWereLetGo = 2;
  trace.losses.kernelsWhoseSamplesCameLate = 1;
  const Value metrics =
      metadataValue(detail::footerMetadata(trace, {}, {}), "kinetrace_gpu_metrics");
  ASSERT_EQ(metrics.kind(), Value::Kind::Object);
  const Value* list = metrics.find("metrics");
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(list->asArray().size(), 2u);
  const Value& dram = list->asArray()[1];
  EXPECT_EQ(*dram.find("name"), Value("dram__bytes_read.sum.per_second"));
  EXPECT_EQ(*dram.find("display_name"), Value("DRAM read"));
  EXPECT_EQ(*dram.find("unit"), Value("bytes/s"));
  EXPECT_EQ(*list->asArray()[0].find("unit"), Value("%"));
  EXPECT_EQ(*metrics.find("interval_ns"), Value(int64_t{1'000'000}));
  EXPECT_EQ(*metrics.find("samples"), Value(uint64_t{600}));
  EXPECT_EQ(*metrics.find("lost"), Value(uint64_t{3}));
  EXPECT_EQ(*metrics.find("corrupted"), Value(uint64_t{2}));
  EXPECT_EQ(*metrics.find("setup_dropped"), Value(uint64_t{1}));
  EXPECT_EQ(*metrics.find("kernels_without_their_samples"), Value(uint64_t{4}));
  const Value* because = metrics.find("kernels_without_their_samples_because");
  ASSERT_NE(because, nullptr);
  EXPECT_EQ(*because->find("let_go"), Value(uint64_t{2}));
  EXPECT_EQ(*because->find("late"), Value(uint64_t{1}));
  EXPECT_EQ(*because->find("memory_cap"), Value(uint64_t{1}));
}

// User metadata counts against the memory cap: past its share (an eighth of the cap) an
// entry is refused, counted in the trace and warned about once; the next trace counts anew.
TEST(MetadataTest, UserMetadataPastItsShareOfTheCapIsRefusedCountedAndWarnedOnce) {
  Config config = hostOnly();
  config.memoryMb = 1;  // a 128 KiB share
  Profiler profiler(config);
  const std::string big(64 << 10, 'm');
  testing::StderrCapture err;
  for (int i = 0; i < 100; ++i) profiler.addMetadata("key" + std::to_string(i), big);  // 6.4 MB
  profiler.start();
  profiler.addMetadata("while recording", big);
  Trace trace = profiler.stop();
  const std::string said = err.text();

  const Metadata metadata = trace.metadata();
  uint64_t kept = 0;
  for (int i = 0; i < 100; ++i)
    kept += metadataValue(metadata, "key" + std::to_string(i)).isNull() ? 0 : 1;
  EXPECT_GE(kept, 1u) << "what fits is kept";
  EXPECT_LE(kept * big.size(), (std::size_t{1} << 20) / 8);
  EXPECT_TRUE(metadataValue(metadata, "while recording").isNull());
  EXPECT_EQ(trace.stats().droppedMetadata, 101 - kept);
  EXPECT_EQ(testing::unsignedOf(metadataValue(metadata, "kinetrace_dropped_metadata")), 101 - kept);
  EXPECT_LE(trace.stats().peakMemoryBytes, trace.stats().memoryCapBytes);
  EXPECT_EQ(said.find("addMetadata(\"key"), said.rfind("addMetadata(\"key")) << said;
  EXPECT_NE(said.find("refused, user metadata would pass its share of the memory cap (128 KiB of "
                      "memory_mb=1)"),
            std::string::npos)
      << said;

  profiler.addMetadata("key0", "small");  // replacing a kept entry frees its room
  profiler.start();
  Trace next = profiler.stop();
  EXPECT_EQ(next.stats().droppedMetadata, 0u);
  EXPECT_EQ(metadataValue(next.metadata(), "key0").asString(), "small");
}

}  // namespace
}  // namespace kinetrace
