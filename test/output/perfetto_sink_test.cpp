// PerfettoSink's bytes, decoded (output/perfetto_decoder.h) as Perfetto's trace processor
// reads them.

#include "output/perfetto_sink.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "output/perfetto_decoder.h"
#include "output/protobuf.h"
#include "output/trace_events.h"

namespace kinetrace::detail {
namespace {

using namespace pftrace_test;

class PerfettoSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sink_ =
        std::make_unique<PerfettoSink>(std::make_unique<StringOutput>(&bytes_, &committed_), 64);
    sink_->begin(TraceHeader{"out.pftrace", kBase, {{"schemaVersion", 1}}});
  }
  Event event(Phase phase, std::string_view name, std::string_view category, int64_t pid,
              int64_t tid, int64_t ts, int64_t dur = 0) {
    Event e;
    e.phase = phase;
    e.name = name;
    e.category = category;
    e.pid = pid;
    e.tid = tid;
    e.timestampNs = ts;
    e.durationNs = dur;
    return e;
  }
  Decoded finish(const Metadata& footer = {}) {
    sink_->end(footer);
    EXPECT_TRUE(committed_);
    return decode(bytes_);
  }
  const Descriptor* descriptor(const Decoded& d, uint64_t uuid, bool lastOne = false) {
    const Descriptor* found = nullptr;
    for (const Descriptor& candidate : d.descriptors) {
      if (candidate.uuid == uuid) {
        found = &candidate;
        if (!lastOne) return found;
      }
    }
    return found;
  }

  std::string bytes_;
  bool committed_ = false;
  std::unique_ptr<PerfettoSink> sink_;
};

TEST_F(PerfettoSinkTest, OpensWithTheMetadataTrackAndTheHeaderOnSequenceOne) {
  // No event: the header stands at the base time, the footer with it.
  const Decoded d = finish({{"kinetrace_cupti_dropped_records", 0}});
  EXPECT_TRUE(d.firstPacketClearsState);
  EXPECT_TRUE(d.everyPacketHasASequence);
  EXPECT_TRUE(d.everySequenceStartsCleared);
  EXPECT_EQ(d.sequences, std::set<uint32_t>{1});
  ASSERT_FALSE(d.descriptors.empty());
  EXPECT_EQ(d.descriptors[0].uuid, 1u);
  EXPECT_EQ(d.descriptors[0].name, "kinetrace trace metadata");
  ASSERT_EQ(d.events.size(), 2u);
  const DecodedEvent& header = d.events[0];
  EXPECT_EQ(header.type, 3u);  // TYPE_INSTANT
  EXPECT_EQ(header.track, 1u);
  EXPECT_EQ(header.sequence, 1u);
  EXPECT_EQ(header.name, "trace header");
  EXPECT_EQ(header.category, "__kinetrace");
  EXPECT_EQ(header.timestamp, static_cast<uint64_t>(kLead));
  using A = std::pair<std::string, std::string>;
  EXPECT_EQ(header.annotations,
            (std::vector<A>{{"traceName", "string:out.pftrace"},
                            {"baseTimeNanoseconds", "int:" + std::to_string(kBase)},
                            {"timebaseNanoseconds", "int:" + std::to_string(kBase - kLead)},
                            {"format", "string:kinetrace pftrace 3"},
                            {"schemaVersion", "int:1"}}));
  EXPECT_EQ(d.events[1].name, "trace footer");
  EXPECT_EQ(d.events[1].annotations,
            (std::vector<A>{{"kinetrace_cupti_dropped_records", "int:0"}}));
}

