// Reads Chrome trace JSON into the sink stream, with nlohmann_json's SAX parser: one event
// at a time is held as a small JSON value, so a multi-gigabyte trace reads in little memory.
// Everything the reader holds draws from the read budget: its buffers, the lexer's longest
// token, the event or metadata value being built, and the top-level metadata kept for the
// sink's header and footer.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <istream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include "analysis/byte_source.h"
#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/trace_vocabulary.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kReaderBuffers = "the JSON reader's buffers";

// The file's bytes as a streambuf for nlohmann's stream input, reporting progress.
// nlohmann's lexer keeps every byte it reads between two strings or numbers (for its error
// messages), whitespace included: long runs of whitespace outside strings are cut short
// here. A string or number (a token) is held by the lexer twice, in buffers it clears but
// never shrinks: the budget is asked for the longest token's room before the lexer holds
// it, and one too long for it is refused naming it.
class SourceBuffer : public std::streambuf {
 public:
  SourceBuffer(ByteSource& source, const ReadProgress& progress, ReadBudget& budget)
      : source_(source),
        progress_(progress),
        budget_(budget),
        buffersHold_(takeBuffers(budget)),
        tokenHold_(budget),
        raw_(new char[kBufferBytes]),
        buffer_(new char[kBufferBytes]),
        anchors_(BudgetAllocator<Anchor>(budget, kReaderBuffers)),
        // Whitespace before the trace was read while telling the format.
        rawOffset_(source.contentOffset()) {}

  // Whether the whole file has been read, and how many bytes were handed to the parser.
  bool atEnd() const { return atEnd_; }
  uint64_t delivered() const { return delivered_; }

  // The offset in the (decompressed) file of the byte the parser counts as `position`.
  uint64_t fileOffsetOf(uint64_t position) const {
    if (anchors_.empty() || position < bufferStart_) return position + droppedBefore_;
    const std::size_t k = static_cast<std::size_t>(position - bufferStart_);
    const Anchor* at = &anchors_.front();
    for (const Anchor& anchor : anchors_) {
      if (anchor.filtered > k) break;
      at = &anchor;
    }
    return at->raw + (k - at->filtered);
  }
  // The offset in the file of the next byte the parser will take.
  uint64_t fileOffsetNow() const {
    return fileOffsetOf(bufferStart_ + static_cast<uint64_t>(gptr() - eback()));
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    bufferStart_ = delivered_;
    droppedBefore_ = rawOffset_ - delivered_;
    while (true) {
      const std::size_t got = source_.read(raw_.get(), kBufferBytes);
      if (progress_) progress_(source_.consumedBytes(), source_.fileBytes());
      if (got == 0) {
        atEnd_ = true;
        anchors_.clear();
        return traits_type::eof();
      }
      const std::size_t kept = filter(got);
      if (kept == 0) continue;  // all of it whitespace let go
      delivered_ += kept;
      setg(buffer_.get(), buffer_.get(), buffer_.get() + kept);
      return traits_type::to_int_type(buffer_[0]);
    }
  }

 private:
  struct Anchor {
    std::size_t filtered;  // index in buffer_
    uint64_t raw;          // offset in the file
  };

  static BudgetHold takeBuffers(ReadBudget& budget) {
    BudgetHold hold(budget);
    hold.take(2 * (kBufferBytes + kAllocationOverheadBytes), kReaderBuffers);
    return hold;
  }

  // The lexer's two buffers double as they grow, so each may have twice the room of the
  // longest token: four times its bytes, asked for in steps so the budget is not asked per
  // byte.
  void noteTokenByte() {
    ++tokenBytes_;
    if (tokenBytes_ * 4 <= tokenHold_.bytes()) return;
    const std::size_t wanted = static_cast<std::size_t>(tokenBytes_) * 4 + kTokenStepBytes;
    if (!tokenHold_.tryTake(wanted - tokenHold_.bytes())) {
      budget_.refuse(
          fmt::format("the {} at byte {}, {} bytes long so far (the JSON parser "
                      "holds it four times over),",
                      inString_ ? "string" : "number", tokenStart_, tokenBytes_));
    }
  }

