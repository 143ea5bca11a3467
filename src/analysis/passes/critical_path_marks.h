#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/passes/critical_path_report.h"
#include "analysis/read_budget.h"
#include "analysis/spill.h"
#include "kinetrace/sink.h"

// The critical path laid over the trace it came from, for Perfetto and chrome://tracing to
// show, as HTA's overlay_critical_path_analysis lays it: the trace's events unchanged and in
// their order, those on a step's path with the args "critical": 1 and "critical_path_ns"
// (their time on the path), and an arrow ("s" and "f" events of category and name
// "critical_path", args "part" and "weight_ns") for each of the path's edges between two
// events: launches, syncs, gaps between operators and between a stream's operations.
//
// An event is known by its ordinal: its place among the events the trace's reader hands
// the collector (CriticalPathEvent::ordinal). Reading the same file again hands out the same
// events in the same order, so the marking sink counts them as the collector did.

namespace kinetrace::detail {

struct PathMark {
  enum Kind : uint8_t { kEvent, kArrowStart, kArrowEnd };
  uint64_t ordinal = 0;
  Kind kind = kEvent;
  bool atEnd = false;  // an arrow's end: at the event's end, else at its start
  PathPart part = PathPart::Cpu;
  uint64_t arrow = 0;  // the arrow's id
  int64_t ns = 0;      // an event's time on the path; an arrow's weight
};

struct ByOrdinalThenKind {
  bool operator()(const PathMark& a, const PathMark& b) const {
    if (a.ordinal != b.ordinal) return a.ordinal < b.ordinal;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.arrow < b.arrow;
  }
};

// The marks of every step's path, in a list of the budget's (spill.h): as long as the paths.
class CriticalPathMarks {
 public:
  CriticalPathMarks(ReadBudget& budget, std::size_t listBytes)
      : marks_(budget, "the critical path's marks", listBytes) {}
  void add(const PathMark& mark) { marks_.add(mark); }
  uint64_t nextArrow() { return ++arrows_; }
  uint64_t size() const { return marks_.size(); }
  ExternalSorter<PathMark, ByOrdinalThenKind>& sorted() { return marks_; }

 private:
  ExternalSorter<PathMark, ByOrdinalThenKind> marks_;
  uint64_t arrows_ = 0;
};

// Passes a trace on to `out` with the marks laid over it (read once: the marks are
// consumed). Counts its events as TraceCollector counts them.
class CriticalPathTraceSink final : public Sink {
 public:
  CriticalPathTraceSink(Sink& out, CriticalPathMarks& marks);
  void begin(const TraceHeader& header) override { out_.begin(header); }
  void write(const Event& event) override;
  void end(const Metadata& footer) override { out_.end(footer); }

  uint64_t markedEvents() const { return markedEvents_; }
  uint64_t arrows() const { return arrowEvents_ / 2; }

 private:
  void writeArrow(const Event& event, const PathMark& mark);

  Sink& out_;
  ExternalSorter<PathMark, ByOrdinalThenKind>& marks_;
  uint64_t written_ = 0;
  uint64_t markedEvents_ = 0;
  uint64_t arrowEvents_ = 0;
  std::vector<Arg> args_;
  std::vector<PathMark> arrows_;
};

}  // namespace kinetrace::detail
