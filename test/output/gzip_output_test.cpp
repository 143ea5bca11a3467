#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "kinetrace/error.h"
#include "kinetrace/trace.h"
#include "model/trace_data.h"
#include "output/gzip_output.h"

#ifdef KINETRACE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace kinetrace {
namespace {

std::string tempPath(const std::string& suffix) {
  return "/tmp/kinetrace_gzip_test_" + std::to_string(::getpid()) + suffix;
}

#ifdef KINETRACE_HAVE_ZLIB
std::string gunzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr);
  std::string text;
  char chunk[65536];
  int got = 0;
  while ((got = gzread(file, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(got));
  gzclose(file);
  return text;
}
#endif

TEST(GzipOutputTest, GzPathIsWrittenCompressedAndReadsBackAsTheSameTrace) {
  if (!detail::gzipAvailable()) GTEST_SKIP() << "built without zlib";
#ifdef KINETRACE_HAVE_ZLIB
  auto data = std::make_shared<detail::TraceData>();
  data->startNs = 1'000'000'000;
  data->stopNs = 2'000'000'000;
  data->pid = 42;
  data->threads.push_back({42, 43, 0});
  for (int i = 0; i < 20000; ++i) {
    detail::RangeRecord range;
    range.startNs = data->startNs + i * 1000;
    range.endNs = range.startNs + 500;
    range.externalId = static_cast<uint64_t>(i + 1);
    range.name = data->strings.intern("step");
    data->ranges.push_back(range);
  }
  Trace trace(data);
  std::string path = tempPath(".json.gz");
  trace.save(path);

  FILE* raw = std::fopen(path.c_str(), "rb");
  ASSERT_NE(raw, nullptr);
  unsigned char magic[2] = {0, 0};
  ASSERT_EQ(std::fread(magic, 1, 2, raw), 2u);
  std::fseek(raw, 0, SEEK_END);
  long compressedSize = std::ftell(raw);
  std::fclose(raw);
  EXPECT_EQ(magic[0], 0x1f);
  EXPECT_EQ(magic[1], 0x8b);

  std::string text = gunzip(path);
  EXPECT_LT(compressedSize * 5, static_cast<long>(text.size())) << "a repetitive trace compresses well";
  nlohmann::json parsed = nlohmann::json::parse(text);
  size_t ranges = 0;
  for (const auto& event : parsed["traceEvents"]) ranges += event.value("cat", "") == "user_annotation";
  EXPECT_EQ(ranges, 20000u);
  std::remove(path.c_str());
#endif
}

TEST(GzipOutputTest, FailedSaveLeavesNoFile) {
  std::string path = "/nonexistent-kinetrace-dir/trace.json.gz";
  Trace trace;
  try {
    trace.save(path);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kinetrace