  // Copies raw_[0, size) to buffer_, dropping whitespace beyond kKeptWhitespace bytes of
  // one run outside strings; returns the bytes kept.
  std::size_t filter(std::size_t size) {
    anchors_.clear();
    bool anchorDue = true;
    std::size_t out = 0;
    for (std::size_t i = 0; i < size; ++i) {
      const char c = raw_[i];
      if (inString_) {
        noteTokenByte();
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          inString_ = false;
        }
        whitespaceRun_ = 0;
      } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        inToken_ = false;
        if (++whitespaceRun_ > kKeptWhitespace) {
          anchorDue = true;
          continue;
        }
      } else {
        whitespaceRun_ = 0;
        if (c == '"') {
          inString_ = true;
          inToken_ = false;
          tokenBytes_ = 0;
          tokenStart_ = rawOffset_ + i;
        } else if (c == ',' || c == ':' || c == '[' || c == ']' || c == '{' || c == '}') {
          inToken_ = false;
        } else {
          // A number (or a literal): the lexer holds it as it holds a string.
          if (!inToken_) {
            inToken_ = true;
            tokenBytes_ = 0;
            tokenStart_ = rawOffset_ + i;
          }
          noteTokenByte();
        }
      }
      if (anchorDue) {
        anchors_.push_back({out, rawOffset_ + i});
        anchorDue = false;
      }
      buffer_[out++] = c;
    }
    rawOffset_ += size;
    return out;
  }

  ByteSource& source_;
  const ReadProgress& progress_;
  ReadBudget& budget_;
  // Not zeroed: zeroing a fresh megabyte is 256 page faults, half of those of converting a
  // small trace.
  static constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
  // Whitespace of one run passed on as it is: byte offsets in messages stay exact for any
  // indentation, and the lexer keeps no more than this of a run.
  static constexpr std::size_t kKeptWhitespace = 256;
  static constexpr std::size_t kTokenStepBytes = std::size_t{64} << 10;
  BudgetHold buffersHold_;
  BudgetHold tokenHold_;  // the lexer's buffers: four times the longest token so far
  std::unique_ptr<char[]> raw_;
  std::unique_ptr<char[]> buffer_;
  BudgetVector<Anchor> anchors_;  // of buffer_: where its bytes were in the file
  uint64_t rawOffset_;            // file bytes filtered so far
  uint64_t bufferStart_ = 0;      // of buffer_, among the bytes delivered
  uint64_t droppedBefore_ = 0;    // whitespace dropped before buffer_
  uint64_t delivered_ = 0;
  uint64_t tokenBytes_ = 0;  // of the string or number being read
  uint64_t tokenStart_ = 0;
  std::size_t whitespaceRun_ = 0;
  bool inString_ = false;
  bool inToken_ = false;  // a number or literal
  bool escaped_ = false;
  bool atEnd_ = false;
};

// Microseconds as written ("1234.5678", "12", "-3.25", "1.5e3") to nanoseconds, exactly
// for plain decimals: a double holds an epoch time in microseconds only to ~0.25 us.
std::optional<int64_t> microsTextToNanos(const std::string& text) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  int64_t whole = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (whole > (std::numeric_limits<int64_t>::max() - 9) / 10) return std::nullopt;
    whole = whole * 10 + (text[i] - '0');
    digits = true;
  }
  int64_t fraction = 0;  // nanoseconds
  int fractionDigits = 0;
  bool roundUp = false;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      digits = true;
      if (fractionDigits < 3) {
        fraction = fraction * 10 + (text[i] - '0');
        ++fractionDigits;
      } else if (fractionDigits == 3) {
        roundUp = text[i] >= '5';
        ++fractionDigits;
      }
    }
  }
  if (!digits) return std::nullopt;
  if (i != text.size()) {
    // An exponent or something else: through a double, rounded to the nanosecond.
    char* end = nullptr;
    const double micros = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(micros)) return std::nullopt;
    const double nanos = std::round(micros * 1000.0);
    // 2^63 is exact as a double; anything at or beyond it does not fit.
    if (!(nanos > -9223372036854775808.0 && nanos < 9223372036854775808.0)) return std::nullopt;
    return static_cast<int64_t>(nanos);
  }
  while (fractionDigits < 3) {
    fraction *= 10;
    ++fractionDigits;
  }
  // Exact to the last nanosecond of int64: what a writer wrote from an int64 reads back.
  int64_t nanos = 0;
  if (__builtin_mul_overflow(whole, int64_t{1000}, &nanos) ||
      __builtin_add_overflow(nanos, fraction + (roundUp ? 1 : 0), &nanos)) {
    return std::nullopt;
  }
  return negative ? -nanos : nanos;
}

