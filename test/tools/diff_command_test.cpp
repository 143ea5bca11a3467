// `kinetrace diff`: its command line, two traces or two directories of a job's traces (ranks
// matched by number), and the errors bad input gets: a path that does not exist, runs whose
// ranks differ, a trace that is not one.

#include "diff_command.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_options.h"
#include "kinetrace/error.h"
#include "support/capture_output.h"
#include "support/temp_dir.h"
#include "support/usage_error.h"

namespace kinetrace::cli {
namespace {

using testing::readBack;

using kinetrace::testing::usageErrorOf;

// A rank's trace: two steps, each launching one kernel of `kernelUs`.
void writeTrace(const std::string& path, int rank, int kernelUs) {
  std::ofstream out(path);
  out << R"({"baseTimeNanoseconds": 1000000000, "distributedInfo": {"rank": )" << rank
      << R"(, "world_size": 2}, "traceEvents": [)";
  for (int step = 0; step < 2; ++step) {
    const int at = step * 1000;
    out << (step == 0 ? "" : ",")
        << R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" << step
        << R"(", "pid": 9, "tid": 9, "ts": )" << at << R"(, "dur": 900},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": )"
        << at + 5 << R"(, "dur": 20},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": )"
        << at + 10 << R"(, "dur": 5, "args": {"correlation": )" << step + 1 << R"(}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": )"
        << at + 20 << R"(, "dur": )" << kernelUs
        << R"(, "args": {"device": 0, "stream": 7, "correlation": )" << step + 1 << "}}";
  }
  out << "]}";
}

class DiffCommandTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The report on standard output, and what was said on stderr.
  std::pair<std::string, std::string> diff(DiffOptions options) {
    options.quiet = true;
    std::FILE* out = std::tmpfile();
    std::FILE* messages = std::tmpfile();
    EXPECT_EQ(diffCommand(options, out, messages), 0);
    return {readBack(out), readBack(messages)};
  }

  // The error the command throws, or "".
  std::string errorOf(DiffOptions options) {
    options.quiet = true;
    std::FILE* out = std::tmpfile();
    try {
      diffCommand(options, out, stderr);
    } catch (const Error& error) {
      std::fclose(out);
      return error.what();
    }
    std::fclose(out);
    return "";
  }

  kinetrace::testing::TempDir dir_;
};

TEST(DiffOptionsTest, ReadsItsOptionsAndNeedsTwoRuns) {
  const Command c = parseCommandLine(
      {"diff", "--json", "d.json", "--top", "3", "--rank", "1", "-q", "before/", "after/"});
  EXPECT_EQ(c.kind, Command::Kind::Diff);
  EXPECT_EQ(c.diff.base, "before/");
  EXPECT_EQ(c.diff.after, "after/");
  EXPECT_EQ(c.diff.jsonOutput, "d.json");
  EXPECT_EQ(c.diff.top, 3u);
  EXPECT_EQ(c.diff.rank, 1);
  EXPECT_TRUE(c.diff.quiet);
  EXPECT_EQ(parseCommandLine({"diff", "a", "b"}).diff.memoryBytes, std::size_t{256} << 20);
  EXPECT_EQ(usageErrorOf({"diff", "a"}),
            "kinetrace diff: give two runs to compare: kinetrace diff BASE NEW (each a trace or "
            "a directory of one job's traces; got 1)");
  EXPECT_NE(usageErrorOf({"diff", "--json", "-", "--html", "-", "a", "b"}).find("standard output"),
            std::string::npos);
  EXPECT_NE(helpFor("diff").find("usage: kinetrace diff [options] BASE NEW"), std::string::npos);
  EXPECT_NE(helpFor("").find("kinetrace diff BASE NEW"), std::string::npos);
}

