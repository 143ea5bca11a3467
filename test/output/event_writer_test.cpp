// EventWriter on its own, into a MemorySink: which event each record kind becomes, the
// tracks lanes get, records arriving in several write() calls, and the naming written by
// finish().

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kinetrace/sink.h"
#include "model/trace_data.h"
#include "output/chrome_naming.h"
#include "output/trace_events.h"
#include "support/allocation_counter.h"

namespace kinetrace::detail {
namespace {

constexpr int64_t kBase = 1'750'000'000'000'000'000;
constexpr int64_t kPid = 321;

// Accepts events without keeping or allocating anything.
class CountingSink : public Sink {
 public:
  void begin(const TraceHeader&) override {}
  void write(const Event&) override { ++events; }
  void end(const Metadata&) override {}
  long events = 0;
};

class EventWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tables_.pid = kPid;
    main_ = addThread(kPid, "main");
    worker_ = addThread(400, "");
    sink_.begin(TraceHeader{"", kBase, {}});
  }
  uint32_t addThread(int64_t tid, std::string_view name) {
    tables_.threads.push_back(ThreadInfo{kPid, tid, tables_.strings.intern(name)});
    return static_cast<uint32_t>(tables_.threads.size() - 1);
  }
  StringId intern(std::string_view text) { return tables_.strings.intern(text); }

  GpuPlacement at(uint32_t device, uint32_t stream, uint16_t lane, int64_t start = kBase) {
    GpuPlacement p;
    p.startNs = start;
    p.endNs = start + 100;
    p.deviceId = device;
    p.streamId = stream;
    p.lane = lane;
    p.correlationId = 5;
    return p;
  }
  KernelRecord kernel(uint32_t device, uint32_t stream, uint16_t lane) {
    KernelRecord k;
    k.at = at(device, stream, lane);
    k.name = intern("k");
    return k;
  }
  SyncRecord sync(uint32_t stream, uint16_t lane) {
    SyncRecord s;
    s.at = at(0, stream, lane);
    s.kind = SyncKind::StreamSync;
    return s;
  }
  GpuSpanRecord span(uint32_t stream, uint16_t lane) {
    GpuSpanRecord g;
    g.startNs = kBase;
    g.endNs = kBase + 10;
    g.name = intern("step");
    g.streamId = stream;
    g.lane = lane;
    return g;
  }

  // Events of that phase, in order.
  std::vector<OwnedEvent> events(Phase phase) const {
    std::vector<OwnedEvent> found;
    for (const OwnedEvent& e : sink_.events()) {
      if (e.phase == phase) found.push_back(e);
    }
    return found;
  }
  // (pid, tid) -> thread_name, failing on a track named twice.
  std::map<std::pair<int64_t, int64_t>, std::string> threadNames() const {
    std::map<std::pair<int64_t, int64_t>, std::string> names;
    for (const OwnedEvent& e : events(Phase::Metadata)) {
      if (e.name != "thread_name") continue;
      const bool added =
          names.emplace(std::make_pair(e.pid, e.tid), std::get<std::string>(e.args[0].value))
              .second;
      EXPECT_TRUE(added) << "track " << e.pid << "/" << e.tid << " named twice";
    }
    return names;
  }
  int64_t sortIndexOf(int64_t pid, int64_t tid) const {
    for (const OwnedEvent& e : events(Phase::Metadata)) {
      if (e.name == "thread_sort_index" && e.pid == pid && e.tid == tid) {
        return std::get<int64_t>(e.args[0].value);
      }
    }
    return -1;
  }
  int metadataCount(const std::string& name, int64_t pid) const {
    int count = 0;
    for (const OwnedEvent& e : events(Phase::Metadata)) count += e.name == name && e.pid == pid;
    return count;
  }

  TraceTables tables_;
  MemorySink sink_;
  uint32_t main_ = 0;
  uint32_t worker_ = 0;
};

TEST(GpuTrackTidTest, KeepsTheStreamIdForTheFirstLaneOfOperations) {
  EXPECT_EQ(gpuTrackTid(7, kGpuOpsTrack, 0), 7);
  EXPECT_EQ(gpuTrackTid(0xFFFFFFFFu, kGpuOpsTrack, 0), 0xFFFFFFFFll);
}

