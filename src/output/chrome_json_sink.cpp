#include "output/chrome_json_sink.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>

#include "kinetrace/error.h"
#include "output/chrome_naming.h"
#include "output/gzip_output.h"
#include "output/json_escape.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

// Strings up to this size are escaped in one piece; longer ones in chunks, so the buffer
// never has to hold the worst-case expansion of a huge string.
constexpr std::size_t kStringChunkBytes = 16 * 1024;
// Room for any number we print: 20 digits of a 64-bit integer, a sign, and a fraction;
// the longest shortest-round-trip double is 24 characters.
constexpr std::size_t kNumberBytes = 32;
// An event's bytes besides its strings: field names, punctuation and five numbers.
constexpr std::size_t kEventFixedBytes = 128 + 5 * kNumberBytes;
// An arg's bytes besides its strings: quotes, separators, up to three numbers (Dim3).
constexpr std::size_t kArgFixedBytes = 16 + 3 * kNumberBytes;
// Events whose bound exceeds this take the checked path, so one reservation never needs
// more than a fraction of the buffer.
constexpr std::size_t kLargestDirectEventBytes = 64 * 1024;

// ---- numbers, written at a pointer with room for kNumberBytes ------------------------

// Most integers in a trace are small (device, stream, context, sizes of a launch): one or
// two digits go out without the general conversion.
inline char* writeUint(char* out, uint64_t value) {
  if (value < 10) {
    *out = static_cast<char>('0' + value);
    return out + 1;
  }
  if (value < 100) {
    out[0] = static_cast<char>('0' + value / 10);
    out[1] = static_cast<char>('0' + value % 10);
    return out + 2;
  }
  return fmt::format_to(out, FMT_COMPILE("{}"), value);
}

inline char* writeInt(char* out, int64_t value) {
  if (value < 0) {
    *out++ = '-';
    return writeUint(out, 0 - static_cast<uint64_t>(value));
  }
  return writeUint(out, static_cast<uint64_t>(value));
}

// magnitude / 10^digits with the fraction's trailing zeros dropped.
inline char* writeFixedPoint(char* out, uint64_t magnitude, int digits, uint64_t scale) {
  out = writeUint(out, magnitude / scale);
  uint64_t fraction = magnitude % scale;
  if (fraction == 0) return out;
  *out++ = '.';
  while (fraction % 10 == 0) {
    fraction /= 10;
    --digits;
  }
  for (int i = digits - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + fraction % 10);
    fraction /= 10;
  }
  return out + digits;
}

// Nanoseconds as microseconds, from integers only: going through a double would print
// 1234.5670000000001 or lose the last nanosecond of a large timestamp.
inline char* writeMicros(char* out, int64_t nanoseconds) {
  if (nanoseconds < 0) *out++ = '-';
  const uint64_t magnitude =
      nanoseconds < 0 ? 0 - static_cast<uint64_t>(nanoseconds) : static_cast<uint64_t>(nanoseconds);
  return writeFixedPoint(out, magnitude, 3, 1000);
}

// `time - base` as microseconds, exactly, for any two int64 times: the difference may need
// 65 bits (a base time near INT64_MIN and a time near INT64_MAX), which a decimal number
// holds and int64 does not. In unsigned arithmetic, the larger less the smaller is the
// difference's magnitude modulo 2^64, that is exactly.
inline char* writeMicrosBetween(char* out, int64_t time, int64_t base) {
  const auto t = static_cast<uint64_t>(time);
  const auto b = static_cast<uint64_t>(base);
  if (time >= base) return writeFixedPoint(out, t - b, 3, 1000);
  *out++ = '-';
  return writeFixedPoint(out, b - t, 3, 1000);
}