TEST_F(DiffCommandTest, ComparesTwoTracesAndWritesJson) {
  writeTrace(path("base.json"), 0, 100);
  writeTrace(path("new.json"), 0, 400);
  DiffOptions options;
  options.base = path("base.json");
  options.after = path("new.json");
  options.jsonOutput = path("diff.json");
  const auto [text, messages] = diff(options);
  // Steps of fixed length: the kernel took the time that was idle.
  EXPECT_NE(text.find("GPU compute time rose 300.0 us a step (100.0 us -> 400.0 us). Behind it: "
                      "kernel `gemm` +300.0 us a step"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gemm"), std::string::npos) << text;
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(path("diff.json")));
  ASSERT_EQ(json["ranks"].size(), 1u);
  EXPECT_EQ(json["ranks"][0]["match"], "matched");
  EXPECT_EQ(json["ranks"][0]["kernels"][0]["name"], "gemm");
  EXPECT_EQ(json["ranks"][0]["kernels"][0]["base_ns"], 200'000);
  EXPECT_EQ(json["ranks"][0]["kernels"][0]["new_ns"], 800'000);
  EXPECT_EQ(json["ranks"][0]["ops"][0]["name"], "aten::mm");
}

TEST_F(DiffCommandTest, MatchesADirectorysRanksByNumber) {
  std::filesystem::create_directory(path("base"));
  std::filesystem::create_directory(path("new"));
  writeTrace(path("base/a.json"), 1, 100);
  writeTrace(path("base/b.json"), 0, 100);
  writeTrace(path("new/x.json"), 0, 100);
  writeTrace(path("new/y.json"), 1, 300);
  DiffOptions options;
  options.base = path("base");
  options.after = path("new");
  options.jsonOutput = "-";
  const nlohmann::json json = nlohmann::json::parse(diff(options).first);
  ASSERT_EQ(json["ranks"].size(), 2u);
  EXPECT_EQ(json["ranks"][0]["rank"], 0);
  EXPECT_EQ(json["ranks"][0]["kernels"][0]["new_ns"], 200'000);
  EXPECT_EQ(json["ranks"][1]["rank"], 1);
  EXPECT_EQ(json["ranks"][1]["kernels"][0]["new_ns"], 600'000);
  EXPECT_EQ(json["ranks"][1]["base"]["path"], path("base/a.json"));
}

TEST_F(DiffCommandTest, RefusesRunsWhoseRanksDiffer) {
  std::filesystem::create_directory(path("base"));
  std::filesystem::create_directory(path("new"));
  writeTrace(path("base/r0.json"), 0, 100);
  writeTrace(path("base/r1.json"), 1, 100);
  writeTrace(path("new/r0.json"), 0, 100);
  writeTrace(path("new/r2.json"), 2, 100);
  DiffOptions options;
  options.base = path("base");
  options.after = path("new");
  const std::string error = errorOf(options);
  EXPECT_NE(error.find("the runs' ranks differ: BASE (" + path("base") +
                       ") has rank 0, 1 and NEW (" + path("new") + ") rank 0, 2"),
            std::string::npos)
      << error;
  // One rank of each compares.
  options.rank = 0;
  options.jsonOutput = "-";
  EXPECT_EQ(nlohmann::json::parse(diff(options).first)["ranks"].size(), 1u);
}

TEST_F(DiffCommandTest, SaysWhenTwoSingleTracesClaimDifferentRanks) {
  writeTrace(path("base.json"), 0, 100);
  writeTrace(path("new.json"), 3, 100);
  DiffOptions options;
  options.base = path("base.json");
  options.after = path("new.json");
  EXPECT_NE(diff(options).second.find("BASE says rank 0 and NEW rank 3: compared as one run each"),
            std::string::npos);
}

TEST_F(DiffCommandTest, NamesAMissingPathOrATraceThatIsNotOne) {
  writeTrace(path("base.json"), 0, 100);
  DiffOptions options;
  options.base = path("base.json");
  options.after = path("missing.json");
  EXPECT_EQ(errorOf(options),
            "cannot read " + path("missing.json") + ": no such file or directory");
  std::ofstream(path("notes.json")) << "this is not JSON";
  options.after = path("notes.json");
  EXPECT_NE(errorOf(options).find(path("notes.json")), std::string::npos);
}

TEST_F(DiffCommandTest, ATraceWithoutGpuOperationsIsSaid) {
  writeTrace(path("base.json"), 0, 100);
  std::ofstream(path("host.json"))
      << R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0",
          "pid": 9, "tid": 9, "ts": 0, "dur": 900}]})";
  DiffOptions options;
  options.base = path("base.json");
  options.after = path("host.json");
  const std::string text = diff(options).first;
  EXPECT_NE(text.find("NEW has no GPU operation"), std::string::npos) << text;
}

}  // namespace
}  // namespace kinetrace::cli
