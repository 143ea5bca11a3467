#include "analysis/summary.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "kinetrace/error.h"
#include "output/summary_builder.h"
#include "support/temp_dir.h"

namespace kinetrace::detail {
namespace {

constexpr int64_t kMs = 1000000;

// A trace with a 100 ms window starting at t0, built record by record.
class TraceBuilder {
 public:
  TraceBuilder() {
    trace.startNs = t0;
    trace.stopNs = t0 + 100 * kMs;
    trace.tables.pid = 4242;
  }
  TraceBuilder& kernel(const char* name, int64_t startMs, int64_t endMs, uint32_t device = 0,
                       uint32_t stream = 7) {
    KernelRecord k;
    k.at = place(startMs, endMs, device, stream);
    k.name = trace.tables.strings.intern(name);
    trace.records.kernels.push_back(k);
    return *this;
  }
  TraceBuilder& memcpy(CopyKind kind, uint64_t bytes, int64_t startMs, int64_t endMs,
                       uint32_t device = 0) {
    MemcpyRecord m;
    m.at = place(startMs, endMs, device, 7);
    m.bytes = bytes;
    m.copyKind = kind;
    trace.records.memcpys.push_back(m);
    return *this;
  }
  TraceBuilder& memset(uint64_t bytes, int64_t startMs, int64_t endMs) {
    MemsetRecord m;
    m.at = place(startMs, endMs, 0, 7);
    m.bytes = bytes;
    m.memoryKind = MemoryKind::Device;
    trace.records.memsets.push_back(m);
    return *this;
  }

  const int64_t t0 = 1'700'000'000'000'000'000;
  TraceData trace;

 private:
  GpuPlacement place(int64_t startMs, int64_t endMs, uint32_t device, uint32_t stream) {
    GpuPlacement at;
    at.startNs = t0 + startMs * kMs;
    at.endNs = t0 + endMs * kMs;
    at.deviceId = device;
    at.streamId = stream;
    return at;
  }
};

TEST(SummaryTest, OverlappingKernelsCountOnceTowardBusyTime) {
  TraceBuilder b;
  b.kernel("a", 10, 30).kernel("b", 20, 40, 0, 8).kernel("c", 50, 60);
  Summary s = summarize(b.trace);
  EXPECT_EQ(s.windowNs, 100 * kMs);
  EXPECT_EQ(s.kernelBusyNs, 40 * kMs);  // [10,40] and [50,60]
  EXPECT_EQ(s.busyNs, 40 * kMs);
  EXPECT_EQ(s.kernelTotalNs, 50 * kMs);  // 20 + 20 + 10: concurrent kernels each count
  EXPECT_DOUBLE_EQ(s.kernelUtilisation, 0.4);
  EXPECT_EQ(s.kernelCount, 3u);
}

TEST(SummaryTest, CopiesAndMemsetsAddToBusyTimeButNotKernelTime) {
  TraceBuilder b;
  b.kernel("k", 0, 10).memcpy(CopyKind::HtoD, 1000, 5, 20).memset(64, 30, 35);
  Summary s = summarize(b.trace);
  EXPECT_EQ(s.kernelBusyNs, 10 * kMs);
  EXPECT_EQ(s.busyNs, 25 * kMs);  // [0,20] and [30,35]
  EXPECT_DOUBLE_EQ(s.utilisation, 0.25);
}

TEST(SummaryTest, UtilisationIsPerDeviceThatRanWork) {
  TraceBuilder b;
  b.kernel("k", 0, 50, 0).kernel("k", 0, 100, 1);
  Summary s = summarize(b.trace);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].busyNs, 50 * kMs);
  EXPECT_EQ(s.devices[1].busyNs, 100 * kMs);
  EXPECT_DOUBLE_EQ(s.utilisation, 0.75);  // 150 ms over 2 x 100 ms
}

TEST(SummaryTest, WorkOutsideTheWindowIsClippedForUtilisation) {
  TraceBuilder b;
  b.kernel("late", 90, 130);  // queued before stop, finished after it
  Summary s = summarize(b.trace);
  EXPECT_EQ(s.busyNs, 10 * kMs);
  EXPECT_EQ(s.kernelTotalNs, 40 * kMs) << "the kernel's own duration is not clipped";
}

