// The .pftrace track table: threads, lanes of threads, counters, and tracks never described.

#include "analysis/perfetto_tracks.h"

#include <gtest/gtest.h>

#include <string>

#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "proto_message.h"

namespace kinetrace::detail {
namespace {

using namespace pftrace;

std::string threadTrack(uint64_t uuid, int64_t pid, int64_t tid, const std::string& name) {
  return protoMessage([&](proto::ProtoWriter& w) {
    w.varint(kTrackUuid, uuid);
    w.bytes(kTrackName, name);
    const std::size_t thread = w.beginMessage(kTrackThread);
    w.signedVarint(kThreadPid, pid);
    w.signedVarint(kThreadTid, tid);
    w.endMessage(thread);
  });
}

std::string childTrack(uint64_t uuid, uint64_t parent) {
  return protoMessage([&](proto::ProtoWriter& w) {
    w.varint(kTrackUuid, uuid);
    w.varint(kTrackParentUuid, parent);
  });
}

TEST(PerfettoTracksTest, AThreadTrackHasItsPidAndTid) {
  ReadBudget budget;
  TrackTable tracks(budget);
  tracks.describe(threadTrack(10, 42, -7, "main"));
  const TrackInfo& t = tracks.at(10);
  EXPECT_EQ(t.kind, TrackInfo::Kind::Thread);
  EXPECT_EQ(t.pid, 42);
  EXPECT_EQ(t.tid, -7);
  EXPECT_EQ(viewOf(t.name), "main");
}

TEST(PerfettoTracksTest, ALaneOfAThreadIsThatThreads) {
  ReadBudget budget;
  TrackTable tracks(budget);
  tracks.describe(threadTrack(10, 42, 43, "main"));
  tracks.describe(childTrack(11, 10));
  EXPECT_EQ(tracks.at(11).kind, TrackInfo::Kind::Thread);
  EXPECT_EQ(tracks.at(11).pid, 42);
  EXPECT_EQ(tracks.at(11).tid, 43);
  // A child of a track that is not a thread's stays a track of its own.
  tracks.describe(childTrack(12, 99));
  EXPECT_EQ(tracks.at(12).kind, TrackInfo::Kind::Other);
}

TEST(PerfettoTracksTest, ACounterTrackKeepsItsUnitAndCategory) {
  ReadBudget budget;
  TrackTable tracks(budget);
  tracks.describe(protoMessage([](proto::ProtoWriter& w) {
    w.varint(kTrackUuid, 20);
    w.varint(kTrackParentUuid, 10);
    w.bytes(kTrackName, "SM throughput");
    const std::size_t counter = w.beginMessage(kTrackCounter);
    w.bytes(kCounterUnitName, "%");
    w.bytes(kCounterCategories, "gpu_metric");
    w.endMessage(counter);
  }));
  const TrackInfo& t = tracks.at(20);
  EXPECT_EQ(t.kind, TrackInfo::Kind::Counter);
  EXPECT_EQ(t.parent, 10u);
  EXPECT_EQ(viewOf(t.unit), "%");
  EXPECT_EQ(viewOf(t.category), "gpu_metric");
}

TEST(PerfettoTracksTest, ADescriptorAgainReplacesTheTrack) {
  ReadBudget budget;
  TrackTable tracks(budget);
  tracks.describe(threadTrack(10, 1, 2, "old"));
  tracks.describe(threadTrack(10, 3, 4, "new"));
  EXPECT_EQ(tracks.at(10).pid, 3);
  EXPECT_EQ(viewOf(tracks.at(10).name), "new");
}

TEST(PerfettoTracksTest, ATrackNeverDescribedIsAnError) {
  ReadBudget budget;
  TrackTable tracks(budget);
  try {
    tracks.at(7);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "an event on track 7, which was never described");
  }
}

}  // namespace
}  // namespace kinetrace::detail
