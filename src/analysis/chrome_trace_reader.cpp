// Reads Chrome trace JSON into the sink stream, with nlohmann_json's SAX parser: one event
// at a time is held as a small JSON value, so a multi-gigabyte trace reads in little memory.
// Everything the reader holds draws from the read budget: its buffers, the lexer's longest
// token, the event or metadata value being built, and the top-level metadata kept for the
// sink's header and footer.
//
// This file routes the parse (the top-level object's metadata, the traceEvents array),
// builds each value and turns each event into the sink's; the bytes in and the parser's
// memory are JsonSourceBuffer's (json_source_buffer.h), an event field's conversion to the
// model's types chrome_event_fields.h's.

#include <fmt/format.h>

#include <cctype>
#include <deque>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/byte_source.h"
#include "analysis/chrome_event_fields.h"
#include "analysis/json_source_buffer.h"
#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/trace_vocabulary.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

using Json = nlohmann::ordered_json;

// nlohmann's SAX interface, routing the top level (metadata, the traceEvents array) and
// building each event and each top-level value as a small JSON value.
class TraceSax {
 public:
  TraceSax(const std::string& path, const JsonSourceBuffer& input, Sink& sink,
           std::string traceName, ReadReport& report, ReadBudget& budget)
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
    if (topKey_ == chrome::kTraceEvents) return;
    if (topKey_ == chrome::kTraceName) {
      // The trace keeps its name through a conversion. Before the events it is the header's;
      // after them (where kinetrace and libkineto write it) it goes with the footer, which
      // the sinks read it from at the end. One that is not a string is no name.
      if (value.kind() != Value::Kind::String) return;
      if (!begun_) {
        header_.traceName = value.asString();
        return;
      }
    }
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
  const JsonSourceBuffer& input_;
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
  JsonSourceBuffer buffer(source, progress, budget);
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