TEST(SummaryTest, TopKernelsAreOrderedByTotalTimeThenName) {
  TraceBuilder b;
  b.kernel("short_many", 0, 1).kernel("short_many", 2, 3).kernel("short_many", 4, 5);
  b.kernel("long_once", 10, 20);
  b.kernel("tie_b", 30, 32).kernel("tie_a", 40, 42);
  Summary s = summarize(b.trace, 3);
  ASSERT_EQ(s.topKernels.size(), 3u);
  EXPECT_EQ(s.topKernels[0].name, "long_once");
  EXPECT_EQ(s.topKernels[0].count, 1u);
  EXPECT_EQ(s.topKernels[1].name, "short_many");
  EXPECT_EQ(s.topKernels[1].count, 3u);
  EXPECT_EQ(s.topKernels[1].totalNs, 3 * kMs);
  EXPECT_EQ(s.topKernels[1].maxNs, 1 * kMs);
  EXPECT_EQ(s.topKernels[2].name, "tie_a") << "equal totals: by name";
}

TEST(SummaryTest, MemcpyVolumeIsTotalledAndSplitByDirection) {
  TraceBuilder b;
  b.memcpy(CopyKind::HtoD, 1 << 20, 0, 1);
  b.memcpy(CopyKind::HtoD, 1 << 20, 2, 3);
  b.memcpy(CopyKind::DtoH, 4096, 4, 5);
  b.memset(512, 6, 7);
  Summary s = summarize(b.trace);
  EXPECT_EQ(s.memcpyCount, 3u);
  EXPECT_EQ(s.memcpyBytes, (2u << 20) + 4096u);
  ASSERT_EQ(s.memcpyByKind.size(), 2u);
  EXPECT_EQ(s.memcpyByKind[0].kind, "HtoD");
  EXPECT_EQ(s.memcpyByKind[0].bytes, 2u << 20);
  EXPECT_EQ(s.memcpyByKind[0].count, 2u);
  EXPECT_EQ(s.memcpyByKind[1].kind, "DtoH");
  EXPECT_EQ(s.memsetCount, 1u);
  EXPECT_EQ(s.memsetBytes, 512u);
}

TEST(SummaryTest, LossesAndIdentityComeFromTheTrace) {
  TraceBuilder b;
  b.trace.losses.cuptiDroppedRecords = 5;
  b.trace.losses.cuptiBuffersRefused = 2;
  b.trace.losses.droppedHostEvents = 3;
  b.trace.losses.droppedAssembledRecords = 4;
  b.trace.tables.processName = "python3 train.py";
  b.trace.header.push_back(
      {"distributedInfo", Value::object({{"rank", 1}, {"world_size", 2}, {"backend", "nccl"}})});
  b.trace.footer.push_back({"kinetrace_gpu_status", "CUPTI 130001 on 1 device"});
  Summary s = summarize(b.trace);
  EXPECT_EQ(s.droppedGpuRecords, 7u);
  EXPECT_EQ(s.droppedHostEvents, 7u) << "dropped in a thread's buffer or after assembly";
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.worldSize, 2);
  EXPECT_EQ(s.processName, "python3 train.py");
  EXPECT_EQ(s.pid, 4242);
  EXPECT_EQ(s.gpuStatus, "CUPTI 130001 on 1 device");
}

TEST(SummaryTest, AnEmptyTraceSummarisesToZeros) {
  TraceBuilder b;
  Summary s = summarize(b.trace);
  EXPECT_EQ(s.busyNs, 0);
  EXPECT_EQ(s.utilisation, 0.0);
  EXPECT_TRUE(s.devices.empty());
  EXPECT_NE(formatSummary(s).find("no GPU work recorded"), std::string::npos);
}

TEST(SummaryTest, JsonRoundTripKeepsEveryField) {
  TraceBuilder b;
  b.kernel("void gemm<float>(\"quoted\\\")", 0, 10).memcpy(CopyKind::DtoD, 77, 10, 11);
  b.trace.losses.gpuOpsWithoutLaunch = 4;
  Summary s = summarize(b.trace);
  s.traceFile = "/tmp/x.json";
  Summary back = summaryFromJson(summaryToJson(s));
  EXPECT_EQ(back.traceFile, "/tmp/x.json");
  EXPECT_EQ(back.kernelBusyNs, s.kernelBusyNs);
  EXPECT_EQ(back.busyNs, s.busyNs);
  EXPECT_DOUBLE_EQ(back.utilisation, s.utilisation);
  ASSERT_EQ(back.topKernels.size(), 1u);
  EXPECT_EQ(back.topKernels[0].name, "void gemm<float>(\"quoted\\\")");
  ASSERT_EQ(back.memcpyByKind.size(), 1u);
  EXPECT_EQ(back.memcpyByKind[0].kind, "DtoD");
  EXPECT_EQ(back.gpuOpsWithoutLaunch, 4u);
  ASSERT_EQ(back.devices.size(), 1u);
  EXPECT_EQ(back.devices[0].busyNs, s.devices[0].busyNs);
}