// An integer as the model holds it (int64), or why not: nlohmann reads every non-negative
// integer as unsigned, and one past 2^63 - 1 must not wrap into a negative one.
enum class IntegerStatus { Fits, NotANumber, TooLarge };
struct Integer {
  IntegerStatus status = IntegerStatus::NotANumber;
  int64_t value = 0;
};

Integer integerOf(const Json& json) {
  if (json.is_number_unsigned()) {
    const auto value = json.get<uint64_t>();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return {IntegerStatus::TooLarge, 0};
    }
    return {IntegerStatus::Fits, static_cast<int64_t>(value)};
  }
  if (json.is_number_integer()) return {IntegerStatus::Fits, json.get<int64_t>()};
  if (json.is_string()) {
    const std::string& text = json.get_ref<const std::string&>();
    if (text.empty()) return {};
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 0);
    if (end != text.c_str() + text.size()) return {};
    if (errno == ERANGE) return {IntegerStatus::TooLarge, 0};
    if (errno != 0) return {};
    return {IntegerStatus::Fits, value};
  }
  return {};
}

// A flow's id: any 64-bit unsigned number, or its text. A negative one has no place among
// them (the model's ids are unsigned) and is not made one by wrapping.
enum class FlowIdStatus { Fits, NotANumber, Negative };
struct FlowId {
  FlowIdStatus status = FlowIdStatus::NotANumber;
  uint64_t value = 0;
};

FlowId flowIdOf(const Json& json) {
  if (json.is_number_unsigned()) return {FlowIdStatus::Fits, json.get<uint64_t>()};
  if (json.is_number_integer()) {
    const auto value = json.get<int64_t>();
    if (value < 0) return {FlowIdStatus::Negative, 0};
    return {FlowIdStatus::Fits, static_cast<uint64_t>(value)};
  }
  if (json.is_string()) {
    const std::string& text = json.get_ref<const std::string&>();
    if (text.empty() || text[0] == '-')
      return {text.empty() ? FlowIdStatus::NotANumber : FlowIdStatus::Negative, 0};
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 0);
    if (errno != 0 || end != text.c_str() + text.size()) return {};
    return {FlowIdStatus::Fits, value};
  }
  return {};
}

// A JSON integer that fits int64_t, or nullopt.
std::optional<int64_t> fittingInt64(const Json& json) {
  if (!json.is_number_integer()) return std::nullopt;  // unsigned ones included
  const Integer integer = integerOf(json);
  if (integer.status != IntegerStatus::Fits) return std::nullopt;
  return integer.value;
}

std::optional<Phase> phaseOf(const std::string& ph) {
  if (ph == "X") return Phase::Complete;
  if (ph == "i" || ph == "I") return Phase::Instant;
  if (ph == "C") return Phase::Counter;
  if (ph == "s") return Phase::FlowStart;
  if (ph == "f") return Phase::FlowEnd;
  if (ph == "M") return Phase::Metadata;
  return std::nullopt;
}

// The reason in one of nlohmann's messages, without its tag and place:
// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." and
// "[json.exception.out_of_range.406] number overflow parsing '1e400'" give what follows.
std::string plainReason(std::string what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    const std::size_t tagEnd = what.find("] ");
    if (tagEnd != std::string::npos) what.erase(0, tagEnd + 2);
  }
  if (what.rfind("parse error", 0) == 0) {
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what.erase(0, colon + 2);
  }
  return what;
}

// nlohmann's SAX interface, routing the top level (metadata, the traceEvents array) and
// building each event and each top-level value as a small JSON value.
class TraceSax {
 public:
  TraceSax(const std::string& path, const SourceBuffer& input, Sink& sink, std::string traceName,
           ReadReport& report, ReadBudget& budget)
      : path_(path),
        input_(input),
        sink_(sink),
        report_(report),
        budget_(budget),
        valueHold_(budget),
        metadataHold_(budget),
        sinkHeaderHold_(budget) {
    header_.traceName = std::move(traceName);
  }

