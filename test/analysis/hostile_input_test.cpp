// Reading hostile input: deep nesting, events and strings larger than the memory allowed,
// endless whitespace, slices begun and never ended, pipes and FIFOs, times at the ends of
// int64. Each is an error naming the file and what is wrong, or is read within bounds and
// counted; none crashes.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "analysis/summary.h"
#include "analysis/trace_merge.h"
#include "analysis/trace_reader.h"
#include "hostile_inputs.h"
#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"
#include "test_budget.h"

namespace kinetrace::detail {
namespace {

constexpr std::size_t kDeep = 100'000;

std::string oneEvent(const std::string& args) {
  return R"({"traceEvents":[{"ph":"X","name":"k","cat":"kernel","pid":1,"tid":2,"ts":1,"dur":5,"args":)" +
         args + "}]}";
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

class HostileInputTest : public HostileInputFixture {};

// ---- nesting ----

TEST_F(HostileInputTest, DeeplyNestedArgsAreAnErrorNamingTheFileAndTheDepth) {
  const std::string file = path("deep.json");
  writeFile(file, oneEvent(R"({"a":)" + nested(kDeep) + "}"));
  EXPECT_EQ(errorReading(file),
            file + ": the event at byte 16 nests arrays and objects more than 128 levels deep");
  // Within the bound, it reads.
  writeFile(file, oneEvent(R"({"a":)" + nested(100) + "}"));
  EXPECT_EQ(errorReading(file), "(no error)");
}

TEST_F(HostileInputTest, DeeplyNestedMetadataIsAnErrorNamingIt) {
  const std::string file = path("deep.json");
  writeFile(file, R"({"meta": )" + nested(kDeep) + R"(, "traceEvents": []})");
  EXPECT_EQ(errorReading(file), file +
                                    ": the metadata value \"meta\" at byte 9 nests arrays and "
                                    "objects more than 128 levels deep");
}

TEST(HostileSummaryTest, ADeeplyNestedSummaryIsAnError) {
  try {
    summaryFromJson(R"({"kernels": )" + nested(kDeep) + "}");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "not a kinetrace summary: it nests arrays and objects more than 128 levels deep");
  }
}

TEST_F(HostileInputTest, DeeplyNestedAnnotationsInAPftraceAreAnError) {
  using namespace pftrace;
  const std::string file = pftraceWith("deep.pftrace", [](uint64_t sequence, uint64_t track) {
    return eventPacket(sequence, 1'000'200, [&](proto::ProtoWriter& w) {
      w.varint(kEventType, kTypeInstant);
      w.varint(kEventTrackUuid, track);
      w.bytes(kEventName, "deep");
      // kDeep annotations, each the only array value of the one around it: the lengths
      // from the innermost out, then the tags and lengths from the outermost in.
      std::vector<uint64_t> lengths(kDeep, 0);
      auto varintBytes = [](uint64_t v) {
        std::size_t n = 1;
        while (v >= 0x80) {
          v >>= 7;
          ++n;
        }
        return n;
      };
      for (std::size_t i = 1; i < kDeep; ++i) {
        lengths[i] = 1 + varintBytes(lengths[i - 1]) + lengths[i - 1];
      }
      std::string bytes;
      auto putVarint = [&bytes](uint64_t v) {
        while (v >= 0x80) {
          bytes.push_back(static_cast<char>((v & 0x7f) | 0x80));
          v >>= 7;
        }
        bytes.push_back(static_cast<char>(v));
      };
      for (std::size_t i = kDeep - 1; i > 0; --i) {
        bytes.push_back(static_cast<char>((kAnnotationArray << 3) | 2));
        putVarint(lengths[i - 1]);
      }
      w.bytes(kEventDebugAnnotations, bytes);
    });
  });
  const std::string error = errorReading(file);
  EXPECT_EQ(error.rfind(file + ": packet at byte ", 0), 0u) << error;
  EXPECT_NE(error.find(": a debug annotation nested more than 32 levels deep"), std::string::npos)
      << error;
}

TEST_F(HostileInputTest, CompressedPacketsNestedDeepAreAnError) {
#ifndef KINETRACE_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#else
  using namespace pftrace;
  const std::string file = pftraceWith("nested.pftrace", [](uint64_t, uint64_t) {
    std::string packet;  // framed
    for (int level = 0; level < 50; ++level) {
      proto::ByteBuffer bytes;
      proto::ProtoWriter w(bytes);
      const std::size_t mark = w.beginMessage(kTracePacket);
      w.bytes(kPacketCompressedPackets, zlibCompress(packet));
      w.endMessage(mark);
      packet.assign(bytes.data(), bytes.size());
    }
    return packet;
  });
  const std::string error = errorReading(file);
  EXPECT_EQ(error.rfind(file + ": packet at byte ", 0), 0u) << error;
  EXPECT_NE(error.find(": compressed packets nested more than 4 levels deep"), std::string::npos)
      << error;
#endif
}

// ---- memory ----

#ifdef KINETRACE_HAVE_ZLIB
TEST_F(HostileInputTest, AnEventLargerThanTheMemoryAllowedIsAnError) {
  // A few kilobytes of gzip that would take a hundred megabytes as JSON values.
  std::string zeros;
  for (int i = 0; i < 1'000'000; ++i) zeros += "0,";
  zeros += "0";
  const std::string file = path("huge.json.gz");
  writeFile(file, gzip(oneEvent(R"({"a":[)" + zeros + "]}")));
  EXPECT_EQ(errorReading(file, std::size_t{4} << 20),
            file +
                ": the event at byte 16 would take more than the 4 MB of memory --memory-mb "
                "allows; raise --memory-mb");
}

TEST_F(HostileInputTest, AStringLongerThanTheMemoryAllowedIsAnError) {
  const std::string file = path("long.json.gz");
  const std::string text = oneEvent(R"({"a":")" + std::string(8 << 20, 'x') + R"("})");
  const std::size_t quote = text.find("xxx") - 1;
  writeFile(file, gzip(text));
  const std::string error = errorReading(file, std::size_t{4} << 20);
  EXPECT_EQ(error.rfind(file + ": the string at byte " + std::to_string(quote) + ", ", 0), 0u)
      << error;
  EXPECT_NE(error.find(" bytes long so far (the JSON parser holds it four times over), would "
                       "take more than the 4 MB of memory --memory-mb allows; raise --memory-mb"),
            std::string::npos)
      << error;
}

TEST_F(HostileInputTest, WhitespaceIsSkippedWithoutBeingKept) {
  const std::string event = R"({"ph":"X","name":"k","pid":1,"tid":2,"ts":1,"dur":5})";
  const std::string file = path("spaces.json.gz");
  writeFile(file, gzip(std::string(1 << 20, '\n') + R"({"traceEvents":[)" + event + "," +
                       std::string(16 << 20, ' ') + event + "]}"));
  RecordingSink sink;
  ReadBudget budget(std::size_t{16} << 20);
  const ReadReport report = readTraceFile(file, sink, "out", budget);
  EXPECT_EQ(report.events, 2u);
  ASSERT_EQ(sink.heapInUse.size(), 2u);
  // The lexer kept every byte of a run before: 16 MB more between the two events.
  EXPECT_LT(sink.heapInUse[1], sink.heapInUse[0] + (std::size_t{4} << 20));
}

// Whitespace let go still counts in the byte offsets that errors give: the same error
// 100,000 spaces (and, before the trace, 5,000 newlines) later is 105,000 bytes later.
TEST_F(HostileInputTest, ErrorOffsetsCountTheWhitespaceLetGo) {
  const std::string file = path("spaces.json");
  const std::string bad = R"({"ph":"X",})";
  writeFile(file, R"({"traceEvents":[)" + bad + "]}");
  const std::string tight = errorReading(file);
  writeFile(file, std::string(5'000, '\n') + R"({"traceEvents":[)" + std::string(100'000, ' ') +
                      bad + "]}");
  const std::string spaced = errorReading(file);
  const std::string prefix = file + " is not valid JSON at byte ";
  ASSERT_EQ(tight.rfind(prefix, 0), 0u) << tight;
  ASSERT_EQ(spaced.rfind(prefix, 0), 0u) << spaced;
  const uint64_t at = std::stoull(tight.substr(prefix.size()));
  EXPECT_EQ(std::stoull(spaced.substr(prefix.size())), at + 105'000) << spaced;
}
#endif

TEST_F(HostileInputTest, SlicesNeverEndedAreKeptWithinTheMemoryAndCounted) {
  using namespace pftrace;
  constexpr int kBegins = 50'000;
  const std::string file = pftraceWith("open.pftrace", [&](uint64_t sequence, uint64_t track) {
    std::string added = eventPacket(sequence, 1'000'200, [&](proto::ProtoWriter& w) {
      w.varint(kEventType, kTypeSliceBegin);
      w.varint(kEventTrackUuid, track);
      w.bytes(kEventName, "outer");
    });
    for (int i = 0; i < kBegins; ++i) {
      added += eventPacket(sequence, 1'000'300 + i, [&](proto::ProtoWriter& w) {
        w.varint(kEventType, kTypeSliceBegin);
        w.varint(kEventTrackUuid, track);
        w.bytes(kEventName, "inner");
      });
    }
    // Every inner slice ends, then the outer one; then 3 more begin and never end.
    for (int i = 0; i <= kBegins; ++i) {
      added += eventPacket(sequence, 2'000'000 + i, [&](proto::ProtoWriter& w) {
        w.varint(kEventType, kTypeSliceEnd);
        w.varint(kEventTrackUuid, track);
      });
    }
    for (int i = 0; i < 3; ++i) {
      added += eventPacket(sequence, 3'000'000 + i, [&](proto::ProtoWriter& w) {
        w.varint(kEventType, kTypeSliceBegin);
        w.varint(kEventTrackUuid, track);
        w.bytes(kEventName, "unended");
      });
    }
    return added;
  });
  RecordingSink sink;
  ReadBudget budget(std::size_t{8} << 20);
  const ReadReport report = readTraceFile(file, sink, "out", budget);
  const uint64_t leftOut = report.skipped.count(
                               "slices whose begin was left out: the slices begun and not yet "
                               "ended needed more than half the memory allowed (--memory-mb)")
                               ? report.skipped.at(
                                     "slices whose begin was left out: the slices begun and not "
                                     "yet ended needed more than half the memory allowed "
                                     "(--memory-mb)")
                               : 0;
  EXPECT_GT(leftOut, 0u) << "four megabytes hold fewer than 50,000 begun slices";
  // The first slice, each inner slice kept or counted, the outer one with its duration.
  ASSERT_EQ(sink.names.size(), report.events);
  EXPECT_EQ(report.events + leftOut, 1u + kBegins + 1u);
  EXPECT_EQ(sink.names.back(), "outer");
  EXPECT_EQ(sink.durations.back(), 2'000'000 + kBegins - 1'000'200);
  EXPECT_EQ(report.skipped.at("slices that began and never ended"), 3u);
  ASSERT_FALSE(sink.footer.empty());
  EXPECT_EQ(sink.footer.back().key, "kinetrace_unended_slices");
  EXPECT_EQ(sink.footer.back().value, Value(int64_t{3}));
}

// ---- pipes ----

class PipeTest : public HostileInputTest {
 protected:
  void SetUp() override { previous_ = std::signal(SIGPIPE, SIG_IGN); }
  void TearDown() override { std::signal(SIGPIPE, previous_); }

  static void writeAll(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;  // the reader went away: the test's checks say so
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }

  void (*previous_)(int) = SIG_DFL;
};

const std::string kSmallTrace =
    R"({"traceEvents":[{"ph":"X","name":"k","cat":"kernel","pid":1,"tid":2,"ts":1,"dur":5}]})";

TEST_F(PipeTest, APipeReadsOnceAsAFileDoes) {
  std::vector<std::string> contents = {kSmallTrace};
#ifdef KINETRACE_HAVE_ZLIB
  contents.push_back(gzip(kSmallTrace));
#endif
  for (const std::string& bytes : contents) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::thread writer([&] { writeAll(fds[1], bytes); });
    RecordingSink sink;
    std::string error;
    try {
      readTraceFile("/dev/fd/" + std::to_string(fds[0]), sink, "out", budgetOf());
    } catch (const Error& e) {
      error = e.what();
    }
    ::close(fds[0]);
    writer.join();
    EXPECT_EQ(error, "");
    EXPECT_EQ(sink.names, std::vector<std::string>{"k"});
  }
}

TEST_F(PipeTest, AFifoReadsOnceAsAFileDoes) {
  const std::string fifo = path("trace.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // waits for the reader
    if (fd >= 0) writeAll(fd, kSmallTrace);
  });
  RecordingSink sink;
  const ReadReport report = readTraceFile(fifo, sink, "out", budgetOf());
  writer.join();
  EXPECT_EQ(report.events, 1u);
}

// ---- numbers at the ends of int64 ----

TEST_F(HostileInputTest, ATimestampOutOfRangeIsAnErrorNamingTheEvent) {
  const std::string file = path("far.json");
  for (const char* ts : {"1e300", "-1e300", "9300000000000000000", "9300000000000000"}) {
    writeFile(file, std::string(R"({"traceEvents":[{"ph":"X","name":"far","pid":1,"tid":2,"ts":)") +
                        ts + "}]}");
    const std::string error = errorReading(file);
    EXPECT_EQ(error.rfind(file + ": the event \"far\" ", 0), 0u) << ts << ": " << error;
    EXPECT_NE(error.find("out of the range of times in nanoseconds"), std::string::npos)
        << ts << ": " << error;
  }
  // A base time and a timestamp that each fit but whose sum does not.
  writeFile(file, R"({"baseTimeNanoseconds": 9223372036854775000, "traceEvents":[)"
                  R"({"ph":"X","name":"late","pid":1,"tid":2,"ts":1000,"dur":1}]})");
  EXPECT_NE(errorReading(file).find("the event \"late\""), std::string::npos);
}

TEST_F(HostileInputTest, ErrorsSayWhatIsWrongInPlainWordsWithoutTheJsonLibrarysTag) {
  const std::string file = path("overflow.json");
  writeFile(file, R"({"traceEvents":[{"ph":"X","name":"k","pid":1,"tid":2,"ts":1e400}]})");
  EXPECT_EQ(errorReading(file),
            file + " is not valid JSON at byte 63: number overflow parsing '1e400'");
}

TEST_F(HostileInputTest, AnEventWithoutACategoryReachesTheSinkWithViewsThatPointSomewhere) {
  const std::string file = path("nocat.json");
  writeFile(file, R"({"traceEvents":[{"ph":"i","pid":1,"tid":2,"ts":1}]})");
  RecordingSink sink;
  readTraceFile(file, sink, "out", budgetOf());
  ASSERT_EQ(sink.names.size(), 1u);
  EXPECT_FALSE(sink.nullViews);
}

TEST(HostileMergeTest, CollectivesAtTheEndsOfTimeDoNotPairThroughAWrappedDifference) {
  const std::vector<CollectiveEnd> reference = {{"AllReduce", std::numeric_limits<int64_t>::max()}};
  const std::vector<CollectiveEnd> other = {{"AllReduce", std::numeric_limits<int64_t>::min()}};
  EXPECT_FALSE(alignCollectives(reference, other).has_value());
}

TEST_F(HostileInputTest, AShiftThatTakesARankOutOfRangeIsAnErrorNamingIt) {
  const std::string file = path("rank1.json");
  writeFile(file, R"({"baseTimeNanoseconds": 9223372036854770000, "traceEvents":[]})");
  RankPlacement placement;
  placement.path = file;
  placement.baseTimeNs = 9223372036854770000;
  placement.offsetNs = 10'000'000;
  RecordingSink sink;
  try {
    writeMerged({placement}, sink, "merged", budgetOf());
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              file +
                  ": its base time 9223372036854770000 ns, shifted by 10000000 ns to align "
                  "the rank, falls out of the range of times in nanoseconds");
  }
}

}  // namespace
}  // namespace kinetrace::detail