// A double always reads back as a double: a whole value gets ".0" ("blocks per SM": 2.0 is
// written "2.0", not "2", which every JSON reader takes for an integer).
char* writeDouble(char* out, double value) {
  if (!std::isfinite(value)) {
    std::memcpy(out, "null", 4);  // JSON has no NaN or Infinity
    return out + 4;
  }
  // Most doubles in a trace have a few decimals (bandwidths, occupancy). When the value is
  // exactly m / 10^6 as a double, the decimal m / 10^6 parses back to the same double (both
  // are the correctly rounded value of that fraction), so integer printing is exact and
  // much cheaper than the shortest-round-trip search.
  constexpr double kScale = 1e6;
  const double scaled = std::nearbyint(value * kScale);
  if (std::fabs(scaled) < 1e15 && scaled / kScale == value) {
    const auto micro = static_cast<int64_t>(scaled);
    if (micro < 0) *out++ = '-';
    const uint64_t magnitude =
        micro < 0 ? 0 - static_cast<uint64_t>(micro) : static_cast<uint64_t>(micro);
    char* end = writeFixedPoint(out, magnitude, 6, 1'000'000);
    if (magnitude % 1'000'000 == 0) {
      std::memcpy(end, ".0", 2);
      end += 2;
    }
    return end;
  }
  char* const start = out;
  char* end = fmt::format_to(out, FMT_COMPILE("{}"), value);
  // fmt prints 1e+20 or 123456789012345680 (no '.', no 'e') for large whole values.
  if (std::find_if(start, end, [](char c) { return c == '.' || c == 'e'; }) == end) {
    std::memcpy(end, ".0", 2);
    end += 2;
  }
  return end;
}

// ---- the event layout, once, over two writers ------------------------------------------

// Writes at a pointer into a buffer already reserved for the whole event: no bounds check
// per field, and the pointer stays in a register.
class DirectWriter {
 public:
  explicit DirectWriter(char* out) : out_(out) {}
  template <std::size_t N>
  void literal(const char (&text)[N]) {
    std::memcpy(out_, text, N - 1);
    out_ += N - 1;
  }
  void string(std::string_view text) {
    *out_++ = '"';
    out_ = writeJsonEscaped(out_, text);
    *out_++ = '"';
  }
  void raw(std::string_view text) {
    std::memcpy(out_, text.data(), text.size());
    out_ += text.size();
  }
  void integer(int64_t value) { out_ = writeInt(out_, value); }
  void unsignedInteger(uint64_t value) { out_ = writeUint(out_, value); }
  void micros(int64_t nanoseconds) { out_ = writeMicros(out_, nanoseconds); }
  void microsBetween(int64_t time, int64_t base) { out_ = writeMicrosBetween(out_, time, base); }
  void number(double value) { out_ = writeDouble(out_, value); }
  char* end() const { return out_; }

 private:
  char* out_;
};

// The most bytes an event can take, its strings escaped at worst.
std::size_t eventBound(const Event& event) {
  std::size_t bound =
      kEventFixedBytes + kJsonEscapeMaxExpansion * (event.name.size() + event.category.size());
  for (std::size_t i = 0; i < event.argCount; ++i) {
    const Arg& arg = event.args[i];
    bound += kArgFixedBytes + kJsonEscapeMaxExpansion * arg.key.size();
    if (const auto* text = std::get_if<std::string_view>(&arg.value)) {
      bound += kJsonEscapeMaxExpansion * text->size();
    } else if (const auto* json = std::get_if<JsonText>(&arg.value)) {
      bound += json->text.size();
    }
  }
  return bound;
}

// How an event of that phase opens in the JSON; empty for a value no Phase names (a sink
// handed a bad event refuses it).
std::string_view phaseOpening(Phase phase) {
  switch (phase) {
    case Phase::Complete:
      return R"({"ph":"X")";
    case Phase::Instant:
      return R"({"ph":"i")";
    case Phase::Counter:
      return R"({"ph":"C")";
    case Phase::FlowStart:
      return R"({"ph":"s")";
    case Phase::FlowEnd:
      return R"({"ph":"f")";
    case Phase::Metadata:
      return R"({"ph":"M")";
  }
  return {};
}