TEST(GpuTrackTidTest, PutsTrackKindAndLaneAboveTheStreamIdBelow2To31) {
  EXPECT_EQ(gpuTrackTid(7, kGpuOpsTrack, 0), 7) << "a stream's first track is the stream id";
  EXPECT_EQ(gpuTrackTid(7, kGpuOpsTrack, 1), (int64_t{1} << 28) | (int64_t{1} << 20) | 7);
  EXPECT_EQ(gpuTrackTid(7, kGpuSyncTrack, 0), (int64_t{2} << 28) | 7);
  EXPECT_EQ(gpuTrackTid(9, kGpuSpanTrack, 3), (int64_t{3} << 28) | (int64_t{3} << 20) | 9);
  // Perfetto's JSON importer takes tids as 32-bit numbers: the largest stays below 2^31.
  EXPECT_LT(gpuTrackTid(0xFFFFFFFFu, kGpuSpanTrack, 255), int64_t{1} << 31);
}

TEST(GpuTrackTidTest, LanesPastTheLastShareIt) {
  EXPECT_EQ(gpuTrackTid(7, kGpuOpsTrack, 300), gpuTrackTid(7, kGpuOpsTrack, 255));
  EXPECT_NE(gpuTrackTid(7, kGpuOpsTrack, 254), gpuTrackTid(7, kGpuOpsTrack, 255));
}

