#include "analysis/passes/critical_path_marks.h"

#include <algorithm>

namespace kinetrace::detail {
namespace {

constexpr std::string_view kArrowName = "critical_path";
constexpr std::string_view kCritical = "critical";
constexpr std::string_view kCriticalNs = "critical_path_ns";

}  // namespace

CriticalPathTraceSink::CriticalPathTraceSink(Sink& out, CriticalPathMarks& marks)
    : out_(out), marks_(marks.sorted()) {
  marks_.sort();
}

void CriticalPathTraceSink::write(const Event& event) {
  const uint64_t ordinal = written_++;
  while (!marks_.done() && marks_.front().ordinal < ordinal) marks_.pop();
  bool marked = false;
  int64_t onPathNs = 0;
  arrows_.clear();
  for (; !marks_.done() && marks_.front().ordinal == ordinal; marks_.pop()) {
    const PathMark& mark = marks_.front();
    if (mark.kind == PathMark::kEvent) {
      marked = true;
      onPathNs += mark.ns;  // on the paths of two overlapping steps: both
    } else {
      arrows_.push_back(mark);
    }
  }
  if (!marked) {
    out_.write(event);
  } else {
    args_.assign(event.args, event.args + event.argCount);
    // A trace that says "critical" itself keeps its word; the time on the path is added.
    const bool saysCritical =
        std::any_of(args_.begin(), args_.end(), [](const Arg& a) { return a.key == kCritical; });
    if (!saysCritical) args_.push_back({kCritical, int64_t{1}});
    args_.push_back({kCriticalNs, onPathNs});
    Event copy = event;
    copy.args = args_.data();
    copy.argCount = args_.size();
    out_.write(copy);
    ++markedEvents_;
  }
  for (const PathMark& mark : arrows_) writeArrow(event, mark);
}

// An arrow's end inside its event's slice, so that viewers bind it there: at the start, or
// a nanosecond before the end (HTA: a microsecond before a GPU operation's end).
void CriticalPathTraceSink::writeArrow(const Event& event, const PathMark& mark) {
  Event arrow;
  arrow.phase = mark.kind == PathMark::kArrowStart ? Phase::FlowStart : Phase::FlowEnd;
  arrow.name = kArrowName;
  arrow.category = kArrowName;
  arrow.pid = event.pid;
  arrow.tid = event.tid;
  arrow.track = event.track;
  arrow.flowId = mark.arrow;
  arrow.timestampNs = event.timestampNs;
  if (mark.atEnd && event.durationNs > 0) arrow.timestampNs += event.durationNs - 1;
  const Arg args[] = {{"part", std::string_view(pathPartKey(mark.part))}, {"weight_ns", mark.ns}};
  arrow.args = args;
  arrow.argCount = 2;
  out_.write(arrow);
  ++arrowEvents_;
}

}  // namespace kinetrace::detail