template <typename Writer>
void writeArgValue(Writer& out, const ArgValue& value) {
  // get_if after the index switch: no bad_variant_access path in the hot loop.
  switch (value.index()) {
    case 0:
      out.integer(*std::get_if<int64_t>(&value));
      break;
    case 1:
      out.unsignedInteger(*std::get_if<uint64_t>(&value));
      break;
    case 2:
      out.number(*std::get_if<double>(&value));
      break;
    case 3:
      if (*std::get_if<bool>(&value)) {
        out.literal("true");
      } else {
        out.literal("false");
      }
      break;
    case 4:
      out.string(*std::get_if<std::string_view>(&value));
      break;
    case 5: {
      const Dim3& dim = *std::get_if<Dim3>(&value);
      out.literal("[");
      out.integer(dim.x);
      out.literal(",");
      out.integer(dim.y);
      out.literal(",");
      out.integer(dim.z);
      out.literal("]");
      break;
    }
    case 6:
      out.raw(std::get_if<JsonText>(&value)->text);
      break;
    default:
      out.literal("null");
      break;  // valueless_by_exception
  }
}

// The phase must be known (phaseOpening).
template <typename Writer>
void writeEvent(Writer& out, const Event& event, int64_t baseTimeNs) {
  out.raw(phaseOpening(event.phase));
  if (!event.category.empty()) {
    out.literal(R"(,"cat":)");
    out.string(event.category);
  }
  out.literal(R"(,"name":)");
  out.string(event.name);
  out.literal(R"(,"pid":)");
  out.integer(event.pid);
  out.literal(R"(,"tid":)");
  out.integer(event.tid);
  out.literal(R"(,"ts":)");
  out.microsBetween(event.timestampNs, baseTimeNs);
  switch (event.phase) {
    case Phase::Complete:
      out.literal(R"(,"dur":)");
      out.micros(event.durationNs);
      break;
    case Phase::Instant:
      out.literal(R"(,"s":"t")");
      break;
    case Phase::FlowStart:
      out.literal(R"(,"id":)");
      out.unsignedInteger(event.flowId);
      break;
    case Phase::FlowEnd:
      out.literal(R"(,"id":)");
      out.unsignedInteger(event.flowId);
      out.literal(R"(,"bp":"e")");
      break;
    default:
      break;
  }
  if (event.argCount > 0) {
    out.literal(R"(,"args":{)");
    for (std::size_t i = 0; i < event.argCount; ++i) {
      if (i > 0) out.literal(",");
      out.string(event.args[i].key);
      out.literal(":");
      writeArgValue(out, event.args[i].value);
    }
    out.literal("}");
  }
  out.literal("}");
}

// The trace's name: a footer's traceName (a converted trace's own, read after its events),
// else the one it began with.
const std::string& traceNameIn(const Metadata& footer, const std::string& began) {
  for (const Value::Member& member : footer) {
    if (member.key == chrome::kTraceName && member.value.kind() == Value::Kind::String) {
      return member.value.asString();
    }
  }
  return began;
}

bool isKeyTheSinkWrites(std::string_view key) {
  return key == chrome::kTraceEvents || key == chrome::kTraceName ||
         key == chrome::kBaseTimeNanoseconds;
}

// A metadata value as JSON on one line (", " and ": " between items, no line break): each
// top-level key stays one line to grep for however deep its value.
template <typename Writer>
void writeValue(Writer& out, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Null:
      out.literal("null");
      break;
    case Value::Kind::Bool:
      if (value.asBool()) {
        out.literal("true");
      } else {
        out.literal("false");
      }
      break;
    case Value::Kind::Int:
      out.integer(value.asInt());
      break;
    case Value::Kind::Uint:
      out.unsignedInteger(value.asUint());
      break;
    case Value::Kind::Double:
      out.number(value.asDouble());
      break;  // NaN, inf: null
    case Value::Kind::String:
      out.string(value.asString());
      break;
    case Value::Kind::Array: {
      out.literal("[");
      const char* separator = "";
      for (const Value& item : value.asArray()) {
        out.raw(separator);
        separator = ", ";
        writeValue(out, item);
      }
      out.literal("]");
      break;
    }
    case Value::Kind::Object: {
      out.literal("{");
      const char* separator = "";
      for (const Value::Member& member : value.asObject()) {
        out.raw(separator);
        separator = ", ";
        out.string(member.key);
        out.literal(": ");
        writeValue(out, member.value);
      }
      out.literal("}");
      break;
    }
  }
}