TEST_F(EventWriterTest, TurnsEveryRecordKindIntoItsEvent) {
  TraceRecords r;
  RangeRecord range;
  range.startNs = kBase + 1;
  range.endNs = kBase + 9;
  range.name = intern("range");
  range.thread = worker_;
  r.ranges.push_back(range);
  range.async = true;
  range.lane = 2;
  range.name = intern("async");
  r.ranges.push_back(range);
  ApiCallRecord call;
  call.startNs = kBase + 2;
  call.endNs = kBase + 3;
  call.name = intern("cudaMemcpyAsync");
  call.thread = main_;
  r.apiCalls.push_back(call);
  r.flows.push_back(FlowRecord{kBase + 2, 77, main_});
  r.instants.push_back(InstantRecord{kBase + 4, intern("mark"), main_});
  r.counters.push_back(CounterRecord{kBase + 5, 3.5, intern("depth"), worker_});
  MemoryRecord memory;
  memory.timeNs = kBase + 6;
  memory.thread = worker_;
  r.memory.push_back(memory);
  r.kernels.push_back(kernel(1, 7, 0));
  MemcpyRecord copy;
  copy.at = at(1, 7, 1);
  copy.at.hasLaunchCall = true;
  copy.at.correlationId = 77;
  copy.copyKind = CopyKind::DtoH;
  copy.srcKind = MemoryKind::Device;
  copy.dstKind = MemoryKind::Pageable;
  r.memcpys.push_back(copy);
  MemsetRecord set;
  set.at = at(1, 8, 0);
  set.memoryKind = MemoryKind::Managed;
  r.memsets.push_back(set);
  r.syncs.push_back(sync(7, 0));
  r.syncs.back().kind = SyncKind::ContextSync;
  r.gpuSpans.push_back(span(7, 0));
  OverheadRecord overhead;
  overhead.startNs = kBase;
  overhead.endNs = kBase + 1;
  overhead.kind = OverheadKind::ModuleLoading;
  overhead.object = OverheadObject::Thread;
  overhead.objectId = 400;
  r.overheads.push_back(overhead);

  EventWriter writer(sink_, tables_, kBase);
  writer.write(r);
  using Row = std::tuple<char, std::string, std::string, int64_t, int64_t>;
  std::vector<Row> rows;
  for (const OwnedEvent& e : sink_.events()) {
    rows.emplace_back(static_cast<char>(e.phase), e.category, e.name, e.pid, e.tid);
  }
  const std::vector<Row> expected = {
      {'X', "user_annotation", "range", kPid, 400},
      {'X', "user_annotation", "async", kPid, kAsyncLaneTidBase + 2},
      {'X', "cuda_runtime", "cudaMemcpyAsync", kPid, kPid},
      {'s', "ac2g", "ac2g", kPid, kPid},
      {'i', "user_instant", "mark", kPid, kPid},
      {'C', "counter", "depth", kPid, 400},
      {'i', "cpu_instant_event", "[memory]", kPid, 400},
      {'X', "overhead", "Module loading", -1, 400},
      {'X', "kernel", "k", 1, 7},
      {'X', "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 1, gpuTrackTid(7, kGpuOpsTrack, 1)},
      {'f', "ac2g", "ac2g", 1, gpuTrackTid(7, kGpuOpsTrack, 1)},
      {'X', "gpu_memset", "Memset (Managed)", 1, 8},
      {'X', "cuda_sync", "Context Sync", 0, gpuTrackTid(7, kGpuSyncTrack, 0)},
      {'X', "gpu_user_annotation", "step", 0, gpuTrackTid(7, kGpuSpanTrack, 0)},
  };
  EXPECT_EQ(rows, expected);
  EXPECT_TRUE(events(Phase::Metadata).empty()) << "the sink names tracks at its end()";
  const auto flowStart = events(Phase::FlowStart);
  const auto flowEnd = events(Phase::FlowEnd);
  ASSERT_EQ(flowStart.size(), 1u);
  ASSERT_EQ(flowEnd.size(), 1u);
  EXPECT_EQ(flowStart[0].flowId, 77u);
  EXPECT_EQ(flowStart[0].timestampNs, kBase + 2);
  EXPECT_EQ(flowEnd[0].flowId, 77u);
  EXPECT_EQ(flowEnd[0].timestampNs, copy.at.startNs);
}

TEST_F(EventWriterTest, GivesEveryLaneOfAStreamATrackOfItsOwnNamedAfterTheStream) {
  TraceRecords r;
  for (uint16_t lane : {0, 1, 2}) r.kernels.push_back(kernel(0, 7, lane));
  for (uint16_t lane : {0, 1}) r.syncs.push_back(sync(7, lane));
  for (uint16_t lane : {0, 1}) r.gpuSpans.push_back(span(7, lane));
  EventWriter writer(sink_, tables_, kBase);
  writer.write(r);
  writer.finish();
  sink_.end({});

  std::set<int64_t> tids;
  for (const OwnedEvent& e : events(Phase::Complete)) tids.insert(e.tid);
  EXPECT_EQ(tids.size(), 7u) << "three op lanes, two sync lanes, two annotation lanes";
  const std::map<std::pair<int64_t, int64_t>, std::string> expected = {
      {{0, 7}, "stream 7"},
      {{0, gpuTrackTid(7, kGpuOpsTrack, 1)}, "stream 7 (2)"},
      {{0, gpuTrackTid(7, kGpuOpsTrack, 2)}, "stream 7 (3)"},
      {{0, gpuTrackTid(7, kGpuSyncTrack, 0)}, "stream 7 sync"},
      {{0, gpuTrackTid(7, kGpuSyncTrack, 1)}, "stream 7 sync (2)"},
      {{0, gpuTrackTid(7, kGpuSpanTrack, 0)}, "stream 7 annotations"},
      {{0, gpuTrackTid(7, kGpuSpanTrack, 1)}, "stream 7 annotations (2)"},
  };
  EXPECT_EQ(threadNames(), expected);
  for (const auto& [track, name] : expected) {
    EXPECT_EQ(sortIndexOf(track.first, track.second), 7) << name << ": kept beside its stream";
  }
  EXPECT_EQ(metadataCount("process_name", 0), 1);
}

TEST_F(EventWriterTest, LanesPastTheLastShareOneTrack) {
  TraceRecords r;
  r.kernels = {kernel(0, 7, 255), kernel(0, 7, 300)};
  EventWriter writer(sink_, tables_, kBase);
  writer.write(r);
  writer.finish();
  sink_.end({});
  const auto slices = events(Phase::Complete);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].tid, slices[1].tid);
  const auto names = threadNames();
  EXPECT_EQ(names.at({0, slices[0].tid}), "stream 7 (256)");
  // The lanes' parent, the stream's first lane, is described before them.
  EXPECT_EQ(names.at({0, 7}), "stream 7");
  EXPECT_EQ(names.size(), 2u);
}

