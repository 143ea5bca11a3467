#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "kinetrace/sink.h"

namespace kinetrace {
namespace {

TEST(MemorySinkTest, KeepsCopiesOfEveryStringAfterTheSourceChanges) {
  MemorySink sink;
  TraceHeader header;
  header.traceName = "mem";
  header.baseTimeNs = 100;
  header.metadata = {{"schemaVersion", 1}};
  sink.begin(header);

  std::string name = "kernel";
  std::string category = "cat";
  std::string key = "label";
  std::string value = "value";
  const Arg args[] = {{key, std::string_view(value)}, {"n", int64_t{-3}}, {"grid", Dim3{1, 2, 3}}};
  Event event;
  event.phase = Phase::FlowEnd;
  event.name = name;
  event.category = category;
  event.pid = 4;
  event.tid = 5;
  event.timestampNs = 6;
  event.durationNs = 7;
  event.flowId = 8;
  event.args = args;
  event.argCount = 3;
  sink.write(event);
  name.assign(name.size(), '#');
  category.assign(category.size(), '#');
  key.assign(key.size(), '#');
  value.assign(value.size(), '#');
  sink.end({});

  ASSERT_EQ(sink.events().size(), 1u);
  const OwnedEvent& kept = sink.events()[0];
  EXPECT_EQ(kept.phase, Phase::FlowEnd);
  EXPECT_EQ(kept.name, "kernel");
  EXPECT_EQ(kept.category, "cat");
  EXPECT_EQ(kept.pid, 4);
  EXPECT_EQ(kept.tid, 5);
  EXPECT_EQ(kept.timestampNs, 6);
  EXPECT_EQ(kept.durationNs, 7);
  EXPECT_EQ(kept.flowId, 8u);
  ASSERT_EQ(kept.args.size(), 3u);
  EXPECT_EQ(kept.args[0].key, "label");
  EXPECT_EQ(std::get<std::string>(kept.args[0].value), "value");
  EXPECT_EQ(std::get<int64_t>(kept.args[1].value), -3);
  EXPECT_EQ(std::get<Dim3>(kept.args[2].value), (Dim3{1, 2, 3}));
  EXPECT_EQ(sink.header().traceName, "mem");
  EXPECT_EQ(sink.header().baseTimeNs, 100);
  EXPECT_EQ(sink.header().metadata.size(), 1u);
  EXPECT_EQ(sink.header().metadata[0].value, Value(1));
  EXPECT_TRUE(sink.ended());
}

TEST(MemorySinkTest, FindsAnArgByKeyOrReturnsNull) {
  OwnedEvent event;
  event.args.push_back(OwnedArg{"a", int64_t{1}});
  event.args.push_back(OwnedArg{"b", 2.5});
  ASSERT_NE(event.arg("b"), nullptr);
  EXPECT_EQ(std::get<double>(event.arg("b")->value), 2.5);
  EXPECT_EQ(event.arg("missing"), nullptr);
}

TEST(MemorySinkTest, IsNotEndedUntilEndAndStartsAfreshOnBegin) {
  MemorySink sink;
  sink.begin(TraceHeader{});
  sink.write(Event{});
  EXPECT_FALSE(sink.ended());
  sink.end({{"dropped", 1}});
  EXPECT_TRUE(sink.ended());
  sink.begin(TraceHeader{});
  EXPECT_TRUE(sink.events().empty());
  EXPECT_TRUE(sink.footer().empty());
  EXPECT_EQ(sink.metadata("dropped"), nullptr);
  EXPECT_FALSE(sink.ended());
}

TEST(MemorySinkTest, KeepsTheFooterGivenToEnd) {
  MemorySink sink;
  sink.begin(TraceHeader{});
  sink.end({{"kinetrace_cupti_dropped_records", 4}, {"info", Value::object({{"a", "b"}})}});
  ASSERT_EQ(sink.footer().size(), 2u);
  EXPECT_EQ(sink.footer()[0].key, "kinetrace_cupti_dropped_records");
  EXPECT_EQ(sink.footer()[1].value, Value::object({{"a", "b"}}));
}

TEST(MemorySinkTest, MetadataIsTheFootersValueElseTheHeaders) {
  MemorySink sink;
  TraceHeader header;
  header.metadata = {{"rank", 0}, {"model", "resnet"}};
  sink.begin(header);
  ASSERT_NE(sink.metadata("rank"), nullptr);
  EXPECT_EQ(*sink.metadata("rank"), Value(0)) << "the header's before end()";
  sink.end({{"rank", 3}, {"peak", 2.5}});
  for (const char* key : {"rank", "model", "peak"}) ASSERT_NE(sink.metadata(key), nullptr) << key;
  EXPECT_EQ(*sink.metadata("rank"), Value(3));
  EXPECT_EQ(*sink.metadata("model"), Value("resnet"));
  EXPECT_EQ(*sink.metadata("peak"), Value(2.5));
  EXPECT_EQ(sink.metadata("missing"), nullptr);
}

TEST(MemorySinkTest, MetadataOfARepeatedKeyIsItsLastValue) {
  MemorySink sink;
  TraceHeader header;
  header.metadata = {{"k", 1}, {"k", 2}};
  sink.begin(header);
  ASSERT_NE(sink.metadata("k"), nullptr);
  EXPECT_EQ(*sink.metadata("k"), Value(2)) << "as a JSON reader of the file would see it";
}

}  // namespace
}  // namespace kinetrace