TEST_F(PerfettoSinkTest, ACompleteEventIsABeginAndAnEndOnItsThreadsTrack) {
  const Arg args[] = {{"External id", int64_t{7}}};
  Event slice = event(Phase::Complete, "aten::mm", "cpu_op", 4242, 4300, kBase + 500, 1'200);
  slice.args = args;
  slice.argCount = 1;
  sink_->write(slice);
  const Decoded d = finish();

  ASSERT_EQ(d.events.size(), 4u);  // header, begin, end, footer
  const DecodedEvent& begin = d.events[1];
  const DecodedEvent& end = d.events[2];
  EXPECT_EQ(begin.type, 1u);  // TYPE_SLICE_BEGIN
  EXPECT_EQ(end.type, 2u);    // TYPE_SLICE_END
  EXPECT_EQ(begin.timestamp, static_cast<uint64_t>(kLead + 500));
  EXPECT_EQ(end.timestamp, static_cast<uint64_t>(kLead + 1'700));
  EXPECT_EQ(begin.track, end.track);
  EXPECT_EQ(begin.name, "aten::mm");
  EXPECT_EQ(begin.category, "cpu_op");
  EXPECT_EQ(begin.annotations,
            (std::vector<std::pair<std::string, std::string>>{{"External id", "int:7"}}));

  const Descriptor* thread = descriptor(d, begin.track);
  ASSERT_NE(thread, nullptr);
  EXPECT_TRUE(thread->thread);
  EXPECT_EQ(thread->pid, 4242);
  EXPECT_EQ(thread->tid, 4300);
  const Descriptor* process = descriptor(d, thread->parent);
  ASSERT_NE(process, nullptr);
  EXPECT_TRUE(process->process);
  EXPECT_EQ(process->pid, 4242);
}

TEST_F(PerfettoSinkTest, NamesAreInternedOncePerSequence) {
  for (int i = 0; i < 3; ++i) {
    sink_->write(event(Phase::Complete, "same kernel", "kernel", 0, 7, kBase + i * 100, 10));
  }
  sink_->write(event(Phase::Complete, "same kernel", "kernel", 0, 8, kBase + 400, 10));
  const Decoded d = finish();
  EXPECT_EQ(d.internedNames, 4)
      << "trace header and footer on sequence 1, same kernel on each stream's sequence";
  int kernels = 0;
  for (const DecodedEvent& e : d.events) kernels += e.name == "same kernel" ? 1 : 0;
  EXPECT_EQ(kernels, 4);
}

TEST_F(PerfettoSinkTest, EachTrackHasASequenceWhoseDefaultsNameTheTrack) {
  sink_->write(event(Phase::Complete, "a", "cpu_op", 4242, 1, kBase + 10, 5));
  sink_->write(event(Phase::Complete, "b", "cpu_op", 4242, 2, kBase + 20, 5));
  sink_->write(event(Phase::Instant, "c", "cpu_op", 4242, 1, kBase + 30));
  const Decoded d = finish();
  EXPECT_TRUE(d.everyPacketHasASequence);
  EXPECT_TRUE(d.everySequenceStartsCleared);
  EXPECT_EQ(d.sequences, (std::set<uint32_t>{1, 2, 3}));
  ASSERT_EQ(d.events.size(), 7u);
  for (const DecodedEvent& e : d.events) {
    EXPECT_FALSE(e.packetNamesTrack) << e.name << ": the track comes from the defaults";
  }
  EXPECT_EQ(d.events[1].sequence, d.events[5].sequence) << "a and c: one thread";
  EXPECT_NE(d.events[1].sequence, d.events[3].sequence) << "a and b: two threads";
  for (int i : {1, 3, 5}) {
    const Descriptor* thread = descriptor(d, d.events[static_cast<std::size_t>(i)].track);
    ASSERT_NE(thread, nullptr);
    EXPECT_TRUE(thread->thread);
    EXPECT_EQ(thread->tid, i == 3 ? 2 : 1);
  }
}

TEST_F(PerfettoSinkTest, TimesAreStepsOnTheSequencesDefaultClock) {
  for (int64_t at : {100, 300, 1'300}) {
    sink_->write(event(Phase::Instant, "i", "x", 1, 1, kBase + at));
  }
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 5u);
  const std::vector<uint64_t> raw = {d.events[1].rawTimestamp, d.events[2].rawTimestamp,
                                     d.events[3].rawTimestamp};
  EXPECT_EQ(raw, (std::vector<uint64_t>{kLead + 100, 200, 1'000}))
      << "the first from the snapshot's 0 (the timebase), then the step from the last";
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(d.events[static_cast<std::size_t>(i)].clock, 0u) << "the default clock, unnamed";
  }
  EXPECT_EQ(d.events[3].timestamp, static_cast<uint64_t>(kLead + 1'300));
}

TEST_F(PerfettoSinkTest, ATimeBeforeTheDefaultClocksGoesOnAnotherClockOrAbsolute) {
  // A slice's end, then (after an event elsewhere) an instant inside the slice: the default
  // clock is past it. Then times going back past every incremental clock.
  sink_->write(event(Phase::Complete, "s", "x", 1, 1, kBase + 1'000, 500));
  sink_->write(event(Phase::Instant, "elsewhere", "x", 1, 2, kBase + 1'000));
  const int64_t times[] = {1'200, 900, 800, 700, 600};
  for (int64_t at : times) sink_->write(event(Phase::Instant, "i", "x", 1, 1, kBase + at));
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 10u);
  EXPECT_EQ(d.events[2].timestamp, static_cast<uint64_t>(kLead + 1'500)) << "the slice's end";
  EXPECT_EQ(d.events[2].clock, 0u);
  std::vector<uint32_t> clocks;
  for (std::size_t i = 0; i < 5; ++i) {
    const DecodedEvent& e = d.events[4 + i];
    EXPECT_EQ(e.timestamp, static_cast<uint64_t>(kLead + times[i])) << i;
    clocks.push_back(e.clock);
  }
  EXPECT_EQ(clocks, (std::vector<uint32_t>{65, 66, 67, 6, 6}))
      << "each clock behind the time once, then BOOTTIME (6) with the absolute time";
}

TEST_F(PerfettoSinkTest, ASliceEndBeforeAnEarlierEventOnItsTrackKeepsTheDefaultClockBehind) {
  // Two parents, each written before the child inside it. The first pair sets the other
  // clocks going; from the second on, a parent's end goes on one of them (it is written
  // knowing the child comes next, earlier), and the child's start and end are steps on the
  // default clock.
  for (int64_t at : {1'000, 3'000}) {
    sink_->write(event(Phase::Complete, "parent", "x", 1, 1, kBase + at, 500));
    sink_->write(event(Phase::Complete, "child", "x", 1, 1, kBase + at + 100, 100));
  }
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 10u);
  const DecodedEvent& parentEnd = d.events[6];
  const DecodedEvent& childBegin = d.events[7];
  const DecodedEvent& childEnd = d.events[8];
  EXPECT_EQ(parentEnd.timestamp, static_cast<uint64_t>(kLead + 3'500));
  EXPECT_NE(parentEnd.clock, 0u);
  EXPECT_EQ(childBegin.clock, 0u);
  EXPECT_EQ(childBegin.rawTimestamp, 100u) << "a step from the parent's start";
  EXPECT_EQ(childBegin.timestamp, static_cast<uint64_t>(kLead + 3'100));
  EXPECT_EQ(childEnd.clock, 0u);
  EXPECT_EQ(childEnd.timestamp, static_cast<uint64_t>(kLead + 3'200));
}

TEST_F(PerfettoSinkTest, ArgumentsKeepTheirTypes) {
  const std::string json = R"([[8,512],[512]])";
  const Arg args[] = {{"i", int64_t{-5}},
                      {"u", uint64_t{1} << 63},
                      {"d", 0.5},
                      {"b", true},
                      {"s", std::string_view("text")},
                      {"grid", Dim3{1024, 8, 1}},
                      {"Input Dims", JsonText{json}}};
  Event e = event(Phase::Instant, "marker", "user_instant", 1, 1, kBase);
  e.args = args;
  e.argCount = 7;
  sink_->write(e);
  const Decoded d = finish();
  using A = std::pair<std::string, std::string>;
  EXPECT_EQ(d.events[1].annotations, (std::vector<A>{{"i", "int:-5"},
                                                     {"u", "uint:9223372036854775808"},
                                                     {"d", "double:0.500000"},
                                                     {"b", "bool:true"},
                                                     {"s", "string:text"},
                                                     {"grid", "array:int:1024;int:8;int:1;"},
                                                     {"Input Dims", "json:" + json}}));
}

TEST_F(PerfettoSinkTest, RepeatedStringValuesAreInternedAndLongOnesWrittenInPlace) {
  const std::string json = R"(["float","float"])";
  const std::string longJson = "[" + std::string(2000, '1') + "]";
  for (int i = 0; i < 2; ++i) {
    const Arg args[] = {{"Input type", JsonText{json}},
                        {"device", std::string_view("cuda:0")},
                        {"big", JsonText{longJson}}};
    Event e = event(Phase::Instant, "op", "cpu_op", 1, 1, kBase + i);
    e.args = args;
    e.argCount = 3;
    sink_->write(e);
  }
  const std::string file = [&] {
    sink_->end({});
    return bytes_;
  }();
  const Decoded d = decode(file);
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(d.events[i].annotations.size(), 3u);
    EXPECT_EQ(d.events[i].annotations[0].second, "json:" + json);
    EXPECT_EQ(d.events[i].annotations[1].second, "string:cuda:0");
    EXPECT_EQ(d.events[i].annotations[2].second, "json:" + longJson);
  }
  // Interned once: the file holds each short value once, the long one twice.
  auto count = [&file](const std::string& text) {
    std::size_t n = 0;
    for (std::size_t at = file.find(text); at != std::string::npos; at = file.find(text, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(json), 1u);
  EXPECT_EQ(count("cuda:0"), 1u);
  EXPECT_EQ(count(longJson), 2u);
}

TEST_F(PerfettoSinkTest, FlowEventsAreLegacyFlowEventsOnTheirTrack) {
  sink_->write(event(Phase::Complete, "kernel", "kernel", 0, 7, kBase + 5'000, 100));
  Event arrowEnd = event(Phase::FlowEnd, "ac2g", "ac2g", 0, 7, kBase + 5'000);
  arrowEnd.flowId = 70;
  sink_->write(arrowEnd);
  Event arrowStart = event(Phase::FlowStart, "ac2g", "ac2g", 4242, 4242, kBase + 1'000);
  arrowStart.flowId = 70;
  sink_->write(arrowStart);
  const Decoded d = finish();

  ASSERT_EQ(d.events.size(), 6u);  // header, kernel begin and end, two flow events, footer
  EXPECT_EQ(d.events[1].name, "kernel");
  EXPECT_TRUE(d.events[1].terminatingFlowIds.empty());
  const DecodedEvent& end = d.events[3];
  EXPECT_EQ(end.type, 0u);  // no type: the legacy phase says what it is
  EXPECT_EQ(end.legacyPhase, 'f');
  EXPECT_EQ(end.legacyId, 70u);
  EXPECT_TRUE(end.bindToEnclosing);
  EXPECT_EQ(end.track, d.events[1].track);
  EXPECT_EQ(end.name, "ac2g");
  EXPECT_EQ(end.category, "ac2g");
  const DecodedEvent& start = d.events[4];
  EXPECT_EQ(start.legacyPhase, 's');
  EXPECT_EQ(start.legacyId, 70u);
  EXPECT_FALSE(start.bindToEnclosing);
  EXPECT_EQ(start.timestamp, static_cast<uint64_t>(kLead + 1'000));
}

TEST_F(PerfettoSinkTest, EveryFlowEndOfAnIdIsWrittenAndFlowsOfOtherCategoriesKeepTheirNames) {
  for (int64_t k = 0; k < 3; ++k) {
    sink_->write(event(Phase::Complete, "kernel", "kernel", 0, 7, kBase + 5'000 + k * 200, 100));
    Event arrowEnd = event(Phase::FlowEnd, "ac2g", "ac2g", 0, 7, kBase + 5'000 + k * 200);
    arrowEnd.flowId = 70;
    sink_->write(arrowEnd);
  }
  Event fwdbwd = event(Phase::FlowStart, "fwdbwd", "fwdbwd", 4242, 4242, kBase + 1'000);
  fwdbwd.flowId = 70;  // the same id in another category: another flow
  sink_->write(fwdbwd);
  const Decoded d = finish();
  int ends = 0;
  for (const DecodedEvent& e : d.events) {
    if (e.legacyPhase == 'f') {
      ++ends;
      EXPECT_EQ(e.category, "ac2g");
    }
    if (e.legacyPhase == 's') {
      EXPECT_EQ(e.category, "fwdbwd");
    }
  }
  EXPECT_EQ(ends, 3);
}

TEST_F(PerfettoSinkTest, OverlappingSlicesOfATrackGoOnLanesNamedAfterIt) {
  sink_->write(event(Phase::Complete, "a", "kernel", 0, 7, kBase + 1'000, 20'000));
  sink_->write(event(Phase::Complete, "b", "kernel", 0, 7, kBase + 5'000, 20'000));  // overlaps a
  sink_->write(event(Phase::Complete, "c", "kernel", 0, 7, kBase + 6'000, 1'000));   // inside a
  Event arrowEnd = event(Phase::FlowEnd, "ac2g", "ac2g", 0, 7, kBase + 22'000);
  arrowEnd.flowId = 3;  // after a's end, inside b: b's lane
  sink_->write(arrowEnd);
  const Arg threadName[] = {{"name", std::string_view("stream 7")}};
  Event t = event(Phase::Metadata, "thread_name", "", 0, 7, kBase);
  t.args = threadName;
  t.argCount = 1;
  sink_->write(t);
  const Decoded d = finish();

  std::map<std::string, uint64_t> trackOf;
  for (const DecodedEvent& e : d.events) {
    if (e.type == 1) trackOf[e.name] = e.track;
    if (e.legacyPhase == 'f') trackOf["flow"] = e.track;
  }
  EXPECT_EQ(trackOf["a"], trackOf["c"]);
  EXPECT_NE(trackOf["a"], trackOf["b"]);
  EXPECT_EQ(trackOf["flow"], trackOf["b"]);
  const Descriptor* lane = descriptor(d, trackOf["b"], /*lastOne=*/true);
  ASSERT_NE(lane, nullptr);
  EXPECT_FALSE(lane->thread);  // a thread descriptor of its own would merge with the thread's
  EXPECT_EQ(lane->parent, trackOf["a"]);
  EXPECT_EQ(lane->name, "stream 7 (2)");
}

// Kernels of one stream that all cross one another, each with its launch arrow: read back
// as Perfetto's trace processor reads them (by time, then file order; a SLICE_END closing its
// track's innermost open slice), each keeps its duration, and its arrow is on its lane.
TEST_F(PerfettoSinkTest, ManyKernelsCrossingEachOtherKeepTheirDurationsAndArrows) {
  constexpr int64_t kKernels = 20'000;
  constexpr int64_t kDuration = kKernels * 10;
  for (int64_t i = 0; i < kKernels; ++i) {
    sink_->write(event(Phase::Complete, "k", "kernel", 0, 7, kBase + i * 10, kDuration));
    Event arrowEnd = event(Phase::FlowEnd, "ac2g", "ac2g", 0, 7, kBase + i * 10);
    arrowEnd.flowId = static_cast<uint64_t>(i + 1);
    sink_->write(arrowEnd);
  }
  const Decoded d = finish();

  std::vector<const DecodedEvent*> slices;
  for (const DecodedEvent& e : d.events) {
    if (e.type == 1 || e.type == 2) slices.push_back(&e);
  }
  // By time, then file order (the events' order in d.events).
  std::sort(slices.begin(), slices.end(), [](const DecodedEvent* a, const DecodedEvent* b) {
    return a->timestamp != b->timestamp ? a->timestamp < b->timestamp : std::less<>()(a, b);
  });
  std::map<uint64_t, std::vector<const DecodedEvent*>> open;  // by track
  std::map<uint64_t, uint64_t> durationByStart, trackByStart;
  for (const DecodedEvent* e : slices) {
    std::vector<const DecodedEvent*>& stack = open[e->track];
    if (e->type == 1) {
      stack.push_back(e);
      trackByStart[e->timestamp] = e->track;
    } else {
      ASSERT_FALSE(stack.empty()) << "an end with nothing open at " << e->timestamp;
      durationByStart[stack.back()->timestamp] = e->timestamp - stack.back()->timestamp;
      stack.pop_back();
    }
  }
  ASSERT_EQ(durationByStart.size(), static_cast<std::size_t>(kKernels));
  for (const auto& [start, duration] : durationByStart) {
    ASSERT_EQ(duration, static_cast<uint64_t>(kDuration)) << "the kernel starting at " << start;
  }
  std::set<uint64_t> tracks;
  for (const auto& [start, track] : trackByStart) tracks.insert(track);
  EXPECT_EQ(tracks.size(), static_cast<std::size_t>(kKernels));  // a lane each
  int arrows = 0;
  for (const DecodedEvent& e : d.events) {
    if (e.legacyPhase != 'f') continue;
    ++arrows;
    ASSERT_EQ(e.track, trackByStart[e.timestamp]) << "the arrow at " << e.timestamp;
  }
  EXPECT_EQ(arrows, kKernels);
}

TEST_F(PerfettoSinkTest, TheMetadataTracksInstantsStayInsideTheEventsSpan) {
  const int64_t far = kBase + 59LL * 24 * 3600 * 1'000'000'000;  // a torch.profiler clock
  const Arg processName[] = {{"name", std::string_view("python")}};
  Event m = event(Phase::Metadata, "process_name", "", 4242, 0, kBase);  // before any event
  m.args = processName;
  m.argCount = 1;
  sink_->write(m);
  sink_->write(event(Phase::Complete, "step", "user_annotation", 4242, 4242, far, 1'000));
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 5u);
  EXPECT_EQ(d.events[0].name, "trace header");
  EXPECT_EQ(d.events[0].timestamp, static_cast<uint64_t>(far - kBase + kLead));
  const DecodedEvent& naming = d.events[1];
  EXPECT_EQ(naming.name, "process_name");
  EXPECT_EQ(naming.timestamp, d.events[0].timestamp);
  EXPECT_EQ(naming.annotations.back(),
            std::make_pair(std::string("kinetrace ts ns"), "int:" + std::to_string(kBase)));
  EXPECT_EQ(d.events[4].name, "trace footer");
  EXPECT_EQ(d.events[4].timestamp, d.events[0].timestamp);
}

// Naming events before the first event wait for the header with copies of their strings: as
// torch.profiler's traces begin, dozens of them (the caller's strings are gone by then).
TEST_F(PerfettoSinkTest, ManyNamingEventsBeforeTheFirstEventKeepTheirNames) {
  constexpr int kThreads = 40;
  for (int tid = 0; tid < kThreads; ++tid) {
    const std::string name = "worker thread number " + std::to_string(tid);
    const Arg threadName[] = {{"name", std::string_view(name)}};
    Event t = event(Phase::Metadata, "thread_name", "", 4242, tid, kBase);
    t.args = threadName;
    t.argCount = 1;
    sink_->write(t);
  }
  sink_->write(event(Phase::Complete, "step", "user_annotation", 4242, 0, kBase, 1'000));
  const Decoded d = finish();
  int kept = 0;
  for (const DecodedEvent& e : d.events) {
    if (e.name != "thread_name") continue;
    ASSERT_FALSE(e.annotations.empty());
    EXPECT_EQ(e.annotations.front().second, "string:worker thread number " + std::to_string(kept));
    ++kept;
  }
  EXPECT_EQ(kept, kThreads);
}

TEST_F(PerfettoSinkTest, CounterSeriesAreCounterTracksUnderTheirThread) {
  const Arg args[] = {{"loss", 17.5}};
  Event c = event(Phase::Counter, "loss", "counter", 4242, 4300, kBase + 10);
  c.args = args;
  c.argCount = 1;
  sink_->write(c);
  const Decoded d = finish();
  const DecodedEvent& value = d.events[1];
  EXPECT_EQ(value.type, 4u);  // TYPE_COUNTER
  EXPECT_EQ(value.counter, 17.5);
  const Descriptor* track = descriptor(d, value.track);
  ASSERT_NE(track, nullptr);
  EXPECT_TRUE(track->counter);
  EXPECT_EQ(track->name, "loss");
  const Descriptor* thread = descriptor(d, track->parent);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(thread->tid, 4300);
}

TEST_F(PerfettoSinkTest, AGpuMetricIsACounterTrackNamedByTheMetricWithItsUnit) {
  const Arg args[] = {{"%", 93.5}};
  Event c =
      event(Phase::Counter, "Tensor pipe active", "gpu_metric", 0, kGpuMetricsTid, kBase + 10);
  c.args = args;
  c.argCount = 1;
  sink_->write(c);
  const Decoded d = finish();
  const DecodedEvent& value = d.events[1];
  EXPECT_EQ(value.type, 4u);  // TYPE_COUNTER
  EXPECT_EQ(value.counter, 93.5);
  const Descriptor* track = descriptor(d, value.track);
  ASSERT_NE(track, nullptr);
  EXPECT_TRUE(track->counter);
  EXPECT_EQ(track->name, "Tensor pipe active");
  EXPECT_EQ(track->counterUnit, "%");
  EXPECT_EQ(track->counterCategory, "gpu_metric");
  const Descriptor* thread = descriptor(d, track->parent);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(thread->pid, 0);
  EXPECT_EQ(thread->tid, kGpuMetricsTid);
}

TEST_F(PerfettoSinkTest, NamingEventsNameTheTracksAndAreKept) {
  sink_->write(event(Phase::Complete, "k", "kernel", 0, 7, kBase, 10));
  const Arg processName[] = {{"name", std::string_view("GPU 0")}};
  Event m = event(Phase::Metadata, "process_name", "", 0, 0, kBase);
  m.args = processName;
  m.argCount = 1;
  sink_->write(m);
  const Arg threadName[] = {{"name", std::string_view("stream 7")}};
  Event t = event(Phase::Metadata, "thread_name", "", 0, 7, kBase);
  t.args = threadName;
  t.argCount = 1;
  sink_->write(t);
  const Decoded d = finish();

  const uint64_t track = d.events[1].track;
  const Descriptor* thread = descriptor(d, track, /*lastOne=*/true);
  EXPECT_EQ(thread->processOrThreadName, "stream 7");
  EXPECT_EQ(descriptor(d, thread->parent, true)->processOrThreadName, "GPU 0");
  const DecodedEvent& kept = d.events[4];  // at its own time, inside the kernel's span
  EXPECT_EQ(kept.track, 1u);
  EXPECT_EQ(kept.name, "thread_name");
  EXPECT_EQ(kept.category, "__metadata");
  using A = std::pair<std::string, std::string>;
  EXPECT_EQ(kept.annotations,
            (std::vector<A>{{"name", "string:stream 7"}, {"pid", "int:0"}, {"tid", "int:7"}}));
}

TEST_F(PerfettoSinkTest, DescribedTracksAreWrittenAsTheirKindsSayBeforeTheirEvents) {
  Track gpu;
  gpu.id = 1;
  gpu.kind = TrackKind::Process;
  gpu.name = "GPU 2";
  gpu.label = "GPU 2";
  gpu.pid = 2;
  gpu.sinceNs = kBase;
  sink_->describe(gpu);
  Track stream;
  stream.id = 2;
  stream.parent = 1;
  stream.kind = TrackKind::GpuStream;
  stream.name = "stream 7";
  stream.pid = 2;
  stream.tid = 7;
  stream.sinceNs = kBase;
  sink_->describe(stream);
  // A counter whose samples' category says nothing: its unit comes from its description.
  Track counter;
  counter.id = 3;
  counter.parent = 2;
  counter.kind = TrackKind::Counter;
  counter.name = "SM throughput";
  counter.unit = "%";
  counter.category = "hardware";
  counter.pid = 2;
  counter.tid = 7;
  sink_->describe(counter);
  Event k = event(Phase::Complete, "k", "kernel", 2, 7, kBase, 10);
  k.track = 2;
  sink_->write(k);
  const Arg args[] = {{"%", 40.0}};
  Event c = event(Phase::Counter, "SM throughput", "hardware", 2, 7, kBase + 5);
  c.track = 3;
  c.args = args;
  c.argCount = 1;
  sink_->write(c);
  const Decoded d = finish();

  const DecodedEvent* slice = nullptr;
  const DecodedEvent* sample = nullptr;
  for (const DecodedEvent& e : d.events) {
    if (e.name == "k" && slice == nullptr) slice = &e;
    if (e.type == 4u) sample = &e;
  }
  ASSERT_NE(slice, nullptr);
  ASSERT_NE(sample, nullptr);
  const Descriptor* thread = descriptor(d, slice->track);
  ASSERT_NE(thread, nullptr);
  EXPECT_TRUE(thread->thread);
  EXPECT_EQ(thread->processOrThreadName, "stream 7") << "named in its first descriptor";
  const Descriptor* process = descriptor(d, thread->parent);
  ASSERT_NE(process, nullptr);
  EXPECT_TRUE(process->process);
  EXPECT_EQ(process->pid, 2);
  EXPECT_EQ(descriptor(d, thread->parent, true)->processOrThreadName, "GPU 2");
  const Descriptor* series = descriptor(d, sample->track);
  ASSERT_NE(series, nullptr);
  EXPECT_TRUE(series->counter);
  EXPECT_EQ(series->name, "SM throughput");
  EXPECT_EQ(series->counterUnit, "%");
  EXPECT_EQ(series->counterCategory, "hardware");
  EXPECT_EQ(series->parent, slice->track) << "under its parent's track";
  EXPECT_EQ(sample->counter, 40.0);
  // The Chrome trace's naming events are kept too, for a reader to give back.
  int namings = 0;
  for (const DecodedEvent& e : d.events) namings += e.category == "__metadata";
  EXPECT_EQ(namings, 5) << "process_name, process_labels, process_sort_index, thread_name, "
                           "thread_sort_index";
}

TEST_F(PerfettoSinkTest, EventsTooEarlyForTheTimebaseAreCountedInTheFooter) {
  sink_->write(event(Phase::Instant, "ancient", "x", 1, 1, kBase - 2 * kLead));
  sink_->write(event(Phase::Complete, "also", "x", 1, 1, kBase - 2 * kLead, 5));
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[1].annotations, (std::vector<std::pair<std::string, std::string>>{
                                         {"kinetrace_pftrace_dropped_early_events", "int:2"}}));
}

TEST(PerfettoSinkBudgetTest, PastTheInternBudgetStringsAreWrittenInPlace) {
  std::string bytes;
  bool committed = false;
  // Room for the header's strings and a few more, not for every name below.
  PerfettoSink sink(std::make_unique<StringOutput>(&bytes, &committed), 64, 1'200);
  sink.begin(TraceHeader{"t", kBase, {}});
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back("kernel number " + std::to_string(i));
  for (const std::string& name : names) {
    Event e;
    e.phase = Phase::Instant;
    e.name = name;
    e.category = "kernel";
    e.pid = 0;
    e.tid = 7;
    e.timestampNs = kBase;
    sink.write(e);
  }
  sink.end({});
  const Decoded d = decode(bytes);
  ASSERT_EQ(d.events.size(), 22u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(d.events[static_cast<std::size_t>(i) + 1].name, names[i]);
  EXPECT_LT(d.internedNames, 20) << "some names written in place, every one readable";
}

TEST_F(PerfettoSinkTest, NothingIsCommittedWithoutEnd) {
  sink_->write(event(Phase::Instant, "i", "x", 1, 1, kBase));
  sink_.reset();
  EXPECT_FALSE(committed_);
}

TEST_F(PerfettoSinkTest, CallsOutOfOrderAreErrors) {
  EXPECT_THROW(sink_->begin(TraceHeader{}), Error);
  sink_->end({});
  EXPECT_THROW(sink_->write(event(Phase::Instant, "i", "x", 1, 1, kBase)), Error);
}

TEST(PerfettoPathTest, ExtensionsThatNameAPerfettoTrace) {
  EXPECT_TRUE(isPerfettoPath("a.pftrace"));
  EXPECT_TRUE(isPerfettoPath("dir/a.perfetto-trace"));
  EXPECT_TRUE(isPerfettoPath("a.pftrace.gz"));
  EXPECT_FALSE(isPerfettoPath("a.json"));
  EXPECT_FALSE(isPerfettoPath("pftrace"));
  EXPECT_FALSE(isPerfettoPath("a.pftrace.json"));
}

}  // namespace
}  // namespace kinetrace::detail
