// `kinetrace analyze --critical-path` end to end: its options, its report in text, JSON and
// HTML, and --critical-path-trace's trace with the path laid over it, which must stay a
// valid Chrome trace holding every event of its input.

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "analyze_command.h"
#include "cli_options.h"
#include "kinetrace/error.h"
#include "support/capture_output.h"
#include "support/temp_dir.h"

namespace kinetrace::cli {
namespace {

using testing::readBack;

// A step in torch.profiler's layout: an operator launching a kernel, then a stream sync the
// host waits in.
constexpr const char* kTrace = R"({"baseTimeNanoseconds": 1000000000,
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 9, "tid": 9, "ts": 0, "dur": 300},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 5, "dur": 30},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 10, "dur": 5,
   "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 200,
   "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 9, "tid": 9, "ts": 50, "dur": 180,
   "args": {"correlation": 2}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 50, "dur": 175,
   "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 9, "tid": 9, "ts": 240, "dur": 20},
  {"ph": "M", "name": "thread_name", "pid": 9, "tid": 9, "args": {"name": "main"}}
  ]})";

class CriticalPathCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(path("t.json")) << kTrace; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string run(AnalyzeOptions options) {
    options.quiet = true;
    std::FILE* out = std::tmpfile();
    EXPECT_EQ(analyzeCommand(options, out, stderr), 0);
    return readBack(out);
  }
  static nlohmann::json readJson(const std::string& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
  }

  testing::TempDir dir_;
};

TEST(CriticalPathOptionsTest, TheTraceOptionAsksForThePathToo) {
  Command c = parseCommandLine({"analyze", "t.json", "--critical-path"});
  EXPECT_TRUE(c.analyze.criticalPath);
  c = parseCommandLine({"analyze", "t.json", "--critical-path-trace", "out.json"});
  EXPECT_TRUE(c.analyze.criticalPath);
  EXPECT_EQ(c.analyze.criticalPathTrace, "out.json");
  c = parseCommandLine({"analyze", "t.json"});
  EXPECT_FALSE(c.analyze.criticalPath);
  try {
    parseCommandLine({"analyze", "t.json", "--critical-path-trace", "-"});
    FAIL() << "the marked trace was let onto standard output";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("standard output carries the report"),
              std::string::npos);
  }
}

TEST_F(CriticalPathCommandTest, TheTextSaysEachStepsPathAndItsParts) {
  AnalyzeOptions options;
  options.paths = {path("t.json")};
  options.criticalPath = true;
  const std::string text = run(options);
  EXPECT_NE(text.find("Critical path"), std::string::npos) << text;
  EXPECT_NE(text.find("ProfilerStep#3"), std::string::npos);
  EXPECT_NE(text.find("gemm"), std::string::npos);
}