TEST(SummaryTest, FromJsonRejectsWhatIsNotASummary) {
  for (const char* text : {"", "[1,2]", "{\"traceEvents\": []}", "not json"}) {
    try {
      summaryFromJson(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("not a kinetrace summary"), std::string::npos)
          << error.what();
    }
  }
}

TEST(SummaryTest, FormattedSummaryNamesTheTraceBusyTimeTopKernelsAndCopies) {
  TraceBuilder b;
  b.kernel("hot_kernel", 0, 30)
      .kernel("cold_kernel", 40, 41)
      .memcpy(CopyKind::HtoD, 3 << 20, 50, 52);
  b.trace.header.push_back({"distributedInfo", Value::object({{"rank", 0}, {"world_size", 2}})});
  Summary s = summarize(b.trace);
  s.traceFile = "/traces/kinetrace-r-rank0-node-pid1.json";
  std::string text = formatSummary(s, 1);
  EXPECT_NE(text.find("/traces/kinetrace-r-rank0-node-pid1.json"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0 of 2"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU busy 33.0 ms (33.0%)"), std::string::npos) << text;
  EXPECT_NE(text.find("hot_kernel"), std::string::npos) << text;
  EXPECT_EQ(text.find("cold_kernel"), std::string::npos) << "top 1 only:\n" << text;
  EXPECT_NE(text.find("3.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("dropped none"), std::string::npos) << text;
  EXPECT_LE(std::count(text.begin(), text.end(), '\n'), 24) << "one screen";
}

TEST(SummaryTest, FormattedSummaryTellsWhatToRaiseWhenRecordsWereDropped) {
  TraceBuilder b;
  b.trace.losses.cuptiDroppedRecords = 1200;
  std::string text = formatSummary(summarize(b.trace));
  EXPECT_NE(text.find("1,200 GPU records"), std::string::npos) << text;
  EXPECT_NE(text.find("--memory-mb"), std::string::npos) << text;
}

TEST(SummaryBuilderTest, RecordsStreamedInBatchesSummariseAsTheWholeTraceDoes) {
  TraceBuilder b;
  b.kernel("a", 10, 30).kernel("b", 20, 40, 0, 8).kernel("a", 50, 60, 1);
  b.memcpy(CopyKind::HtoD, 100, 0, 5).memcpy(CopyKind::PtoP, 50, 60, 70).memset(8, 80, 81);
  b.trace.records.ranges.resize(3);
  b.trace.records.syncs.resize(2);
  const Summary whole = summarize(b.trace);

  // The same records in three batches, the later ones first: as a pipeline streams them.
  SummaryBuilder builder(b.trace.startNs);
  TraceRecords first, second, third;
  first.kernels = {b.trace.records.kernels[2]};
  first.memsets = b.trace.records.memsets;
  second.kernels = {b.trace.records.kernels[0], b.trace.records.kernels[1]};
  second.ranges = b.trace.records.ranges;
  third.memcpys = b.trace.records.memcpys;
  third.syncs = b.trace.records.syncs;
  builder.add(first);
  builder.add(second);
  builder.add(third);
  const Summary streamed = builder.finish(b.trace.tables, b.trace.stopNs, b.trace.losses,
                                          b.trace.header, b.trace.footer);
  EXPECT_EQ(summaryToValue(streamed), summaryToValue(whole));
  EXPECT_EQ(streamed.kernelBusyNs, 40 * kMs);  // [10,40] on device 0, [50,60] on device 1
  EXPECT_EQ(streamed.hostRangeCount, 3u);
  EXPECT_EQ(streamed.syncCount, 2u);
  ASSERT_EQ(streamed.topKernels.size(), 2u);
  EXPECT_EQ(streamed.topKernels[0].name, "a");
  EXPECT_EQ(streamed.topKernels[0].count, 2u);
}

TEST(SummaryBuilderTest, CopyKindsAreNamedFromTheirEnumsAndUnknownIsOther) {
  TraceBuilder b;
  b.memcpy(CopyKind::PtoP, 300, 0, 1)
      .memcpy(CopyKind::Unknown, 200, 1, 2)
      .memcpy(CopyKind::DtoH, 100, 2, 3);
  const Summary s = summarize(b.trace);
  ASSERT_EQ(s.memcpyByKind.size(), 3u);
  EXPECT_EQ(s.memcpyByKind[0].kind, "PtoP");
  EXPECT_EQ(s.memcpyByKind[1].kind, "other");
  EXPECT_EQ(s.memcpyByKind[2].kind, "DtoH");
}

TEST(SummaryBuilderTest, BusyTimeStaysExactWhenOldIntervalsAreFolded) {
  // Far more disjoint intervals than the builder keeps, arriving in time order: the old ones
  // are folded into a total, and none is lost or counted twice.
  TraceBuilder b;
  b.trace.stopNs = b.t0 + 100000 * kMs;
  SummaryBuilder builder(b.trace.startNs);
  constexpr int kKernels = 20000;
  for (int i = 0; i < kKernels; ++i) {
    TraceRecords batch;
    KernelRecord k;
    k.at.startNs = b.t0 + i * 2 * kMs;
    k.at.endNs = k.at.startNs + kMs;
    k.name = b.trace.tables.strings.intern("k");
    batch.kernels.push_back(k);
    builder.add(batch);
  }
  const Summary s = builder.finish(b.trace.tables, b.trace.stopNs, b.trace.losses, b.trace.header,
                                   b.trace.footer);
  EXPECT_EQ(s.kernelBusyNs, kKernels * kMs);
  EXPECT_EQ(s.busyNs, kKernels * kMs);
  EXPECT_EQ(s.kernelCount, static_cast<uint64_t>(kKernels));
}

TEST(SummaryTest, ValueRoundTripKeepsEveryField) {
  TraceBuilder b;
  b.kernel("k", 0, 10).memcpy(CopyKind::HtoD, 5, 10, 20).memset(3, 20, 21);
  b.trace.losses.outOfWindowEvents = 9;
  Summary s = summarize(b.trace);
  s.traceFile = "/tmp/y.json";
  s.gpuStatus = "host only";
  const Value value = summaryToValue(s);
  const Summary back = summaryFromValue(value);
  EXPECT_EQ(summaryToValue(back), value);
  EXPECT_EQ(back.outOfWindowEvents, 9u);
  EXPECT_EQ(back.memsetBytes, 3u);
  EXPECT_EQ(back.gpuStatus, "host only");
}

TEST(SummaryTest, FromValueNamesAMemberOfTheWrongType) {
  TraceBuilder b;
  Value value = summaryToValue(summarize(b.trace));
  value.set("busy_ns", "lots");
  try {
    summaryFromValue(value);
    ADD_FAILURE() << "accepted a string for busy_ns";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("\"busy_ns\" has the wrong type"), std::string::npos)
        << error.what();
  }
}

TEST(SummaryFormatTest, DurationsBytesAndNames) {
  EXPECT_EQ(formatDuration(1'234'000'000), "1.234 s");
  EXPECT_EQ(formatDuration(12'340'000), "12.3 ms");
  EXPECT_EQ(formatDuration(850'000), "850.0 us");
  EXPECT_EQ(formatDuration(120), "120 ns");
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(3u << 20), "3.0 MiB");
  EXPECT_EQ(formatBytes(uint64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(shortenName("abcdefghij", 8), "abcde...");
  EXPECT_EQ(shortenName("abc", 8), "abc");
}

// ---- a summary file read back: only a regular file, within the budget ----

class SummaryFileTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  testing::TempDir dir_;
};

std::string refusalOf(const std::string& file, ReadBudget& budget) {
  try {
    readSummaryFile(file, budget);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST_F(SummaryFileTest, ASummaryThatIsALinkADeviceOrAFifoIsRefusedByName) {
  // A directory of traces from someone else may hold a "summary" that is a link to
  // /dev/zero: read, it would fill the memory.
  const std::string link = path("kinetrace-r-n-pid1.summary.json");
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
  const std::string fifo = path("kinetrace-r-n-pid2.summary.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ReadBudget budget(std::size_t{16} << 20);
  EXPECT_EQ(refusalOf(link, budget),
            link + " is a symbolic link; only a regular file is read there");
  EXPECT_EQ(refusalOf(fifo, budget), fifo + " is a FIFO; only a regular file is read there");
  EXPECT_EQ(refusalOf("/dev/zero", budget),
            "/dev/zero is a device; only a regular file is read there");
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(SummaryFileTest, ASummaryLargerThanTheBudgetIsRefusedNamingIt) {
  const std::string file = path("kinetrace-r-n-pid1.summary.json");
  std::ofstream(file) << R"({"kernels": [)" << std::string(std::size_t{2} << 20, ' ') << "]}";
  ReadBudget budget(std::size_t{1} << 20);
  EXPECT_EQ(refusalOf(file, budget),
            file +
                ": summary files would take more than the 1 MB of memory --memory-mb allows; "
                "raise --memory-mb");
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(SummaryFileTest, ARegularSummaryReadsBackAndGivesItsBytesBack) {
  const std::string file = path("kinetrace-r-n-pid1.summary.json");
  std::ofstream(file) << R"({"kinetrace_summary": 1, "trace": "t.json", "kernel_count": 3})";
  ReadBudget budget(std::size_t{1} << 20);
  EXPECT_EQ(readSummaryFile(file, budget).traceFile, "t.json");
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace kinetrace::detail
