// Reading traces back: a trace written as JSON, JSON gzip or .pftrace reads back event for
// event as the events that were written; traces from other tools (torch.profiler's layout)
// read with their nested arguments kept; bad input is an error naming the file and the
// problem.

#include "analysis/trace_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "output/atomic_file.h"
#include "output/perfetto_compression.h"
#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/perfetto_sink.h"
#include "output/protobuf.h"
#include "output/trace_events.h"
#include "pftrace_surgery.h"
#include "support/sample_trace.h"
#include "support/temp_dir.h"
#include "test_budget.h"

namespace kinetrace::detail {
namespace {

// JSON does not say whether a number was signed, unsigned or a double that is whole: with
// `exactTypes` false, numbers compare by value.
std::string describe(const OwnedArg& arg, bool exactTypes) {
  std::ostringstream out;
  out << arg.key << "=";
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Dim3>) {
          out << "dim3(" << v.x << "," << v.y << "," << v.z << ")";
        } else if constexpr (std::is_same_v<T, OwnedJsonText>) {
          out << "json(" << v.text << ")";
        } else if constexpr (std::is_same_v<T, std::string>) {
          out << '"' << v << '"';
        } else if constexpr (std::is_same_v<T, bool>) {
          out << (v ? "true" : "false");
        } else {
          out << v;
        }
      },
      arg.value);
  const bool number = arg.value.index() <= 2;
  if (exactTypes || !number) out << "<" << arg.value.index() << ">";
  return out.str();
}

// Everything an event says, as one line: comparing lines shows the first difference.
std::string describe(const OwnedEvent& e, bool exactTypes = true) {
  std::ostringstream out;
  out << static_cast<char>(e.phase) << " name=" << e.name << " cat=" << e.category
      << " pid=" << e.pid << " tid=" << e.tid << " ts=" << e.timestampNs << " dur=" << e.durationNs
      << " flow=" << e.flowId;
  for (const OwnedArg& arg : e.args) out << " " << describe(arg, exactTypes);
  return out.str();
}