  // ---- nlohmann::json_sax ----
  bool null() { return scalar(Json(nullptr)); }
  bool boolean(bool value) { return scalar(Json(value)); }
  bool number_integer(int64_t value) { return scalar(Json(value)); }
  bool number_unsigned(uint64_t value) { return scalar(Json(value)); }
  bool number_float(double value, const std::string& text) {
    if (target_ == Target::Event && stack_.size() == 1 && (key_ == "ts" || key_ == "dur")) {
      (key_ == "ts" ? tsText_ : durText_) = text;
    }
    return scalar(Json(value));
  }
  bool string(std::string& value) { return scalar(Json(std::move(value))); }
  bool binary(Json::binary_t&) { return fail("binary data in a JSON trace"); }

  bool start_object(std::size_t) {
    if (target_ == Target::None) {
      switch (where_) {
        case Where::Start:
          where_ = Where::TopObject;
          return true;
        case Where::TopObject:
          startValue(Target::Metadata);
          break;
        case Where::Events:
          startValue(Target::Event);
          break;
        case Where::Done:
          return fail("content after the end of the trace");
      }
    }
    return open(Json::object());
  }
  bool key(std::string& key) {
    if (target_ == Target::None) {
      topKey_ = key;
      return true;
    }
    key_ = key;
    return true;
  }
  bool end_object() { return target_ == Target::None ? endTop() : close(); }
  bool start_array(std::size_t) {
    if (target_ == Target::None) {
      switch (where_) {
        case Where::Start:  // the JSON Array Format: the events alone
          where_ = Where::Events;
          bareArray_ = true;
          beginSink();
          return true;
        case Where::TopObject:
          if (topKey_ == chrome::kTraceEvents) {
            if (sawEvents_) return fail("a second traceEvents array");
            where_ = Where::Events;
            sawEvents_ = true;
            beginSink();
            return true;
          }
          startValue(Target::Metadata);
          break;
        case Where::Events:
          return fail("an element of traceEvents is an array, not an event");
        case Where::Done:
          return fail("content after the end of the trace");
      }
    }
    return open(Json::array());
  }
  bool end_array() {
    if (target_ != Target::None) return close();
    where_ = bareArray_ ? Where::Done : Where::TopObject;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*token*/,
                   const nlohmann::detail::exception& error) {
    const std::string what = plainReason(error.what());
    // Failing at the last byte of the file: the file most likely stops mid-trace.
    const bool atEnd = input_.atEnd() && position + 1 >= input_.delivered();
    throw Error(fmt::format("{} is not valid JSON at byte {}: {}{}", path_,
                            input_.fileOffsetOf(position), what,
                            atEnd ? " (is the file truncated?)" : ""));
  }

  // After parsing: the trace's end.
  void finish() {
    if (where_ != Where::Done) {
      throw Error(fmt::format("{} ends before the trace does (is the file truncated?)", path_));
    }
    if (!bareArray_ && !sawEvents_) fail("it has no traceEvents array");
    if (!begun_) beginSink();
    sink_.end(footer_);
  }

 private:
  enum class Where { Start, TopObject, Events, Done };
  enum class Target { None, Metadata, Event };

  bool fail(const std::string& what) {
    throw Error(fmt::format("{} is not a Chrome trace: {}", path_, what));
  }

  // The sink may keep its own copy of the header's metadata until the trace ends (a
  // PerfettoSink does, until its first event): that copy stays counted for the whole read,
  // while the reader's goes once the sink has it.
  void beginSink() {
    const std::size_t headerBytes = footprintOf(header_.metadata);
    sinkHeaderHold_.take(headerBytes, kTopLevelMetadata);
    begun_ = true;
    sink_.begin(header_);
    Metadata().swap(header_.metadata);
    metadataHold_.reset();
  }

  bool endTop() {
    where_ = Where::Done;
    return true;
  }

  void startValue(Target target) {
    target_ = target;
    valueHold_.reset();
    // The parser has taken the value's first byte.
    valueStart_ = input_.fileOffsetNow();
    if (valueStart_ > 0) --valueStart_;
    stack_.clear();
    tsText_.clear();
    durText_.clear();
  }

  // What the value being built holds in memory, taken from the budget as it grows: a node
  // (in an object, a key beside it) in a vector that may have twice the room it needs, and
  // its text and key where they do not fit inside a string.
  void account(std::size_t textBytes) {
    const std::size_t keyBytes =
        stack_.empty() || stack_.back()->is_object() ? heapBytes(key_.size()) : 0;
    const std::size_t bytes =
        2 * (sizeof(Json) + sizeof(std::string)) + heapBytes(textBytes) + keyBytes;
    if (!valueHold_.tryTake(bytes)) {
      budget_.refuse(fmt::format("the {} at byte {}", valueName(), valueStart_));
    }
  }
  static std::size_t heapBytes(std::size_t textBytes) {
    return textBytes > 15 ? textBytes + 1 + kAllocationOverheadBytes : 0;
  }
  std::string valueName() const {
    return target_ == Target::Event ? "event" : "metadata value \"" + topKey_ + "\"";
  }

