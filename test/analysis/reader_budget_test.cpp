// Every reader within one budget: each structure that grows with a hostile file (top-level
// metadata, distinct names, step ranges, .pftrace interned strings, tracks, open slices,
// what merge keeps per rank) is refused past the budget with an error that
// names the file, what grew and the cap; nested compressed packets are capped in total.
// Inputs are made here, scaled to a small budget so each test reads a few megabytes.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "analysis/trace_merge.h"
#include "analysis/trace_reader.h"
#include "hostile_inputs.h"
#include "kinetrace/error.h"
#include "test_budget.h"

namespace kinetrace::detail {
namespace {

constexpr std::size_t kMb = std::size_t{1} << 20;

std::string refusal(const std::string& file, const std::string& what, std::size_t capMb) {
  return file + ": " + what + " would take more than the " + std::to_string(capMb) +
         " MB of memory --memory-mb allows; raise --memory-mb";
}

class ReaderBudgetTest : public HostileInputFixture {
 protected:
  // Reads `file` into a collector and analyses it, within `capBytes`; the error, or "(no
  // error)". The budget is given back whatever happens.
  std::string errorAnalysing(const std::string& file, std::size_t capBytes) {
    ReadBudget budget(capBytes);
    std::string error = "(no error)";
    try {
      TraceCollector collector(file, budget);
      readTraceFile(file, collector, file, budget);
      const ReadBudget::Reading reading(budget, file);
      analyzeRank(collector.take(), {});
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_LE(budget.peak(), budget.cap());
    EXPECT_EQ(budget.used(), 0u);
    return error;
  }
};

// ---- Chrome JSON ----

TEST_F(ReaderBudgetTest, TopLevelMetadataPastTheBudgetIsRefusedNamingIt) {
  // 20 values of 100 KB against 3 MB, of which the reader's buffers take 2: 2 MB of
  // metadata before the events, as 700 values of 3 MB were against 16 MB.
  std::string text = "{";
  for (int i = 0; i < 20; ++i) {
    text += "\"meta" + std::to_string(i) + "\": \"" + std::string(100'000, 'x') + "\",";
  }
  text += R"("traceEvents": []})";
  const std::string file = path("metadata.json");
  writeFile(file, text);
  EXPECT_EQ(errorReading(file, 3 * kMb), refusal(file, "top-level metadata", 3));
  // Metadata after the events is kept for the footer: the same.
  writeFile(file, R"({"traceEvents": [], )" + text.substr(1, text.find("\"traceEvents\"") - 1) +
                      R"("end": 1})");
  EXPECT_EQ(errorReading(file, 3 * kMb), refusal(file, "top-level metadata", 3));
  // Within the budget, it reads.
  EXPECT_EQ(errorReading(file, 16 * kMb), "(no error)");
}

TEST_F(ReaderBudgetTest, DistinctNamesPastTheBudgetAreRefusedNamingThem) {
  // 40 kernels of their own 100 KB name against 3 MB: 1,500 names of 1 MB against 16 MB.
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 40; ++i) {
    text += std::string(i > 0 ? "," : "") + R"({"ph":"X","cat":"kernel","name":")" +
            std::to_string(i) + std::string(100'000, 'k') + R"(","pid":0,"tid":7,"ts":)" +
            std::to_string(i * 10) + R"(,"dur":5})";
  }
  text += "]}";
  const std::string file = path("names.json");
  writeFile(file, text);
  EXPECT_EQ(errorAnalysing(file, 3 * kMb), refusal(file, "distinct names", 3));
}

TEST_F(ReaderBudgetTest, StepRangesPastTheBudgetAreRefusedNamingThem) {
  // 50,000 steps against 16 MB: their names fit, what their reports take does not, as 5
  // million steps took 3.8 GB at 16 MB.
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 50'000; ++i) {
    text += std::string(i > 0 ? "," : "") + R"({"ph":"X","name":"ProfilerStep#)" +
            std::to_string(i) + R"(","pid":1,"tid":1,"ts":)" + std::to_string(i * 10) +
            R"(,"dur":9})";
  }
  text += "]}";
  const std::string file = path("steps.json");
  writeFile(file, text);
  EXPECT_EQ(errorAnalysing(file, 16 * kMb), refusal(file, "step ranges", 16));
  EXPECT_EQ(errorAnalysing(file, 128 * kMb), "(no error)");
}

// ---- .pftrace ----

// The packet that interns `count` event names of `bytes` each on `sequence`.
std::string internedNames(uint64_t sequence, uint64_t firstIid, int count, std::size_t bytes) {
  using namespace pftrace;
  proto::ByteBuffer buffer;
  proto::ProtoWriter w(buffer);
  const std::size_t packet = w.beginMessage(kTracePacket);
  w.varint(kPacketSequenceId, sequence);
  const std::size_t interned = w.beginMessage(kPacketInternedData);
  for (int i = 0; i < count; ++i) {
    const std::size_t entry = w.beginMessage(kInternedEventNames);
    w.varint(kInternedIid, firstIid + static_cast<uint64_t>(i));
    w.bytes(kInternedName, std::to_string(firstIid + i) + std::string(bytes, 'n'));
    w.endMessage(entry);
  }
  w.endMessage(interned);
  w.endMessage(packet);
  return std::string(buffer.data(), buffer.size());
}

TEST_F(ReaderBudgetTest, PftraceInternedStringsPastTheBudgetAreRefusedNamingThem) {
  // 100 names of 100 KB against 8 MB (of which packets and buffers take 3).
  const std::string file = pftraceWith("interned.pftrace", [](uint64_t sequence, uint64_t) {
    std::string added;
    for (int p = 0; p < 10; ++p) added += internedNames(sequence, 1000 + p * 10, 10, 100'000);
    return added;
  });
  const std::string error = errorReading(file, 8 * kMb);
  EXPECT_EQ(error.rfind(file + ": packet at byte ", 0), 0u) << error;
  EXPECT_NE(error.find(": .pftrace interned strings would take more than the 8 MB of memory "
                       "--memory-mb allows; raise --memory-mb"),
            std::string::npos)
      << error;
}

TEST_F(ReaderBudgetTest, PftraceTracksPastTheBudgetAreRefusedNamingThem) {
  using namespace pftrace;
  // 50,000 thread tracks with 100-byte names against 8 MB: a million tracks took 453 MB.
  const std::string file = pftraceWith("tracks.pftrace", [](uint64_t sequence, uint64_t) {
    proto::ByteBuffer buffer;
    proto::ProtoWriter w(buffer);
    for (uint64_t i = 0; i < 50'000; ++i) {
      const std::size_t packet = w.beginMessage(kTracePacket);
      w.varint(kPacketSequenceId, sequence);
      const std::size_t track = w.beginMessage(kPacketTrackDescriptor);
      w.varint(kTrackUuid, 1'000'000 + i);
      w.bytes(kTrackName, std::to_string(i) + std::string(100, 't'));
      const std::size_t thread = w.beginMessage(kTrackThread);
      w.varint(kThreadPid, 2);
      w.varint(kThreadTid, i);
      w.endMessage(thread);
      w.endMessage(track);
      w.endMessage(packet);
    }
    return std::string(buffer.data(), buffer.size());
  });
  const std::string error = errorReading(file, 8 * kMb);
  EXPECT_NE(error.find(": tracks would take more than the 8 MB of memory --memory-mb allows"),
            std::string::npos)
      << error;
  EXPECT_EQ(errorReading(file, 64 * kMb), "(no error)");
}

TEST_F(ReaderBudgetTest, OpenSlicesStayWithinHalfTheBudgetTheRestCounted) {
  using namespace pftrace;
  // 5,000 slices of 2 KB names begun and never ended against 8 MB: 10 MB of open slices.
  const std::string file = pftraceWith("open.pftrace", [&](uint64_t sequence, uint64_t track) {
    std::string added;
    for (int i = 0; i < 5'000; ++i) {
      added += eventPacket(sequence, 1'000'200 + i, [&](proto::ProtoWriter& w) {
        w.varint(kEventType, kTypeSliceBegin);
        w.varint(kEventTrackUuid, track);
        w.bytes(kEventName, std::to_string(i) + std::string(2'000, 's'));
      });
    }
    return added;
  });
  RecordingSink sink;
  ReadBudget budget(8 * kMb);
  const ReadReport report = readTraceFile(file, sink, "out", budget);
  EXPECT_LE(budget.peak(), budget.cap());
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(report.skipped.at("slices that began and never ended"), 5'000u);
}

TEST_F(ReaderBudgetTest, NestedCompressedPacketsAreCappedInTotalNotOnlyInDepth) {
#ifndef KINETRACE_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#else
  using namespace pftrace;
  // Within the depth allowed, each level holds a thousand copies of the one inside: a few
  // kilobytes that would inflate to gigabytes, level after level.
  const std::string file = pftraceWith("fanout.pftrace", [](uint64_t sequence, uint64_t) {
    proto::ByteBuffer leaf;
    proto::ProtoWriter lw(leaf);
    const std::size_t mark = lw.beginMessage(kTracePacket);
    lw.varint(kPacketSequenceId, sequence);
    lw.endMessage(mark);
    std::string packet(leaf.data(), leaf.size());
    for (std::size_t level = 0; level < kMaxCompressedDepth; ++level) {
      std::string copies;
      for (int i = 0; i < 1000; ++i) copies += packet;
      proto::ByteBuffer bytes;
      proto::ProtoWriter w(bytes);
      const std::size_t outer = w.beginMessage(kTracePacket);
      w.bytes(kPacketCompressedPackets, zlibCompress(copies));
      w.endMessage(outer);
      packet.assign(bytes.data(), bytes.size());
    }
    return packet;
  });
  const std::string error = errorReading(file);
  EXPECT_EQ(error.rfind(file + ": packet at byte ", 0), 0u) << error;
  EXPECT_NE(error.find(": compressed packets inflate to more than 1032 times the "),
            std::string::npos)
      << error;
#endif
}

// ---- merge ----

TEST_F(ReaderBudgetTest, MergeKeepsItsCollectivesWithinTheBudget) {
  // 60,000 NCCL collectives on one rank against 3 MB: merge kept every one, whatever their
  // number.
  std::string text = R"({"distributedInfo": {"rank": 0}, "traceEvents": [)";
  for (int i = 0; i < 60'000; ++i) {
    text += std::string(i > 0 ? "," : "") +
            R"j({"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",)j"
            R"("pid":0,"tid":7,"ts":)" +
            std::to_string(i * 10) + R"(,"dur":5})";
  }
  text += "]}";
  const std::string rank0 = path("rank0.json");
  const std::string rank1 = path("rank1.json");
  writeFile(rank0, text);
  writeFile(rank1, R"({"distributedInfo": {"rank": 1}, "traceEvents": []})");
  ReadBudget budget(3 * kMb);
  try {
    planMerge({rank0, rank1}, {}, budget);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), refusal(rank0, "NCCL collectives", 3));
  }
  EXPECT_EQ(budget.used(), 0u);
  ReadBudget enough(16 * kMb);
  EXPECT_EQ(planMerge({rank0, rank1}, {}, enough).front().collectives.size(), 60'000u);
}

}  // namespace
}  // namespace kinetrace::detail