TEST_F(EventWriterTest, GivesOverheadLanesTracksNamedAfterTheirThreadOrDevice) {
  TraceRecords r;
  auto overhead = [](OverheadObject object, uint64_t id, uint16_t lane) {
    OverheadRecord o;
    o.startNs = kBase;
    o.endNs = kBase + 5;
    o.kind = OverheadKind::CuptiInstrumentation;
    o.object = object;
    o.objectId = id;
    o.lane = lane;
    return o;
  };
  r.overheads = {overhead(OverheadObject::Thread, 703, 0), overhead(OverheadObject::Thread, 703, 1),
                 overhead(OverheadObject::Device, 2, 0), overhead(OverheadObject::Thread, 703, 0)};
  EventWriter writer(sink_, tables_, kBase);
  writer.write(r);
  writer.finish();
  sink_.end({});

  const auto slices = events(Phase::Complete);
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_EQ(slices[0].tid, 703);
  EXPECT_NE(slices[1].tid, 703);
  EXPECT_LT(slices[1].tid, int64_t{1} << 32) << "Perfetto reads tids as 32-bit numbers";
  EXPECT_EQ(slices[2].tid, (int64_t{1} << 30) + 2) << "device tracks above every thread track";
  EXPECT_EQ(slices[3].tid, 703);
  for (const OwnedEvent& e : slices) EXPECT_EQ(e.pid, -1);
  const std::map<std::pair<int64_t, int64_t>, std::string> expected = {
      {{-1, 703}, "CUPTI overhead (thread 703)"},
      {{-1, slices[1].tid}, "CUPTI overhead (thread 703) (2)"},
      {{-1, (int64_t{1} << 30) + 2}, "CUPTI overhead (device 2)"},
  };
  EXPECT_EQ(threadNames(), expected);
  EXPECT_EQ(metadataCount("process_name", -1), 1);
  EXPECT_EQ(metadataCount("process_name", kPid), 0) << "overhead is not the host's";
}

TEST_F(EventWriterTest, NamesEveryTrackOnceAfterManyWrites) {
  EventWriter writer(sink_, tables_, kBase);
  for (int batch = 0; batch < 3; ++batch) {
    TraceRecords r;
    r.kernels = {kernel(0, 7, 0), kernel(1, 9, 0)};
    if (batch == 2) r.kernels.push_back(kernel(0, 11, 0));
    r.instants.push_back(InstantRecord{kBase, intern("tick"), batch == 0 ? main_ : worker_});
    writer.write(r);
  }
  EXPECT_TRUE(events(Phase::Metadata).empty());
  writer.finish();
  sink_.end({});
  const std::map<std::pair<int64_t, int64_t>, std::string> expected = {
      {{kPid, kPid}, "thread 321 (main)"},
      {{kPid, 400}, "thread 400"},
      {{0, 7}, "stream 7"},
      {{0, 11}, "stream 11"},
      {{1, 9}, "stream 9"},
  };
  EXPECT_EQ(threadNames(), expected);
  for (int64_t pid : {kPid, int64_t{0}, int64_t{1}}) {
    EXPECT_EQ(metadataCount("process_name", pid), 1) << pid;
    EXPECT_EQ(metadataCount("process_sort_index", pid), 1) << pid;
    EXPECT_EQ(metadataCount("process_labels", pid), 1) << pid;
  }
  const std::size_t described = sink_.tracks().size();
  writer.finish();
  EXPECT_EQ(sink_.tracks().size(), described) << "a second finish() describes nothing again";
}

TEST_F(EventWriterTest, ReadsThreadNamesAtFinish) {
  EventWriter writer(sink_, tables_, kBase);
  TraceRecords r;
  r.instants.push_back(InstantRecord{kBase, intern("early"), worker_});
  writer.write(r);
  // Named after its first events, and a thread the table gained between writes.
  tables_.threads[worker_].name = intern("loader");
  const uint32_t late = addThread(555, "late");
  r.instants = {InstantRecord{kBase, intern("later"), late}};
  writer.write(r);
  writer.finish();
  sink_.end({});
  const auto names = threadNames();
  EXPECT_EQ(names.at({kPid, 400}), "thread 400 (loader)");
  EXPECT_EQ(names.at({kPid, 555}), "thread 555 (late)");
  for (const OwnedEvent& e : events(Phase::Metadata)) {
    EXPECT_EQ(e.timestampNs, kBase) << "naming sits at the trace's base time";
  }
}