std::vector<std::string> describe(const MemorySink& sink, bool exactTypes = true) {
  std::vector<std::string> lines;
  for (const OwnedEvent& e : sink.events()) lines.push_back(describe(e, exactTypes));
  return lines;
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TraceReaderTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The sample trace written to `name` through the sink its name selects.
  std::string writeSample(const std::string& name) {
    const std::string file = path(name);
    std::unique_ptr<Sink> sink = openSink(file);
    writeTrace(trace_, name, {}, *sink);
    return file;
  }

  std::string errorReading(const std::string& file) {
    MemorySink sink;
    try {
      readTraceFile(file, sink, "out", budgetOf());
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  }

  TraceData trace_ = test::sampleTrace();
  testing::TempDir dir_;
};

TEST_F(TraceReaderTest, APftraceReadsBackAsTheEventsThatWereWritten) {
  MemorySink written;
  writeTrace(trace_, "t", {}, written);
  for (const char* name : {"t.pftrace", "t.pftrace.gz"}) {
    const std::string file = writeSample(name);
    EXPECT_EQ(detectTraceFormat(file, budgetOf()), TraceFileFormat::Perfetto) << name;
    MemorySink read;
    const ReadReport report = readTraceFile(file, read, "renamed", budgetOf());
    EXPECT_EQ(describe(read), describe(written)) << name;
    EXPECT_EQ(report.events, written.events().size());
    EXPECT_TRUE(report.skipped.empty());
    // The trace keeps the name it was written under (the reader's is for a trace that has
    // none).
    EXPECT_EQ(read.header().traceName, name);
    EXPECT_EQ(read.header().baseTimeNs, trace_.startNs);
    EXPECT_EQ(read.header().metadata, trace_.header);
    EXPECT_EQ(read.footer(), trace_.footer);
    EXPECT_TRUE(read.ended());
  }
}

TEST_F(TraceReaderTest, GpuMetricCountersAndKernelAveragesSurviveAPftraceRoundTrip) {
  trace_.tables.gpuMetrics.metrics = {
      {"gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "Graphics active",
       MetricUnit::Percent},
      {"dram__bytes_read.sum.per_second", "DRAM read", MetricUnit::BytesPerSecond}};
  trace_.tables.gpuMetrics.devices = {0};
  TraceRecords& r = trace_.records;
  const auto values = static_cast<uint32_t>(r.metricValues.size());
  r.metricValues.insert(r.metricValues.end(), {94.5, 2.5e11, 6.0, 1.25e12});
  r.metricSamples.push_back(
      GpuMetricSampleRecord{trace_.startNs, trace_.startNs + 100'000, 0, values});
  r.metricSamples.push_back(
      GpuMetricSampleRecord{trace_.startNs + 100'000, trace_.startNs + 200'000, 0, values + 2});
  ASSERT_FALSE(r.kernels.empty());
  r.kernels[0].metricAverages = values + 1;
  MemorySink written;
  writeTrace(trace_, "t", {}, written);
  const std::string file = writeSample("t.pftrace");
  MemorySink read;
  readTraceFile(file, read, "t", budgetOf());
  EXPECT_EQ(describe(read), describe(written));
  std::size_t metricCounters = 0;
  for (const OwnedEvent& e : read.events()) {
    if (e.phase != Phase::Counter || e.category != "gpu_metric") continue;
    ++metricCounters;
    EXPECT_EQ(e.pid, 0);
    EXPECT_EQ(e.tid, kGpuMetricsTid);
    ASSERT_EQ(e.args.size(), 1u);
    EXPECT_EQ(e.args[0].key, e.name == "DRAM read" ? "bytes/s" : "%");
  }
  EXPECT_EQ(metricCounters, 4u);
}

// A .pftrace holds its packets compressed (TracePacket.compressed_packets, as Perfetto's own
// service writes them when it compresses): the file starts with such a packet, and each
// chunk of packets, when there are several, reads back in order.
TEST_F(TraceReaderTest, APftraceHoldsItsPacketsCompressedAndEveryChunkReadsBack) {
  if (!packetCompressionAvailable()) GTEST_SKIP() << "built without zlib";
  const std::string file = writeSample("t.pftrace");
  const std::string bytes = readFile(file);
  std::string_view rest = bytes;
  uint64_t key = 0, length = 0;
  rest.remove_prefix(proto::readVarint(rest, &key));
  EXPECT_EQ(key, (uint64_t{pftrace::kTracePacket} << 3) | 2);
  rest.remove_prefix(proto::readVarint(rest, &length));
  proto::readVarint(rest, &key);
  EXPECT_EQ(key, (uint64_t{pftrace::kPacketCompressedPackets} << 3) | 2);

  // Small chunks: many compressed packets, each a zlib stream of its own.
  MemorySink written;
  writeTrace(trace_, "t", {}, written);
  const std::string chunked = path("chunked.pftrace");
  {
    PerfettoSink sink(
        std::make_unique<CompressedPacketsOutput>(std::make_unique<AtomicFile>(chunked)),
        /*bufferBytes=*/256);
    writeTrace(trace_, "t", {}, sink);
  }
  MemorySink read;
  readTraceFile(chunked, read, "t", budgetOf());
  EXPECT_EQ(describe(read), describe(written));
  EXPECT_GT(std::filesystem::file_size(chunked), std::filesystem::file_size(file))
      << "small chunks compress less well";
}

// Several threads compress chunks side by side; the packets still come out in the order
// they went in, each a whole zlib stream, however the threads' work interleaves.
TEST(CompressedPacketsOutputTest, ChunksCompressedBySeveralThreadsAreWrittenInOrder) {
  if (!packetCompressionAvailable()) GTEST_SKIP() << "built without zlib";
  struct Collect : ByteOutput {
    std::string* bytes;
    explicit Collect(std::string* into) : bytes(into) {}
    void write(const char* data, std::size_t size) override { bytes->append(data, size); }
    void commit() override {}
  };
  for (std::size_t threads : {1, 2, 4}) {
    std::string written;
    std::string expected;
    {
      CompressedPacketsOutput output(std::make_unique<Collect>(&written), threads);
      for (uint64_t i = 0; i < 300; ++i) {
        // A chunk of TracePackets { timestamp: i } of varying length.
        std::string chunk;
        for (uint64_t j = 0; j <= i % 7; ++j) {
          std::string packet(1, '\x08');
          for (uint64_t v = i * 8 + j;; v >>= 7) {
            packet += static_cast<char>(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
            if (v < 0x80) break;
          }
          chunk += '\x0a';
          chunk += static_cast<char>(packet.size());
          chunk += packet;
        }
        output.write(chunk.data(), chunk.size());
        expected += chunk;
      }
      output.commit();
    }
    // Each packet of the output: TracePacket { compressed_packets: zlib(chunk) }.
    std::string inflated;
    std::string_view rest = written;
    while (!rest.empty()) {
      uint64_t key = 0, length = 0;
      rest.remove_prefix(proto::readVarint(rest, &key));
      ASSERT_EQ(key, (uint64_t{pftrace::kTracePacket} << 3) | 2);
      rest.remove_prefix(proto::readVarint(rest, &length));
      std::string_view packet = rest.substr(0, length);
      rest.remove_prefix(length);
      packet.remove_prefix(proto::readVarint(packet, &key));
      ASSERT_EQ(key, (uint64_t{pftrace::kPacketCompressedPackets} << 3) | 2);
      packet.remove_prefix(proto::readVarint(packet, &length));
      ASSERT_EQ(packet.size(), length);
      inflated += inflatePackets(packet, 1 << 20);
    }
    EXPECT_EQ(inflated, expected) << threads << " threads";
  }
}

TEST_F(TraceReaderTest, ACorruptCompressedPacketIsAnErrorNamingIt) {
  if (!packetCompressionAvailable()) GTEST_SKIP() << "built without zlib";
  std::string bytes = readFile(writeSample("t.pftrace"));
  // Past the frame (packet key and length, field key and length): zlib's own bytes.
  for (std::size_t i = 12; i < 40 && i < bytes.size(); ++i) bytes[i] = static_cast<char>(~bytes[i]);
  writeFile(path("bad.pftrace"), bytes);
  const std::string error = errorReading(path("bad.pftrace"));
  EXPECT_NE(error.find("compressed packets cannot be inflated"), std::string::npos) << error;
  EXPECT_NE(error.find(path("bad.pftrace") + ": packet at byte 0"), std::string::npos) << error;
}

// What the disk says when it fills reaches the sink from the compressing thread.
TEST(CompressedPacketsOutputTest, AnErrorBelowIsThrownByALaterWriteOrTheCommit) {
  if (!packetCompressionAvailable()) GTEST_SKIP() << "built without zlib";
  struct FullDisk : ByteOutput {
    void write(const char*, std::size_t) override { throw Error("No space left on device"); }
    void commit() override {}
  };
  CompressedPacketsOutput output(std::make_unique<FullDisk>());
  const std::string packet = "\x0a\x02\x08\x01";  // a TracePacket { timestamp: 1 }
  try {
    for (int i = 0; i < 100; ++i) output.write(packet.data(), packet.size());
    output.commit();
    FAIL() << "the error below was lost";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "No space left on device");
  }
  // A small first chunk is compressed and written at once: write() throws what the disk said.
  CompressedPacketsOutput small(std::make_unique<FullDisk>());
  EXPECT_THROW(small.write(packet.data(), packet.size()), Error);
  // A large one is kept until commit() (no second chunk came), which throws it.
  CompressedPacketsOutput large(std::make_unique<FullDisk>());
  const std::string chunk = [&packet] {
    std::string packets;
    while (packets.size() <= (std::size_t{64} << 10)) packets += packet;
    return packets;
  }();
  large.write(chunk.data(), chunk.size());
  EXPECT_THROW(large.commit(), Error);
}

TEST_F(TraceReaderTest, JsonAndJsonGzReadBackAsTheEventsThatWereWritten) {
  MemorySink written;
  writeTrace(trace_, "t", {}, written);
  for (const char* name : {"t.json", "t.json.gz"}) {
    const std::string file = writeSample(name);
    EXPECT_EQ(detectTraceFormat(file, budgetOf()), TraceFileFormat::ChromeJson) << name;
    MemorySink read;
    readTraceFile(file, read, "renamed", budgetOf());
    EXPECT_EQ(describe(read, false), describe(written, false)) << name;
    EXPECT_EQ(read.header().baseTimeNs, trace_.startNs);
    Metadata expected = trace_.header;
    expected.push_back({"displayTimeUnit", "ms"});  // the JSON sink adds it
    EXPECT_EQ(read.header().metadata, expected);
    // The name the JSON sink wrote after the events comes with the footer.
    Metadata footer = trace_.footer;
    footer.push_back({"traceName", name});
    EXPECT_EQ(read.footer(), footer);
  }
}

// torch.profiler's layout: times in microseconds relative to baseTimeNanoseconds with up to
// three decimals (and more from some tools), nested arguments, phases kinetrace's model has
// no place for.
constexpr const char* kTorchStyle = R"({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
  "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 11, "tid": 12, "ts": 12.345, "dur": 1.5,
   "args": {"External id": 3, "Input Dims": [[8, 512], [512, 64]], "Input type": ["float", "float"],
            "Concrete Inputs": ["", ""], "Sequence number": 18446744073709551615, "grid": [4, 2, 1]}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100.0004, "dur": 2.0006},
  {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 100.0004, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 11, "tid": 12, "ts": 7, "s": "t",
   "args": {"Total Allocated": 512, "Addr": 140000000000}},
  {"ph": "B", "name": "open", "pid": 11, "tid": 12, "ts": 1},
  {"ph": "E", "pid": 11, "tid": 12, "ts": 2},
  {"ph": "X", "name": "spans", "pid": "Spans", "tid": 1, "ts": 1, "dur": 1},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 11, "tid": 0, "args": {"name": "python"}}
  ],
  "traceName": "old.json",
  "displayTimeUnit": "ms"
})";

