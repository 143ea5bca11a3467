#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kinetrace/sink.h"
#include "output/atomic_file.h"

namespace kinetrace::detail {

// Writes a trace as Chrome Trace Event JSON in PyTorch profiler's layout, streamed: events
// are serialised into a fixed buffer that is handed to the output whenever it fills, so a
// multi-gigabyte trace needs no more memory than the buffer.
//
//   {
//     "schemaVersion": 1,                       <- header metadata, in order, one line each
//     "distributedInfo": {"rank": 0, "world_size": 8},
//     "baseTimeNanoseconds": B,
//     "displayTimeUnit": "ms",                   <- unless the header gives one
//     "traceEvents": [
//   {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":12.345,"dur":3.5,"args":{...}},
//   ...
//     ],
//     "kinetrace_cupti_dropped_records": 0,      <- footer metadata, in order, one line each
//     "traceName": "out.json"
//   }
//
// Every top-level metadata value is written on one line as `  "key": <value>,` (two spaces,
// the quoted key, a colon, a space, the value, a comma): tools grep multi-gigabyte traces
// for these lines, so that shape is kept. Keys the sink writes itself (traceEvents,
// traceName, baseTimeNanoseconds) are skipped when given. Doubles that are NaN or infinite
// become null (JSON has neither).
//
// "ts" and "dur" are microseconds relative to B, written from integers with exactly three
// decimals of precision (trailing zeros dropped), so no nanosecond is lost to rounding.
// The sink only calls output.commit() in end(); destroying it earlier discards the output.
class ChromeJsonSink final : public Sink {
 public:
  static constexpr std::size_t kDefaultBufferBytes = std::size_t{1} << 20;

  explicit ChromeJsonSink(std::unique_ptr<ByteOutput> output,
                          std::size_t bufferBytes = kDefaultBufferBytes);
  ~ChromeJsonSink() override;
  ChromeJsonSink(const ChromeJsonSink&) = delete;
  ChromeJsonSink& operator=(const ChromeJsonSink&) = delete;

  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  // Kept until end(), which writes each track's naming events once, with its latest name.
  void describe(const Track& track) override;
  void end(const Metadata& footer) override;

 private:
  enum class State { Created, Writing, Ended, Failed };
  // Writes through reserve(), chunking long strings: for the header, the footer and the
  // rare event too large for one reservation. Events normally go straight into the buffer.
  class CheckedWriter;

  // `  "key": <value>,` on a line of its own, for each key the sink does not write itself.
  void writeMetadataLines(const Metadata& metadata, bool* sawDisplayTimeUnit);

  void expectState(State expected, const char* call) const;
  void reserve(std::size_t bytes) {
    if (capacity_ - size_ < bytes) makeRoom(bytes);
  }
  void makeRoom(std::size_t bytes);
  void flush();

  std::unique_ptr<ByteOutput> output_;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  int64_t baseTimeNs_ = 0;
  std::string traceName_;
  State state_ = State::Created;
  bool firstEvent_ = true;
  std::vector<OwnedTrack> tracks_;  // described, the latest of each
};

// The built-in sink for bare paths and "file://" URLs: a ChromeJsonSink over an AtomicFile.
// "file:///abs/x.json" is /abs/x.json; "file://x.json" is the relative path x.json.
std::unique_ptr<Sink> openChromeJsonFile(const std::string& pathOrFileUrl, const PathRule& rule);

}  // namespace kinetrace::detail
