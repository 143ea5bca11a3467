// A .pftrace TrackEvent decoded: interned and inline names, typed annotations (a Dim3 from an
// array of three), flows, a legacy flow, counters, and the sequence's default track.

#include "analysis/perfetto_track_events.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "proto_message.h"

namespace kinetrace::detail {
namespace {

using namespace pftrace;

std::string interned(uint32_t table, uint64_t iid, const std::string& name) {
  return protoMessage([&](proto::ProtoWriter& w) {
    const std::size_t entry = w.beginMessage(table);
    w.varint(kInternedIid, iid);
    w.bytes(kInternedName, name);
    w.endMessage(entry);
  });
}

std::string errorOf(const SequenceState& sequence, const std::string& event) {
  try {
    decodeTrackEvent(sequence, event, 0);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PerfettoTrackEventsTest, InternedNamesAndAnnotationsAreResolvedAndTyped) {
  ReadBudget budget;
  SequenceState sequence(budget);
  sequence.addInterned(interned(kInternedEventNames, 1, "gemm"));
  sequence.addInterned(interned(kInternedCategories, 2, "kernel"));
  sequence.addInterned(interned(kInternedAnnotationNames, 3, "grid"));
  sequence.addInterned(interned(kInternedStringValues, 5, R"({"a":1})"));  // odd: JSON
  sequence.addInterned(interned(kInternedStringValues, 6, "text"));
  const std::string event = protoMessage([](proto::ProtoWriter& w) {
    w.varint(kEventType, kTypeSliceBegin);
    w.varint(kEventTrackUuid, 9);
    w.varint(kEventNameIid, 1);
    w.varint(kEventCategoryIids, 2);
    std::size_t a = w.beginMessage(kEventDebugAnnotations);
    w.varint(kAnnotationNameIid, 3);
    for (int64_t v : {4, 2, 1}) {
      const std::size_t item = w.beginMessage(kAnnotationArray);
      w.signedVarint(kAnnotationInt, v);
      w.endMessage(item);
    }
    w.endMessage(a);
    a = w.beginMessage(kEventDebugAnnotations);
    w.bytes(kAnnotationName, "json");
    w.varint(kAnnotationStringIid, 5);
    w.endMessage(a);
    a = w.beginMessage(kEventDebugAnnotations);
    w.bytes(kAnnotationName, "string");
    w.varint(kAnnotationStringIid, 6);
    w.endMessage(a);
    a = w.beginMessage(kEventDebugAnnotations);
    w.bytes(kAnnotationName, "ratio");
    w.doubleValue(kAnnotationDouble, 0.5);
    w.endMessage(a);
    w.fixed64(kEventFlowIds, 77);
    w.fixed64(kEventTerminatingFlowIds, 78);
  });
  const DecodedEvent e = decodeTrackEvent(sequence, event, 1'234);
  EXPECT_EQ(e.type, kTypeSliceBegin);
  EXPECT_EQ(e.track, 9u);
  EXPECT_EQ(e.timeNs, 1'234);
  EXPECT_EQ(e.name, "gemm");
  EXPECT_EQ(e.category, "kernel");
  ASSERT_EQ(e.annotations.size(), 4u);
  EXPECT_EQ(e.annotations[0].name, "grid");
  EXPECT_EQ(e.annotations[0].kind, Annotation::Kind::Dim3);
  EXPECT_EQ(std::get<Dim3>(annotationArg(e.annotations[0])).x, 4);
  EXPECT_EQ(std::get<Dim3>(annotationArg(e.annotations[0])).z, 1);
  EXPECT_EQ(e.annotations[1].kind, Annotation::Kind::Json);
  EXPECT_EQ(std::get<JsonText>(annotationArg(e.annotations[1])).text, R"({"a":1})");
  EXPECT_EQ(e.annotations[2].kind, Annotation::Kind::String);
  EXPECT_EQ(std::get<std::string_view>(annotationArg(e.annotations[2])), "text");
  EXPECT_EQ(std::get<double>(annotationArg(e.annotations[3])), 0.5);
  EXPECT_EQ(e.flowIds, std::vector<uint64_t>{77});
  EXPECT_EQ(e.terminatingFlowIds, std::vector<uint64_t>{78});
}

TEST(PerfettoTrackEventsTest, AnEventWithoutATrackIsOnTheSequencesDefault) {
  ReadBudget budget;
  SequenceState sequence(budget);
  sequence.hasDefaultTrack = true;
  sequence.defaultTrack = 31;
  const DecodedEvent e = decodeTrackEvent(sequence, protoMessage([](proto::ProtoWriter& w) {
                                            w.varint(kEventType, kTypeCounter);
                                            w.signedVarint(kEventCounterValue, -5);
                                          }),
                                          0);
  EXPECT_EQ(e.track, 31u);
  EXPECT_TRUE(e.hasCounter);
  EXPECT_FALSE(e.counterIsDouble);
  EXPECT_EQ(e.counterInt, -5);
}

TEST(PerfettoTrackEventsTest, ALegacyFlowKeepsItsPhaseAndId) {
  ReadBudget budget;
  SequenceState sequence(budget);
  const DecodedEvent e = decodeTrackEvent(sequence, protoMessage([](proto::ProtoWriter& w) {
                                            const std::size_t legacy =
                                                w.beginMessage(kEventLegacyEvent);
                                            w.signedVarint(kLegacyPhase, 's');
                                            w.varint(kLegacyUnscopedId, 12);
                                            w.endMessage(legacy);
                                          }),
                                          0);
  EXPECT_EQ(e.type, 0u);
  EXPECT_EQ(e.legacyPhase, 's');
  EXPECT_EQ(e.legacyId, 12u);
}

TEST(PerfettoTrackEventsTest, WhatKinetraceNeverWritesIsAnError) {
  ReadBudget budget;
  SequenceState sequence(budget);
  EXPECT_EQ(
      errorOf(sequence, protoMessage([](proto::ProtoWriter& w) { w.varint(kEventNameIid, 4); })),
      "event name id 4 was never interned");
  EXPECT_EQ(errorOf(sequence, protoMessage([](proto::ProtoWriter& w) {
                      const std::size_t a = w.beginMessage(kEventDebugAnnotations);
                      w.bytes(kAnnotationName, "pair");
                      for (int i = 0; i < 2; ++i) {
                        const std::size_t item = w.beginMessage(kAnnotationArray);
                        w.signedVarint(kAnnotationInt, i);
                        w.endMessage(item);
                      }
                      w.endMessage(a);
                    })),
            "annotation \"pair\" is an array kinetrace does not write");
  // Arrays nested past kMaxProtoDepth.
  std::string nested =
      protoMessage([](proto::ProtoWriter& w) { w.signedVarint(kAnnotationInt, 1); });
  for (std::size_t i = 0; i < kMaxProtoDepth; ++i) {
    nested = protoMessage([&](proto::ProtoWriter& w) { w.message(kAnnotationArray, nested); });
  }
  EXPECT_EQ(errorOf(sequence, protoMessage([&](proto::ProtoWriter& w) {
                      w.message(kEventDebugAnnotations, nested);
                    })),
            "a debug annotation nested more than 32 levels deep");
}

}  // namespace
}  // namespace kinetrace::detail