TEST_F(CriticalPathCommandTest, TheJsonHasEachStepsLengthsPartsAndContributors) {
  AnalyzeOptions options;
  options.paths = {path("t.json")};
  options.criticalPath = true;
  options.jsonOutput = path("report.json");
  run(options);
  const nlohmann::json report = readJson(path("report.json"));
  const nlohmann::json& step = report["ranks"][0]["critical_path"]["per_step"][0];
  EXPECT_EQ(step["name"], "ProfilerStep#3");
  // The step's start to mm (5), mm's start to the launch (5), the launch (10), gemm (200),
  // the sync's wake-up (230 - 220), the gap (10), add (20), then the step's end (40).
  EXPECT_EQ(step["length_ns"], 300'000);
  EXPECT_EQ(step["hta_length_ns"], 235'000);
  EXPECT_EQ(step["parts"]["compute_ns"], 200'000);
  EXPECT_EQ(step["parts"]["sync_ns"], 10'000);
  EXPECT_EQ(step["contributors"][0]["name"], "gemm");
  EXPECT_EQ(step["contributors"][0]["part"], "compute");
  // The gap from the step's start, mm, the launch, gemm, the sync, the gap, add, the gap.
  EXPECT_EQ(step["longest_stretches"].size(), 8u);
  EXPECT_EQ(step["longest_stretches"][3]["name"], "gemm");
}

TEST_F(CriticalPathCommandTest, WithoutTheOptionTheJsonHasNoPath) {
  AnalyzeOptions options;
  options.paths = {path("t.json")};
  options.jsonOutput = path("report.json");
  run(options);
  EXPECT_FALSE(readJson(path("report.json"))["ranks"][0].contains("critical_path"));
}

TEST_F(CriticalPathCommandTest, TheHtmlShowsThePath) {
  AnalyzeOptions options;
  options.paths = {path("t.json")};
  options.criticalPath = true;
  options.htmlOutput = path("report.html");
  run(options);
  std::ifstream in(path("report.html"));
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<h3>Critical path</h3>"), std::string::npos);
  EXPECT_NE(html.find("the path over the step"), std::string::npos);
  EXPECT_NE(html.find("The path of ProfilerStep#3, its longest stretches in order"),
            std::string::npos);
}

TEST_F(CriticalPathCommandTest, TheMarkedTraceKeepsEveryEventAndMarksThePath) {
  AnalyzeOptions options;
  options.paths = {path("t.json")};
  options.criticalPathTrace = path("marked.json");
  options.criticalPath = true;
  run(options);
  const nlohmann::json marked = readJson(path("marked.json"));  // valid JSON, or it throws
  std::multiset<std::string> names;
  std::set<std::string> critical;
  std::map<uint64_t, std::string> arrowStarts;
  std::map<uint64_t, std::string> arrowEnds;
  for (const nlohmann::json& e : marked["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "s" || ph == "f") {
      EXPECT_EQ(e["cat"], "critical_path");
      EXPECT_TRUE(e.contains("ts") && e.contains("pid") && e.contains("tid") && e.contains("id"));
      (ph == "s" ? arrowStarts : arrowEnds)[e["id"].get<uint64_t>()] = e["args"]["part"];
      if (ph == "f") {
        EXPECT_EQ(e["bp"], "e");
      }
      continue;
    }
    if (ph != "X") continue;
    names.insert(e["name"].get<std::string>());
    if (e.contains("args") && e["args"].contains("critical")) {
      EXPECT_EQ(e["args"]["critical"], 1);
      critical.insert(e["name"].get<std::string>());
    }
  }
  // Every complete event of the input is there.
  for (const char* name : {"ProfilerStep#3", "aten::mm", "cudaLaunchKernel", "gemm",
                           "cudaStreamSynchronize", "Stream Sync", "aten::add"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
  // The path: mm, the launch call, gemm, the sync call, add; not the step, not the record.
  EXPECT_EQ(critical, (std::set<std::string>{"aten::mm", "cudaLaunchKernel", "gemm",
                                             "cudaStreamSynchronize", "aten::add"}));
  // Arrows in pairs: the step's start to mm, the launch, the sync's wake-up, the gap before
  // add, and add to the step's end.
  EXPECT_EQ(arrowStarts, arrowEnds);
  std::multiset<std::string> parts;
  for (const auto& [id, part] : arrowStarts) parts.insert(part);
  EXPECT_EQ(parts,
            (std::multiset<std::string>{"host_gap", "launch", "sync", "host_gap", "host_gap"}));
}

TEST_F(CriticalPathCommandTest, TheMarkedTraceNeedsOneFileItCanReadTwice) {
  std::ofstream(path("u.json")) << kTrace;
  AnalyzeOptions options;
  options.paths = {path("t.json"), path("u.json")};
  options.criticalPathTrace = path("marked.json");
  options.criticalPath = true;
  options.quiet = true;
  std::FILE* out = std::tmpfile();
  try {
    analyzeCommand(options, out, stderr);
    FAIL() << "two traces were accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("give one trace file"), std::string::npos)
        << error.what();
  }
  std::fclose(out);
}

}  // namespace
}  // namespace kinetrace::cli
