#include "output/gzip_output.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "model/trace_data.h"
#include "output/trace_events.h"
#include "support/temp_dir.h"
#include "support/test_support.h"

#ifdef KINETRACE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace kinetrace::detail {
namespace {

#ifdef KINETRACE_HAVE_ZLIB
std::string gunzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr);
  if (file == nullptr) return "";
  std::string text;
  char chunk[65536];
  int got = 0;
  while ((got = gzread(file, chunk, sizeof chunk)) > 0) {
    text.append(chunk, static_cast<size_t>(got));
  }
  gzclose(file);
  return text;
}
#endif

TEST(GzipOutputTest, GzPathIsWrittenCompressedAndReadsBackAsTheSameTrace) {
  if (!gzipAvailable()) GTEST_SKIP() << "built without zlib";
#ifdef KINETRACE_HAVE_ZLIB
  kinetrace::testing::TempDir dir("kinetrace_gzip");
  TraceData trace;
  trace.startNs = 1'000'000'000;
  trace.stopNs = 2'000'000'000;
  trace.tables.pid = 42;
  trace.tables.threads.push_back({42, 43, 0});
  trace.header = {{"schemaVersion", 1}};
  trace.footer = {{"kinetrace_unfinished_ranges", 0}};
  for (int i = 0; i < 20000; ++i) {
    RangeRecord range;
    range.startNs = trace.startNs + i * 1000;
    range.endNs = range.startNs + 500;
    range.externalId = static_cast<uint64_t>(i + 1);
    range.name = trace.tables.strings.intern("step");
    trace.records.ranges.push_back(range);
  }
  const std::string path = (dir / "trace.json.gz").string();
  auto sink = openSink(path);
  writeTrace(trace, path, {}, *sink);

  const std::string compressed = kinetrace::testing::fileContents(path);
  ASSERT_GE(compressed.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(compressed[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(compressed[1]), 0x8b);

  const std::string text = gunzip(path);
  EXPECT_LT(compressed.size() * 5, text.size()) << "a repetitive trace compresses well";
  const nlohmann::json parsed = nlohmann::json::parse(text);
  std::size_t ranges = 0;
  for (const auto& event : parsed["traceEvents"]) {
    ranges += event.value("cat", "") == "user_annotation";
  }
  EXPECT_EQ(ranges, 20000u);
  EXPECT_EQ(parsed["schemaVersion"], 1);
  EXPECT_EQ(parsed["kinetrace_unfinished_ranges"], 0);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"trace.json.gz"});
#endif
}

TEST(GzipOutputTest, FailedOpenNamesThePath) {
  const std::string path = "/nonexistent-kinetrace-dir/trace.json.gz";
  EXPECT_EQ(
      kinetrace::testing::errorOf([&path] { openSink(path); }),
      "cannot write trace to " + path + ": /nonexistent-kinetrace-dir: No such file or directory");
}

}  // namespace
}  // namespace kinetrace::detail