  // A scalar: a whole top-level value, or part of the value being built.
  bool scalar(Json value) {
    if (target_ == Target::None) {
      if (where_ == Where::TopObject) {
        const std::size_t textBytes =
            value.is_string() ? heapBytes(value.get_ref<const std::string&>().size()) : 0;
        metadataHold_.take(textBytes, kTopLevelMetadata);  // the copy the value makes
        metadataValue(valueFromJson(value), textBytes);
        return true;
      }
      if (where_ == Where::Events) return fail("an element of traceEvents is not an object");
      return fail("the trace is a single value, not an object or array");
    }
    account(value.is_string() ? value.get_ref<const std::string&>().size() : 0);
    Json& parent = *stack_.back();
    if (parent.is_object()) {
      parent[key_] = std::move(value);
    } else {
      parent.push_back(std::move(value));
    }
    return true;
  }

  bool open(Json container) {
    // The value's own depth plus the trace's object and the traceEvents array.
    if (stack_.size() + 2 >= kMaxJsonDepth) {
      throw Error(
          fmt::format("{}: the {} at byte {} nests arrays and objects more than {} levels deep",
                      path_, valueName(), valueStart_, kMaxJsonDepth));
    }
    account(0);
    if (stack_.empty()) {
      root_ = std::move(container);
      stack_.push_back(&root_);
      return true;
    }
    Json& parent = *stack_.back();
    Json* child = nullptr;
    if (parent.is_object()) {
      parent[key_] = std::move(container);
      child = &parent[key_];
    } else {
      parent.push_back(std::move(container));
      child = &parent.back();
    }
    stack_.push_back(child);
    return true;
  }

  bool close() {
    stack_.pop_back();
    if (!stack_.empty()) return true;
    const Target done = target_;
    target_ = Target::None;
    if (done == Target::Metadata) {
      // The value is built while the parser's tree still stands: both are counted.
      const std::size_t estimate = valueHold_.bytes();
      metadataHold_.take(estimate, kTopLevelMetadata);
      Value value = valueFromJson(root_);
      root_ = Json();
      valueHold_.reset();
      metadataValue(std::move(value), estimate);
    } else {
      event(root_);
      root_ = Json();
    }
    valueHold_.reset();
    return true;
  }

  // A top-level value, kept for the header (before traceEvents) or the footer (after), its
  // footprint counted while it is kept. While a container is converted, the parser's tree
  // is still counted: the two exist together.
  // `taken`: what was taken for it before it was built, replaced by its footprint here.
  void metadataValue(Value value, std::size_t taken) {
    metadataHold_.giveBack(taken);
    if (topKey_ == chrome::kTraceName || topKey_ == chrome::kTraceEvents)
      return;  // the new trace has its own name
    if (topKey_ == chrome::kBaseTimeNanoseconds) {
      if (begun_) {
        throw Error(fmt::format(
            "{}: baseTimeNanoseconds comes after traceEvents, so the events' times (relative "
            "to it) cannot be placed while streaming; move it before traceEvents",
            path_));
      }
      if (value.kind() == Value::Kind::Int) {
        header_.baseTimeNs = value.asInt();
      } else if (value.kind() == Value::Kind::Uint && value.asUint() <= INT64_MAX) {
        header_.baseTimeNs = static_cast<int64_t>(value.asUint());
      } else {
        throw Error(fmt::format("{}: baseTimeNanoseconds is not an integer", path_));
      }
      return;
    }
    metadataHold_.take(sizeof(Value::Member) + heapBytes(topKey_.size()) + footprintOf(value),
                       kTopLevelMetadata);
    (begun_ ? footer_ : header_.metadata).push_back({topKey_, std::move(value)});
  }

  void skip(const std::string& why) { ++report_.skipped[why]; }