bool startsWithFileScheme(std::string_view url) {
  constexpr std::string_view kPrefix = "file://";
  if (url.size() < kPrefix.size()) return false;
  for (std::size_t i = 0; i < kPrefix.size(); ++i) {
    const char c = url[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != kPrefix[i]) return false;
  }
  return true;
}

}  // namespace

class ChromeJsonSink::CheckedWriter {
 public:
  explicit CheckedWriter(ChromeJsonSink& sink) : sink_(sink) {}
  template <std::size_t N>
  void literal(const char (&text)[N]) {
    raw(std::string_view(text, N - 1));
  }
  void raw(std::string_view text) {
    sink_.reserve(text.size());
    std::memcpy(at(), text.data(), text.size());
    sink_.size_ += text.size();
  }
  void string(std::string_view text) {
    literal("\"");
    while (!text.empty()) {
      const std::size_t take = jsonEscapeSplitPoint(text, kStringChunkBytes);
      sink_.reserve(take * kJsonEscapeMaxExpansion);
      moveTo(writeJsonEscaped(at(), text.substr(0, take)));
      text.remove_prefix(take);
    }
    literal("\"");
  }
  void integer(int64_t value) {
    sink_.reserve(kNumberBytes);
    moveTo(writeInt(at(), value));
  }
  void unsignedInteger(uint64_t value) {
    sink_.reserve(kNumberBytes);
    moveTo(writeUint(at(), value));
  }
  void micros(int64_t nanoseconds) {
    sink_.reserve(kNumberBytes);
    moveTo(writeMicros(at(), nanoseconds));
  }
  void microsBetween(int64_t time, int64_t base) {
    sink_.reserve(kNumberBytes);
    moveTo(writeMicrosBetween(at(), time, base));
  }
  void number(double value) {
    sink_.reserve(kNumberBytes);
    moveTo(writeDouble(at(), value));
  }

 private:
  char* at() { return sink_.buffer_.get() + sink_.size_; }
  void moveTo(char* end) { sink_.size_ = static_cast<std::size_t>(end - sink_.buffer_.get()); }

  ChromeJsonSink& sink_;
};

// "file://x.json" is taken as the relative path x.json rather than as host "x.json",
// because that is what people who type it mean.
std::unique_ptr<Sink> openChromeJsonFile(const std::string& pathOrFileUrl, const PathRule& rule) {
  std::string path = pathOrFileUrl;
  if (startsWithFileScheme(pathOrFileUrl)) {
    path.erase(0, std::string_view("file://").size());
    if (path.empty()) throw Error("trace URL \"" + pathOrFileUrl + "\" has no path");
  }
  std::unique_ptr<ByteOutput> file = std::make_unique<AtomicFile>(path, rule);
  constexpr std::string_view kGz = ".gz";
  if (path.size() > kGz.size() && path.compare(path.size() - kGz.size(), kGz.size(), kGz) == 0) {
    file = std::make_unique<GzipOutput>(std::move(file));
  }
  return std::make_unique<ChromeJsonSink>(std::move(file));
}

ChromeJsonSink::ChromeJsonSink(std::unique_ptr<ByteOutput> output, std::size_t bufferBytes)
    : output_(std::move(output)),
      // Room for the largest direct event and a string chunk, so makeRoom() rarely grows it.
      capacity_(std::max({bufferBytes, kLargestDirectEventBytes,
                          kStringChunkBytes * kJsonEscapeMaxExpansion + 64})) {
  if (!output_) throw Error("ChromeJsonSink needs an output");
  buffer_.reset(new char[capacity_]);  // not value-initialised: no 1 MiB memset
}