// Logs descriptions and events in the order they come.
class OrderSink : public Sink {
 public:
  void begin(const TraceHeader&) override {}
  void write(const Event& event) override {
    if (event.phase != Phase::Metadata)
      log.push_back({false, event.track, std::string(event.name)});
  }
  void describe(const Track& track) override {
    log.push_back({true, track.id, std::string(track.name)});
    noteLatestTrack(described, track);
  }
  void end(const Metadata&) override {}
  struct Entry {
    bool description;
    uint64_t track;
    std::string name;
  };
  std::vector<Entry> log;
  std::vector<OwnedTrack> described;  // the latest description of each

  const OwnedTrack& track(uint64_t id) const {
    for (const OwnedTrack& t : described) {
      if (t.id == id) return t;
    }
    ADD_FAILURE() << "no track " << id;
    return described.front();
  }
};

TEST_F(EventWriterTest, DescribesEveryTrackWithItsKindAndParentBeforeItsFirstEvent) {
  tables_.gpuMetrics.metrics = {GpuMetric{"sm__throughput", "SM throughput", MetricUnit::Percent}};
  TraceRecords r;
  RangeRecord range;
  range.startNs = kBase;
  range.endNs = kBase + 5;
  range.name = intern("range");
  range.thread = worker_;
  r.ranges.push_back(range);
  r.kernels = {kernel(1, 7, 0), kernel(1, 7, 1)};
  r.syncs.push_back(sync(7, 0));
  r.metricValues = {42.0};
  r.metricSamples.push_back(GpuMetricSampleRecord{kBase, kBase + 1000, 1, 0});
  OrderSink sink;
  EventWriter writer(sink, tables_, kBase);
  writer.write(r);
  writer.finish();

  std::set<uint64_t> described;
  for (const OrderSink::Entry& e : sink.log) {
    if (e.description) {
      const OwnedTrack& t = sink.track(e.track);
      EXPECT_TRUE(t.parent == 0 || described.count(t.parent)) << t.name << ": parent first";
      described.insert(e.track);
    } else {
      EXPECT_TRUE(described.count(e.track)) << e.name << ": its track described before it";
    }
  }
  auto trackOf = [&sink](std::string_view name) -> const OwnedTrack& {
    for (const OwnedTrack& t : sink.described) {
      if (t.name == name) return t;
    }
    ADD_FAILURE() << "no track " << name;
    return sink.described.front();
  };
  const OwnedTrack& gpu = trackOf("GPU 1");
  EXPECT_EQ(gpu.kind, TrackKind::Process);
  EXPECT_EQ(gpu.label, "GPU 1");
  const OwnedTrack& stream = trackOf("stream 7");
  EXPECT_EQ(stream.kind, TrackKind::GpuStream);
  EXPECT_EQ(stream.parent, gpu.id);
  const OwnedTrack& lane = trackOf("stream 7 (2)");
  EXPECT_EQ(lane.kind, TrackKind::Lane);
  EXPECT_EQ(lane.parent, stream.id) << "a lane's parent is its stream's first lane";
  EXPECT_EQ(trackOf("stream 7 sync").kind, TrackKind::GpuStream);
  EXPECT_EQ(trackOf("stream 7 sync").parent, trackOf("GPU 0").id);
  const OwnedTrack& metrics = trackOf("GPU metrics");
  EXPECT_EQ(metrics.kind, TrackKind::Thread);
  EXPECT_EQ(metrics.parent, gpu.id);
  const OwnedTrack& counter = trackOf("SM throughput");
  EXPECT_EQ(counter.kind, TrackKind::Counter);
  EXPECT_EQ(counter.parent, metrics.id);
  EXPECT_EQ(counter.unit, "%");
  const OwnedTrack& host = trackOf("host");
  EXPECT_EQ(host.kind, TrackKind::Process);
  EXPECT_EQ(host.label, "CPU");
  const OwnedTrack& thread = trackOf("thread 400");
  EXPECT_EQ(thread.kind, TrackKind::Thread);
  EXPECT_EQ(thread.parent, host.id);
  EXPECT_EQ(thread.tid, 400);
}