  void event(const Json& object) {
    const auto ph = object.find("ph");
    if (ph == object.end() || !ph->is_string()) return skip("events without a phase (\"ph\")");
    const std::optional<Phase> phase = phaseOf(ph->get_ref<const std::string&>());
    if (!phase) {
      // Chrome's phases are one letter; a reason per other text would let the report of
      // what was left out grow with the file.
      const std::string& text = ph->get_ref<const std::string&>();
      const bool letter = text.size() == 1 && std::isprint(static_cast<unsigned char>(text[0]));
      return skip(letter ? fmt::format("events of phase '{}'", text)
                         : std::string("events whose phase is not one letter"));
    }

    Event out;
    out.phase = *phase;
    // Never a null view, even when empty: sinks copy the bytes it points to.
    out.name = std::string_view("", 0);
    out.category = std::string_view("", 0);
    if (auto name = object.find("name"); name != object.end() && name->is_string()) {
      out.name = name->get_ref<const std::string&>();
    }
    if (auto cat = object.find("cat"); cat != object.end() && cat->is_string()) {
      out.category = cat->get_ref<const std::string&>();
    }
    const std::optional<int64_t> pid = idOf(object, "pid", out.name);
    const std::optional<int64_t> tid = idOf(object, "tid", out.name);
    if (!pid || !tid) return skip("events whose pid or tid is not a number");
    out.pid = *pid;
    out.tid = *tid;

    std::optional<int64_t> ts = timeOf(object, "ts", tsText_);
    // Chrome's format lets metadata events (process and thread names) go without a time:
    // they are placed at the base time, as if "ts" were 0.
    if (!ts && out.phase == Phase::Metadata && object.find("ts") == object.end()) ts = 0;
    if (!ts) return skip("events without a numeric timestamp (\"ts\")");
    if (__builtin_add_overflow(header_.baseTimeNs, *ts, &out.timestampNs)) {
      outOfRange(std::string(out.name), "ts", tsText_.empty() ? object.at("ts").dump() : tsText_);
    }
    if (out.phase == Phase::Complete) {
      const std::optional<int64_t> dur = timeOf(object, "dur", durText_);
      out.durationNs = dur.value_or(0);
      int64_t end = 0;
      if (__builtin_add_overflow(out.timestampNs, out.durationNs, &end)) {
        outOfRange(std::string(out.name), "dur",
                   durText_.empty() ? object.at("dur").dump() : durText_);
      }
    }
    if (out.phase == Phase::FlowStart || out.phase == Phase::FlowEnd) {
      const auto id = object.find("id");
      const FlowId flowId = id == object.end() ? FlowId{} : flowIdOf(*id);
      if (flowId.status == FlowIdStatus::Negative) {
        doesNotFit(std::string(out.name), "id", id->dump(), "flow ids are unsigned 64-bit numbers");
      }
      if (flowId.status != FlowIdStatus::Fits) return skip("flow events without a numeric id");
      out.flowId = flowId.value;
    }

    // An event of many args leaves no room behind it: the budget counted it while it lived.
    if (args_.capacity() > kKeptArgs) std::vector<Arg>().swap(args_);
    args_.clear();
    jsonTexts_.clear();
    if (auto args = object.find("args"); args != object.end()) {
      if (!args->is_object()) return skip("events whose args are not an object");
      for (auto it = args->begin(); it != args->end(); ++it)
        args_.push_back({it.key(), argOf(it.value())});
    }
    out.args = args_.data();
    out.argCount = args_.size();
    sink_.write(out);
    ++report_.events;
  }

  [[noreturn]] void outOfRange(const std::string& name, const char* key,
                               const std::string& text) const {
    doesNotFit(name, key, text,
               "out of the range of times in nanoseconds (about 292 years either side of the "
               "trace's base time)");
  }
  [[noreturn]] void doesNotFit(const std::string& name, const char* key, const std::string& text,
                               const char* why) const {
    throw Error(fmt::format("{}: the event \"{}\" ending before byte {} has {} {}, {}", path_, name,
                            input_.fileOffsetNow(), key, text, why));
  }

  // A pid or tid: 0 when absent, nullopt when not a number. One past int64 is an error
  // naming the event: wrapped, it would be another process's.
  std::optional<int64_t> idOf(const Json& object, const char* key, std::string_view name) const {
    const auto found = object.find(key);
    if (found == object.end()) return 0;
    const Integer id = integerOf(*found);
    if (id.status == IntegerStatus::TooLarge) {
      doesNotFit(std::string(name), key, found->dump(),
                 "past the range of 64-bit signed integers that ids are read as");
    }
    if (id.status != IntegerStatus::Fits) return std::nullopt;
    return id.value;
  }