TEST_F(TraceReaderTest, ATorchProfilerTraceReadsWithItsNestedArgumentsKept) {
  writeFile(path("torch.json"), kTorchStyle);
  MemorySink read;
  const ReadReport report = readTraceFile(path("torch.json"), read, "new.pftrace", budgetOf());
  constexpr int64_t kBase = 1'700'000'000'000'000'000;
  ASSERT_EQ(read.events().size(), 5u);
  const OwnedEvent& mm = read.events()[0];
  EXPECT_EQ(mm.timestampNs, kBase + 12'345);
  EXPECT_EQ(mm.durationNs, 1'500);
  EXPECT_EQ(describe(mm),
            "X name=aten::mm cat=cpu_op pid=11 tid=12 ts=1700000000000012345 dur=1500 flow=0 "
            "External id=3<0> Input Dims=json([[8,512],[512,64]])<6> "
            "Input type=json([\"float\",\"float\"])<6> Concrete Inputs=json([\"\",\"\"])<6> "
            "Sequence number=18446744073709551615<1> grid=dim3(4,2,1)<5>");
  // Four decimals: rounded to the nanosecond, from the digits (a double would be off).
  EXPECT_EQ(read.events()[1].timestampNs, kBase + 100'000);
  EXPECT_EQ(read.events()[1].durationNs, 2'001);
  EXPECT_EQ(read.events()[2].phase, Phase::FlowEnd);
  EXPECT_EQ(read.events()[2].flowId, 5u);
  EXPECT_EQ(read.events()[3].timestampNs, kBase + 7'000);
  EXPECT_EQ(read.events()[4].phase, Phase::Metadata);

  EXPECT_EQ(report.events, 5u);
  EXPECT_EQ(report.skipped,
            (std::map<std::string, uint64_t>{{"events of phase 'B'", 1},
                                             {"events of phase 'E'", 1},
                                             {"events whose pid or tid is not a number", 1}}));
  EXPECT_EQ(read.header().traceName, "new.pftrace");
  EXPECT_EQ(read.header().baseTimeNs, kBase);
  ASSERT_EQ(read.header().metadata.size(), 2u);
  EXPECT_EQ(read.header().metadata[1].key, "deviceProperties");
  EXPECT_EQ(read.footer(), (Metadata{{"traceName", "old.json"}, {"displayTimeUnit", "ms"}}))
      << "its own name, after the events, comes with the footer";
}

TEST_F(TraceReaderTest, TheJsonArrayFormatIsATraceToo) {
  writeFile(path("array.json"), R"([{"ph":"X","name":"a","pid":1,"tid":2,"ts":3,"dur":4}])");
  MemorySink read;
  readTraceFile(path("array.json"), read, "x", budgetOf());
  ASSERT_EQ(read.events().size(), 1u);
  EXPECT_EQ(read.events()[0].timestampNs, 3'000);
  EXPECT_EQ(read.events()[0].durationNs, 4'000);
  EXPECT_TRUE(read.ended());
}

TEST_F(TraceReaderTest, NestedArgumentsSurviveAPftraceRoundTrip) {
  writeFile(path("torch.json"), kTorchStyle);
  MemorySink direct;
  readTraceFile(path("torch.json"), direct, "x", budgetOf());
  {
    std::unique_ptr<Sink> pftrace = openSink(path("torch.pftrace"));
    readTraceFile(path("torch.json"), *pftrace, "x", budgetOf());
  }
  MemorySink back;
  readTraceFile(path("torch.pftrace"), back, "x", budgetOf());
  EXPECT_EQ(describe(back), describe(direct));
  EXPECT_EQ(back.header().metadata, direct.header().metadata);
}

TEST_F(TraceReaderTest, BadInputIsAnErrorNamingTheFileAndTheProblem) {
  writeFile(path("text.json"), "hello");
  EXPECT_EQ(errorReading(path("text.json")),
            path("text.json") +
                " is not a trace: it starts with 'h' where Chrome trace JSON starts with '{' or "
                "'[' and a Perfetto trace with the byte 0x0a");

  writeFile(path("cut.json"), R"({"traceEvents": [{"ph": "X", "name": "a)");
  const std::string cut = errorReading(path("cut.json"));
  EXPECT_EQ(cut.rfind(path("cut.json") + " is not valid JSON at byte ", 0), 0u) << cut;
  EXPECT_NE(cut.find("(is the file truncated?)"), std::string::npos) << cut;

  writeFile(path("bad.json"), R"({"traceEvents": [{"ph": "X",, }]})");
  const std::string bad = errorReading(path("bad.json"));
  EXPECT_EQ(bad.rfind(path("bad.json") + " is not valid JSON at byte 29: ", 0), 0u) << bad;

  writeFile(path("empty.json"), "");
  EXPECT_EQ(errorReading(path("empty.json")), path("empty.json") + " is empty: not a trace");
  EXPECT_EQ(errorReading(path("missing.json")),
            "cannot read " + path("missing.json") + ": open failed: No such file or directory");
  EXPECT_EQ(errorReading(dir_.path()), "cannot read " + dir_.path() + ": it is a directory");

  writeFile(path("late.json"),
            R"({"traceEvents": [{"ph":"i","name":"a","ts":1}], "baseTimeNanoseconds": 5})");
  EXPECT_NE(errorReading(path("late.json")).find("baseTimeNanoseconds comes after traceEvents"),
            std::string::npos);

  writeFile(path("config.json"), R"({"lr": 0.1, "epochs": 3})");
  EXPECT_EQ(errorReading(path("config.json")),
            path("config.json") + " is not a Chrome trace: it has no traceEvents array");

  writeFile(path("scalar.json"), R"({"traceEvents": [1]})");
  EXPECT_EQ(
      errorReading(path("scalar.json")),
      path("scalar.json") + " is not a Chrome trace: an element of traceEvents is not an object");
}

TEST_F(TraceReaderTest, ATruncatedGzipIsAnError) {
  const std::string full = readFile(writeSample("t.json.gz"));
  writeFile(path("cut.json.gz"), full.substr(0, full.size() / 2));
  const std::string error = errorReading(path("cut.json.gz"));
  EXPECT_NE(error.find("cannot read " + path("cut.json.gz") + ": the gzip data is truncated"),
            std::string::npos)
      << error;
}

TEST_F(TraceReaderTest, ATruncatedPftraceIsAnError) {
  const std::string full = readFile(writeSample("t.pftrace"));
  writeFile(path("cut.pftrace"), full.substr(0, full.size() - 3));
  const std::string inside = errorReading(path("cut.pftrace"));
  EXPECT_NE(inside.find(" ends inside the packet at byte "), std::string::npos) << inside;
  EXPECT_NE(inside.find("(is the file truncated?)"), std::string::npos) << inside;
}

// A sequence that clears its incremental state again part way (Perfetto's own writers do,
// e.g. after a buffer wrapped; kinetrace's writer clears each sequence's state once, at its
// start): the strings it defined before are gone, ids mean what the new interned data says,
// and the clock snapshot that comes with the reset restarts the incremental clock.
TEST_F(TraceReaderTest, APftraceSequenceThatClearsItsStateAgainReadsWithItsNewStringsAndClock) {
  using namespace pftrace;
  constexpr int64_t kStart = 1'750'000'000'000'000'000;
  const std::string file = path("reset.pftrace");
  {
    // Packets left uncompressed, so the test can add its own among them.
    std::unique_ptr<Sink> sink = std::make_unique<PerfettoSink>(std::make_unique<AtomicFile>(file));
    sink->begin(TraceHeader{"reset", kStart, {}});
    Event slice;
    slice.phase = Phase::Complete;
    slice.name = "before";
    slice.category = "cpu_op";
    slice.pid = 1;
    slice.tid = 1;
    slice.timestampNs = kStart + 100;
    slice.durationNs = 50;
    sink->write(slice);
    sink->end({});
  }
  // The slice's sequence and track (its sequence's default track).
  const std::string original = readFile(file);
  const auto [sequence, track] = testing::eventSequenceOf(original);
  ASSERT_NE(sequence, 0u);
  ASSERT_NE(track, 0u);

  // Before the footer (the last packet): the reset, then two instants whose id 1 now names
  // "after reset", their times steps on clock 64 from its new reading.
  proto::ByteBuffer added;
  proto::ProtoWriter w(added);
  std::size_t packet = w.beginMessage(kTracePacket);
  w.varint(kPacketSequenceId, sequence);
  w.varint(kPacketSequenceFlags, kSeqIncrementalStateCleared);
  std::size_t defaults = w.beginMessage(kPacketTracePacketDefaults);
  w.varint(kDefaultsTimestampClockId, kDefaultClockId);
  const std::size_t eventDefaults = w.beginMessage(kDefaultsTrackEvent);
  w.varint(kTrackEventDefaultsTrackUuid, track);
  w.endMessage(eventDefaults);
  w.endMessage(defaults);
  const std::size_t snapshot = w.beginMessage(kPacketClockSnapshot);
  std::size_t clock = w.beginMessage(kSnapshotClocks);
  w.varint(kClockId, kClockBoottime);
  w.varint(kClockTimestamp, kTimebaseLeadNs + 1'000);  // the timebase + 1000 ns ...
  w.endMessage(clock);
  clock = w.beginMessage(kSnapshotClocks);
  w.varint(kClockId, kDefaultClockId);
  w.varint(kClockTimestamp, 500);  // ... is 500 on clock 64
  w.boolean(kClockIsIncremental, true);
  w.endMessage(clock);
  w.endMessage(snapshot);
  w.endMessage(packet);
  for (uint64_t step : {600, 50}) {
    packet = w.beginMessage(kTracePacket);
    w.varint(kPacketTimestamp, step);
    w.varint(kPacketSequenceId, sequence);
    if (step == 600) {
      const std::size_t interned = w.beginMessage(kPacketInternedData);
      for (uint32_t kind : {kInternedEventNames, kInternedCategories}) {
        const std::size_t entry = w.beginMessage(kind);
        w.varint(kInternedIid, 1);
        w.bytes(kInternedName, kind == kInternedEventNames ? "after reset" : "user_instant");
        w.endMessage(entry);
      }
      w.endMessage(interned);
    }
    const std::size_t event = w.beginMessage(kPacketTrackEvent);
    w.varint(kEventType, kTypeInstant);
    w.varint(kEventNameIid, 1);
    w.varint(kEventCategoryIids, 1);
    w.endMessage(event);
    w.endMessage(packet);
  }
  writeFile(file, testing::withPacketsBeforeTheFooter(original, added.view()));

  MemorySink read;
  readTraceFile(file, read, "reset", budgetOf());
  ASSERT_EQ(read.events().size(), 3u);
  EXPECT_EQ(describe(read.events()[0]), "X name=before cat=cpu_op pid=1 tid=1 ts=" +
                                            std::to_string(kStart + 100) + " dur=50 flow=0");
  for (std::size_t i : {1, 2}) {
    EXPECT_EQ(describe(read.events()[i]), "i name=after reset cat=user_instant pid=1 tid=1 ts=" +
                                              std::to_string(kStart + (i == 1 ? 1'600 : 1'650)) +
                                              " dur=0 flow=0");
  }
}

// A file in kinetrace's first .pftrace layout ("kinetrace pftrace 1"): every packet on
// sequence 1, absolute times, a track uuid on every event, fixed64 flow ids.
TEST_F(TraceReaderTest, APftraceInTheFirstLayoutStillReads) {
  using namespace pftrace;
  constexpr int64_t kStart = 1'750'000'000'000'000'000;
  proto::ByteBuffer bytes;
  proto::ProtoWriter w(bytes);
  auto interned = [&w](uint32_t kind, uint64_t iid, std::string_view text) {
    const std::size_t entry = w.beginMessage(kind);
    w.varint(kInternedIid, iid);
    w.bytes(kInternedName, text);
    w.endMessage(entry);
  };
  auto annotation = [&w](uint64_t nameIid, bool isString, int64_t i, std::string_view text) {
    const std::size_t a = w.beginMessage(kEventDebugAnnotations);
    w.varint(kAnnotationNameIid, nameIid);
    if (isString) {
      w.bytes(kAnnotationString, text);
    } else {
      w.signedVarint(kAnnotationInt, i);
    }
    w.endMessage(a);
  };
  auto descriptor = [&w](uint64_t uuid, uint64_t parent, int kind) {  // 0 metadata, 1, 2
    const std::size_t packet = w.beginMessage(kTracePacket);
    w.varint(kPacketSequenceId, 1);
    const std::size_t track = w.beginMessage(kPacketTrackDescriptor);
    w.varint(kTrackUuid, uuid);
    if (kind == 0) w.bytes(kTrackName, kMetadataTrackName);
    if (kind == 2) w.varint(kTrackParentUuid, parent);
    const std::size_t part =
        kind == 0 ? 0 : w.beginMessage(kind == 1 ? kTrackProcess : kTrackThread);
    if (kind == 1) w.varint(kProcessPid, 7);
    if (kind == 2) {
      w.varint(kThreadPid, 7);
      w.varint(kThreadTid, 8);
    }
    if (kind != 0) w.endMessage(part);
    w.endMessage(track);
    w.endMessage(packet);
  };
  // Opens a packet at `time` (after the timebase) with a track event on `track`.
  std::size_t packet = 0;
  std::size_t event = 0;
  auto open = [&](uint64_t time, uint64_t type, uint64_t track) {
    packet = w.beginMessage(kTracePacket);
    w.varint(kPacketTimestamp, time);
    w.varint(kPacketSequenceId, 1);
    event = w.beginMessage(kPacketTrackEvent);
    w.varint(kEventType, type);
    w.varint(kEventTrackUuid, track);
  };
  auto close = [&](bool withInterned, auto addInterned) {
    w.endMessage(event);
    if (withInterned) {
      const std::size_t data = w.beginMessage(kPacketInternedData);
      addInterned();
      w.endMessage(data);
    }
    w.endMessage(packet);
  };

  std::size_t first = w.beginMessage(kTracePacket);
  w.varint(kPacketSequenceId, 1);
  w.varint(kPacketSequenceFlags, kSeqIncrementalStateCleared);
  w.endMessage(first);
  descriptor(kMetadataTrackUuid, 0, 0);
  open(kTimebaseLeadNs, kTypeInstant, kMetadataTrackUuid);
  w.varint(kEventCategoryIids, 1);
  w.varint(kEventNameIid, 1);
  annotation(1, true, 0, "old");
  annotation(2, false, kStart, {});
  annotation(3, false, kStart - kTimebaseLeadNs, {});
  annotation(4, true, 0, kFormatNameLayout1);
  close(true, [&] {
    interned(kInternedCategories, 1, kLayoutCategory);
    interned(kInternedEventNames, 1, kHeaderEventName);
    interned(kInternedEventNames, 2, kFooterEventName);
    interned(kInternedEventNames, 3, "kernel");
    interned(kInternedCategories, 2, "kernel");
    interned(kInternedAnnotationNames, 1, "traceName");
    interned(kInternedAnnotationNames, 2, "baseTimeNanoseconds");
    interned(kInternedAnnotationNames, 3, "timebaseNanoseconds");
    interned(kInternedAnnotationNames, 4, "format");
  });
  descriptor(2, 0, 1);
  descriptor(3, 2, 2);
  open(kTimebaseLeadNs + 500, kTypeSliceBegin, 3);
  w.varint(kEventCategoryIids, 2);
  w.varint(kEventNameIid, 3);
  w.fixed64(kEventTerminatingFlowIds, 42);
  close(false, [] {});
  open(kTimebaseLeadNs + 700, kTypeSliceEnd, 3);
  close(false, [] {});
  open(kTimebaseLeadNs, kTypeInstant, kMetadataTrackUuid);
  w.varint(kEventCategoryIids, 1);
  w.varint(kEventNameIid, 2);
  close(false, [] {});

  // The trace: a Trace message is its packets, which the buffer holds.
  writeFile(path("old.pftrace"), std::string(bytes.view()));
  MemorySink read;
  readTraceFile(path("old.pftrace"), read, "old", budgetOf());
  EXPECT_EQ(read.header().baseTimeNs, kStart);
  ASSERT_EQ(read.events().size(), 2u);
  EXPECT_EQ(describe(read.events()[0]), "X name=kernel cat=kernel pid=7 tid=8 ts=" +
                                            std::to_string(kStart + 500) + " dur=200 flow=0");
  EXPECT_EQ(describe(read.events()[1]), "f name=ac2g cat=ac2g pid=7 tid=8 ts=" +
                                            std::to_string(kStart + 500) + " dur=0 flow=42");
  EXPECT_TRUE(read.ended());
}

TEST_F(TraceReaderTest, APftraceThatKinetraceDidNotWriteIsRefusedWithWhy) {
  // One packet holding a track event, as any Perfetto producer writes: no kinetrace header.
  std::string event = "\x48\x03\x58\x05";  // TrackEvent {type: INSTANT, track_uuid: 5}
  std::string packet = std::string("\x40\x01\x5a") + static_cast<char>(event.size()) + event;
  writeFile(path("other.pftrace"), std::string("\x0a") + static_cast<char>(packet.size()) + packet);
  const std::string error = errorReading(path("other.pftrace"));
  EXPECT_NE(error.find("its first event is not kinetrace's trace header"), std::string::npos)
      << error;
  EXPECT_NE(error.find("kinetrace reads the .pftrace files kinetrace writes"), std::string::npos);
}

}  // namespace
}  // namespace kinetrace::detail