TEST_F(EventWriterTest, DescribesAThreadAgainUnderTheSameIdWhenItIsNamedLater) {
  OrderSink sink;
  EventWriter writer(sink, tables_, kBase);
  TraceRecords r;
  r.instants.push_back(InstantRecord{kBase, intern("early"), worker_});
  writer.write(r);
  tables_.threads[worker_].name = intern("loader");
  writer.finish();
  std::vector<std::string> names;
  uint64_t id = 0;
  for (const OrderSink::Entry& e : sink.log) {
    if (!e.description || e.name.rfind("thread 400", 0) != 0) continue;
    EXPECT_TRUE(id == 0 || id == e.track) << "the same track, described again";
    id = e.track;
    names.push_back(e.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"thread 400", "thread 400 (loader)"}));
}

TEST_F(EventWriterTest, FlowsKeepBothEndsWhenTheyArriveInDifferentWrites) {
  EventWriter writer(sink_, tables_, kBase);
  TraceRecords first;
  first.flows.push_back(FlowRecord{kBase + 10, 42, worker_});
  writer.write(first);
  TraceRecords second;
  KernelRecord k = kernel(3, 5, 1);
  k.at.correlationId = 42;
  k.at.hasLaunchCall = true;
  k.at.startNs = kBase + 50;
  second.kernels.push_back(k);
  KernelRecord unlaunched = kernel(3, 5, 0);
  unlaunched.at.correlationId = 43;
  second.kernels.push_back(unlaunched);
  writer.write(second);
  writer.finish();
  sink_.end({});

  const auto starts = events(Phase::FlowStart);
  const auto ends = events(Phase::FlowEnd);
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u) << "no arrow end without a launch call";
  EXPECT_EQ(starts[0].pid, kPid);
  EXPECT_EQ(starts[0].tid, 400);
  EXPECT_EQ(starts[0].timestampNs, kBase + 10);
  EXPECT_EQ(ends[0].flowId, starts[0].flowId);
  EXPECT_EQ(ends[0].pid, 3);
  EXPECT_EQ(ends[0].tid, gpuTrackTid(5, kGpuOpsTrack, 1));
  EXPECT_EQ(ends[0].timestampNs, kBase + 50);
  EXPECT_EQ(threadNames().at({kPid, 400}), "thread 400") << "a flow's thread is a track";
}

TEST_F(EventWriterTest, WritesEventsWithoutHeapAllocations) {
  TraceRecords r;
  for (int i = 0; i < 200; ++i) {
    r.kernels.push_back(kernel(static_cast<uint32_t>(i % 4), static_cast<uint32_t>(i % 16),
                               static_cast<uint16_t>(i % 3)));
    RangeRecord range;
    range.name = intern("r");
    range.thread = i % 2 ? main_ : worker_;
    range.async = i % 5 == 0;
    range.lane = static_cast<uint16_t>(i % 4);
    r.ranges.push_back(range);
    r.flows.push_back(FlowRecord{kBase, static_cast<uint32_t>(i), main_});
    r.syncs.push_back(sync(static_cast<uint32_t>(i % 8), static_cast<uint16_t>(i % 2)));
  }
  r.memcpys.resize(50);
  r.memsets.resize(50);
  r.memory.resize(50);
  r.apiCalls.resize(50);
  r.counters.resize(50);
  r.overheads.resize(50);
  r.gpuSpans.resize(50);
  CountingSink sink;
  EventWriter writer(sink, tables_, kBase);
  writer.write(r);  // learns the tracks: allowed to allocate
  long allocations = -1;
  {
    kinetrace::testing::ScopedAllocationCount counter;
    writer.write(r);
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0);
  EXPECT_GT(sink.events, 2 * 1000);
}

}  // namespace
}  // namespace kinetrace::detail