ChromeJsonSink::~ChromeJsonSink() = default;

void ChromeJsonSink::expectState(State expected, const char* call) const {
  if (state_ == expected) return;
  if (state_ == State::Failed) {
    throw Error(fmt::format("Sink::{}() called after a write error", call));
  }
  throw Error(fmt::format("Sink::{}() called out of order (begin, write..., end)", call));
}

void ChromeJsonSink::begin(const TraceHeader& header) {
  expectState(State::Created, "begin");
  baseTimeNs_ = header.baseTimeNs;
  traceName_ = header.traceName;
  CheckedWriter out(*this);
  bool hasDisplayTimeUnit = false;
  out.literal("{");
  writeMetadataLines(header.metadata, &hasDisplayTimeUnit);
  out.literal("\n  \"baseTimeNanoseconds\": ");
  out.integer(baseTimeNs_);
  out.literal(",");
  if (!hasDisplayTimeUnit) out.literal("\n  \"displayTimeUnit\": \"ms\",");
  out.literal("\n  \"traceEvents\": [");
  state_ = State::Writing;
}

void ChromeJsonSink::writeMetadataLines(const Metadata& metadata, bool* sawDisplayTimeUnit) {
  CheckedWriter out(*this);
  for (const Value::Member& member : metadata) {
    if (isKeyTheSinkWrites(member.key)) continue;
    if (member.key == chrome::kDisplayTimeUnit) *sawDisplayTimeUnit = true;
    out.literal("\n  ");
    out.string(member.key);
    out.literal(": ");
    writeValue(out, member.value);
    out.literal(",");
  }
}

void ChromeJsonSink::write(const Event& event) {
  expectState(State::Writing, "write");
  if (phaseOpening(event.phase).empty()) {
    throw Error(fmt::format("event \"{}\" has an unknown phase {}", event.name,
                            static_cast<int>(event.phase)));
  }
  const std::size_t bound = eventBound(event) + 2;  // + the separator
  if (bound <= kLargestDirectEventBytes) {
    reserve(bound);
    DirectWriter out(buffer_.get() + size_);
    if (firstEvent_) {
      out.literal("\n");
    } else {
      out.literal(",\n");
    }
    writeEvent(out, event, baseTimeNs_);
    size_ = static_cast<std::size_t>(out.end() - buffer_.get());
  } else {
    CheckedWriter out(*this);
    if (firstEvent_) {
      out.literal("\n");
    } else {
      out.literal(",\n");
    }
    writeEvent(out, event, baseTimeNs_);
  }
  firstEvent_ = false;
}

void ChromeJsonSink::describe(const Track& track) {
  expectState(State::Writing, "describe");
  noteLatestTrack(tracks_, track);
}

void ChromeJsonSink::end(const Metadata& footer) {
  expectState(State::Writing, "end");
  for (const OwnedTrack& kept : tracks_) {
    forEachChromeNamingEvent(trackView(kept), [this](const Event& event) { write(event); });
  }
  CheckedWriter out(*this);
  out.literal("\n  ],");
  bool unused = false;
  writeMetadataLines(footer, &unused);
  out.literal("\n  \"traceName\": ");
  out.string(traceNameIn(footer, traceName_));
  out.literal("\n}\n");
  flush();
  try {
    output_->commit();
  } catch (...) {
    state_ = State::Failed;
    throw;
  }
  state_ = State::Ended;
}

void ChromeJsonSink::makeRoom(std::size_t bytes) {
  flush();
  if (capacity_ < bytes) {
    capacity_ = bytes;
    buffer_.reset(new char[capacity_]);
  }
}

void ChromeJsonSink::flush() {
  if (size_ == 0) return;
  try {
    output_->write(buffer_.get(), size_);
  } catch (...) {
    state_ = State::Failed;
    throw;
  }
  size_ = 0;
}

}  // namespace kinetrace::detail