  // A time in microseconds as nanoseconds; nullopt when absent or not a number. A number
  // out of range is an error naming the event: dropping or wrapping it would move it.
  std::optional<int64_t> timeOf(const Json& object, const char* key, const std::string& text) {
    const auto found = object.find(key);
    if (found == object.end()) return std::nullopt;
    std::optional<int64_t> nanos;
    if (found->is_number_float()) {
      nanos = microsTextToNanos(text);
    } else if (found->is_number_integer()) {  // signed or unsigned
      const Integer micros = integerOf(*found);
      int64_t product = 0;
      if (micros.status == IntegerStatus::Fits &&
          !__builtin_mul_overflow(micros.value, int64_t{1000}, &product)) {
        nanos = product;
      }
    } else {
      return std::nullopt;
    }
    if (!nanos) {
      const auto name = object.find("name");
      outOfRange(name != object.end() && name->is_string() ? name->get<std::string>() : "", key,
                 found->dump());
    }
    return nanos;
  }

  ArgValue argOf(const Json& value) {
    switch (value.type()) {
      case Json::value_t::boolean:
        return value.get<bool>();
      case Json::value_t::number_integer:
        return value.get<int64_t>();
      case Json::value_t::number_unsigned: {
        // nlohmann reads every non-negative integer as unsigned; kinetrace's are signed
        // unless they do not fit, as its own sinks write them.
        const auto u = value.get<uint64_t>();
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return static_cast<int64_t>(u);
        }
        return u;
      }
      case Json::value_t::number_float:
        return value.get<double>();
      case Json::value_t::string:
        return std::string_view(value.get_ref<const std::string&>());
      case Json::value_t::array:
        if (value.size() == 3) {
          const std::optional<int64_t> x = fittingInt64(value[0]);
          const std::optional<int64_t> y = fittingInt64(value[1]);
          const std::optional<int64_t> z = fittingInt64(value[2]);
          if (x && y && z) return Dim3{*x, *y, *z};
        }
        [[fallthrough]];
      default:
        jsonTexts_.push_back(value.dump(-1, ' ', false, Json::error_handler_t::replace));
        // Held with the event it came from, which is still counted.
        if (!valueHold_.tryTake(heapBytes(jsonTexts_.back().size()))) {
          budget_.refuse(fmt::format("the event at byte {}", valueStart_));
        }
        return JsonText{jsonTexts_.back()};
    }
  }

  static constexpr const char* kTopLevelMetadata = "top-level metadata";
  static constexpr std::size_t kKeptArgs = 1024;

  const std::string& path_;
  const SourceBuffer& input_;
  Sink& sink_;
  ReadReport& report_;
  ReadBudget& budget_;
  BudgetHold valueHold_;       // the value being built
  BudgetHold metadataHold_;    // the header's metadata until the sink has it; the footer's
  BudgetHold sinkHeaderHold_;  // the sink's copy of the header's metadata
  uint64_t valueStart_ = 0;    // the value's offset in the file
  TraceHeader header_;
  Metadata footer_;
  Where where_ = Where::Start;
  Target target_ = Target::None;
  bool bareArray_ = false;
  bool sawEvents_ = false;
  bool begun_ = false;
  std::string topKey_;
  std::string key_;
  Json root_;
  std::vector<Json*> stack_;
  std::string tsText_;
  std::string durText_;
  std::vector<Arg> args_;
  std::deque<std::string> jsonTexts_;  // a deque: the views into it stay valid as it grows
};

}  // namespace

ReadReport readChromeJsonTrace(ByteSource& source, Sink& sink, const std::string& traceName,
                               ReadBudget& budget, const ReadProgress& progress) {
  const std::string& path = source.path();
  const ReadBudget::Reading reading(budget, path);
  SourceBuffer buffer(source, progress, budget);
  std::istream input(&buffer);
  ReadReport report;
  TraceSax sax(path, buffer, sink, traceName, report, budget);
  try {
    Json::sax_parse(input, &sax);
  } catch (const nlohmann::json::exception& error) {
    // Anything the JSON library throws past the handler: said in plain words, with the file.
    throw Error(fmt::format("{} could not be read as JSON: {}", path, plainReason(error.what())));
  }
  sax.finish();
  return report;
}

}  // namespace kinetrace::detail
