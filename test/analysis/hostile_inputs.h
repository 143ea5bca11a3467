#pragma once

// Hostile inputs for the readers' tests, made small by a generator in the test: gzip and
// zlib streams, .pftrace files of kinetrace's with packets of the test's own put before the
// footer, a sink that keeps what the tests look at, and a fixture that reads a file within
// a budget, checking that the reader gave back all it took and never went past the cap.

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#ifdef KINETRACE_HAVE_ZLIB
#include <zlib.h>
#endif

#include "analysis/read_budget.h"
#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "output/atomic_file.h"
#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/perfetto_sink.h"
#include "output/protobuf.h"
#include "pftrace_surgery.h"
#include "support/temp_dir.h"

namespace kinetrace::detail {

inline void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

#ifdef KINETRACE_HAVE_ZLIB
inline std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A zlib stream (RFC 1950), as compressed_packets holds.
inline std::string zlibCompress(const std::string& bytes) {
  uLongf size = compressBound(bytes.size());
  std::string out(size, '\0');
  EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                      reinterpret_cast<const Bytef*>(bytes.data()), bytes.size(), 6),
            Z_OK);
  out.resize(size);
  return out;
}
#endif

// A sink that keeps what the tests look at: names, durations, the footer, and whether
// every event's category pointed somewhere.
class RecordingSink final : public Sink {
 public:
  void begin(const TraceHeader&) override {}
  void write(const Event& event) override {
    names.emplace_back(event.name);
    durations.push_back(event.durationNs);
    if (event.category.data() == nullptr || event.name.data() == nullptr) nullViews = true;
    heapInUse.push_back(mallinfo2().uordblks);
  }
  void end(const Metadata& f) override { footer = f; }

  std::vector<std::string> names;
  std::vector<int64_t> durations;
  std::vector<std::size_t> heapInUse;
  Metadata footer;
  bool nullViews = false;
};

class HostileInputFixture : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string errorReading(const std::string& file,
                           std::size_t memoryBytes = kDefaultReadBudgetBytes) {
    RecordingSink sink;
    ReadBudget budget(memoryBytes);
    try {
      readTraceFile(file, sink, "out", budget);
    } catch (const Error& error) {
      EXPECT_EQ(budget.used(), 0u) << "a reader that fails gives back all it took";
      EXPECT_LE(budget.peak(), budget.cap());
      return error.what();
    }
    EXPECT_EQ(budget.used(), 0u) << "a reader gives back all it took";
    EXPECT_LE(budget.peak(), budget.cap());
    return "(no error)";
  }

  // A .pftrace of one slice, its packets uncompressed, with `added` (framed packets) put
  // before the footer; the slice's sequence and track are given to `make`.
  template <typename Make>
  std::string pftraceWith(const std::string& name, Make make) {
    using namespace pftrace;
    const std::string file = path(name);
    {
      std::unique_ptr<Sink> sink =
          std::make_unique<PerfettoSink>(std::make_unique<AtomicFile>(file));
      sink->begin(TraceHeader{"t", 1'000'000, {}});
      Event slice;
      slice.phase = Phase::Complete;
      slice.name = "first";
      slice.category = "cpu_op";
      slice.pid = 1;
      slice.tid = 1;
      slice.timestampNs = 1'000'100;
      slice.durationNs = 50;
      sink->write(slice);
      sink->end({});
    }
    const std::string original = readFile(file);
    const testing::EventSequence events = testing::eventSequenceOf(original);
    EXPECT_NE(events.track, 0u);
    writeFile(file,
              testing::withPacketsBeforeTheFooter(original, make(events.sequence, events.track)));
    return file;
  }

  // A framed TracePacket holding a track event on the slice's sequence, at `timeNs` on
  // BOOTTIME, its body written by `body`.
  template <typename Body>
  static std::string eventPacket(uint64_t sequence, uint64_t timeNs, Body body) {
    using namespace pftrace;
    proto::ByteBuffer bytes;
    proto::ProtoWriter w(bytes);
    const std::size_t packet = w.beginMessage(kTracePacket);
    w.varint(kPacketSequenceId, sequence);
    w.varint(kPacketTimestamp, timeNs);
    w.varint(kPacketTimestampClockId, kClockBoottime);
    const std::size_t event = w.beginMessage(kPacketTrackEvent);
    body(w);
    w.endMessage(event);
    w.endMessage(packet);
    return std::string(bytes.data(), bytes.size());
  }

  testing::TempDir dir_;
};

}  // namespace kinetrace::detail
