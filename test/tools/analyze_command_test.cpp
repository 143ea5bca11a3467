// `kinetrace analyze`: its command line, the traces a directory holds, one analysis over
// several ranks' files or a merged trace's ranks, --rank and --json; `kinetrace summary` of a
// trace without a summary.

#include "analyze_command.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_options.h"
#include "kinetrace/error.h"
#include "merge_command.h"
#include "summary_command.h"
#include "support/capture_output.h"
#include "support/temp_dir.h"
#include "support/usage_error.h"

namespace kinetrace::cli {
namespace {

using testing::readBack;

using kinetrace::testing::usageErrorOf;

// A rank's trace: one kernel launched 10 us into a 100 us step; rank 1 starts its
// all-reduce 300 us after rank 0 does.
void writeRankTrace(const std::string& path, int rank) {
  std::ofstream(path) << R"({"baseTimeNanoseconds": 1000000000,
    "distributedInfo": {"rank": )"
                      << rank << R"(, "world_size": 2},
    "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 10, "dur": 5,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 80,
     "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "ncclAllReduce", "pid": 0, "tid": 8, "ts": )"
                      << (rank == 1 ? 500 : 200)
                      << R"(, "dur": 100, "args": {"device": 0, "stream": 8}}
    ]})";
}

class AnalyzeCommandTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The report on standard output.
  std::string analyze(AnalyzeOptions options) {
    options.quiet = true;
    std::FILE* out = std::tmpfile();
    analyzeCommand(options, out, stderr);
    return readBack(out);
  }

  // What the command said on stderr (its report goes nowhere); the run must succeed.
  std::string messagesOf(const AnalyzeOptions& options) {
    std::FILE* out = std::tmpfile();
    std::FILE* messages = std::tmpfile();
    EXPECT_EQ(analyzeCommand(options, out, messages), 0);
    std::fclose(out);
    return readBack(messages);
  }

  testing::TempDir dir_;
};

TEST(AnalyzeOptionsTest, ReadsItsOptionsAndNeedsATrace) {
  Command c = parseCommandLine({"analyze", "--json", "a.json", "--rank", "1", "--top=3",
                                "--tiny-us", "5", "-q", "t1.json", "dir/"});
  EXPECT_EQ(c.kind, Command::Kind::Analyze);
  EXPECT_EQ(c.analyze.paths, (std::vector<std::string>{"t1.json", "dir/"}));
  EXPECT_EQ(c.analyze.jsonOutput, "a.json");
  EXPECT_EQ(c.analyze.rank, 1);
  EXPECT_EQ(c.analyze.top, 3u);
  EXPECT_EQ(c.analyze.tinyKernelNs, 5'000);
  EXPECT_EQ(c.analyze.kernelWaitNs, 30'000) << "HTA's threshold by default";
  EXPECT_EQ(parseCommandLine({"analyze", "--kernel-wait-us", "2", "t"}).analyze.kernelWaitNs,
            2'000);
  EXPECT_EQ(usageErrorOf({"analyze", "--kernel-wait-us", "-1", "t"}),
            "kinetrace analyze: --kernel-wait-us needs a whole number 0..1000, got '-1'");
  EXPECT_NE(helpFor("analyze").find("--kernel-wait-us N"), std::string::npos);
  EXPECT_TRUE(c.analyze.quiet);
  EXPECT_EQ(usageErrorOf({"analyze"}),
            "kinetrace analyze: no trace given: kinetrace analyze TRACE|DIRECTORY...");
  EXPECT_NE(usageErrorOf({"analyze", "--tiny-us", "x", "t"}).find("--tiny-us needs a whole number"),
            std::string::npos);
  EXPECT_EQ(parseCommandLine({"help", "analyze"}).helpTopic, "analyze");
  EXPECT_EQ(parseCommandLine({"analyze", "--memory-mb", "64", "t"}).analyze.memoryBytes,
            std::size_t{64} << 20);
  EXPECT_EQ(parseCommandLine({"analyze", "t"}).analyze.memoryBytes, std::size_t{256} << 20);
  for (const char* bad : {"8", "x", "-5", "2000000"}) {
    EXPECT_NE(usageErrorOf({"analyze", "--memory-mb", bad, "t"})
                  .find("--memory-mb needs a whole number of megabytes 16..1048576"),
              std::string::npos)
        << bad;
  }
}

TEST(AnalyzeOptionsTest, ReadsTheWorkloadFiguresOptionsAndTheirBounds) {
  const AnalyzeOptions defaults = parseCommandLine({"analyze", "t"}).analyze;
  EXPECT_EQ(defaults.sequenceLength, 3u) << "HTA's min_pattern_len";
  EXPECT_EQ(defaults.sequenceOperator, "");
  EXPECT_EQ(defaults.maxQueueLength, 1024) << "HTA's max_queue_length";
  const AnalyzeOptions set = parseCommandLine({"analyze", "--min-pattern-len", "5", "--sequence-op",
                                               "aten::", "--max-queue-length", "4096", "t"})
                                 .analyze;
  EXPECT_EQ(set.sequenceLength, 5u);
  EXPECT_EQ(set.sequenceOperator, "aten::");
  EXPECT_EQ(set.maxQueueLength, 4096);
  EXPECT_EQ(usageErrorOf({"analyze", "--min-pattern-len", "17", "t"}),
            "kinetrace analyze: --min-pattern-len needs a whole number 1..16, got '17'");
  EXPECT_EQ(usageErrorOf({"analyze", "--max-queue-length", "0", "t"}),
            "kinetrace analyze: --max-queue-length needs a whole number of operations, 1 or "
            "more, got '0'");
}

TEST_F(AnalyzeCommandTest, ADirectoryIsItsTracesOnePerRank) {
  writeRankTrace(path("rank0.json"), 0);
  writeRankTrace(path("rank1.json"), 1);
  std::ofstream(path("rank0.summary.json")) << "{}";
  std::ofstream(path("notes.txt")) << "x";
  EXPECT_EQ(traceFilesIn(dir_.path()),
            (std::vector<std::string>{path("rank0.json"), path("rank1.json")}));
  std::ofstream(path("config.json")) << R"({"lr": 0.1})";  // a JSON that is no trace: skipped

  AnalyzeOptions options;
  options.paths = {dir_.path()};
  options.jsonOutput = path("analysis.json");
  const std::string text = analyze(options);
  EXPECT_NE(text.find("rank 1 started ncclAllReduce #1 300.0 us after the first rank"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 0 ("), std::string::npos);
  EXPECT_NE(text.find("rank 1 ("), std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(path("analysis.json")));
  EXPECT_EQ(json["ranks"].size(), 2u);
  EXPECT_EQ(json["stragglers"][0]["slow_rank"], 1);
  EXPECT_EQ(json["ranks"][0]["devices"][0]["time"]["before_first_op_ns"], 20'000)
      << "idle until the first kernel at 20 us: before the first GPU operation";
  EXPECT_EQ(json["ranks"][0]["devices"][0]["time"]["host_wait_ns"], 0);

  options.rank = 1;
  options.jsonOutput.clear();
  const std::string one = analyze(options);
  EXPECT_EQ(one.find("rank 0 ("), std::string::npos) << one;
  EXPECT_NE(one.find("rank 1 ("), std::string::npos) << one;
}

TEST_F(AnalyzeCommandTest, MissingInputsAreErrorsNamingThem) {
  AnalyzeOptions options;
  options.paths = {path("nope.json")};
  EXPECT_THROW(
      {
        try {
          analyze(options);
        } catch (const Error& error) {
          EXPECT_EQ(std::string(error.what()),
                    "cannot read " + path("nope.json") + ": no such file or directory");
          throw;
        }
      },
      Error);
  options.paths = {dir_.path()};
  try {
    analyze(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              dir_.path() + " holds no traces (.json, .json.gz, .pftrace)");
  }
  writeRankTrace(path("rank0.json"), 0);
  options.rank = 5;
  try {
    analyze(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "no trace of rank 5 among the 1 traces read");
  }
}

TEST_F(AnalyzeCommandTest, SummaryOfATraceWithoutASummaryFileAnalysesTheTrace) {
  writeRankTrace(path("api.json"), 0);
  SummaryOptions options;
  options.paths = {path("api.json")};
  ::testing::internal::CaptureStdout();
  const int status = summaryCommand(options, stdout, stderr);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  EXPECT_NE(out.find("Findings"), std::string::npos) << out;
  EXPECT_NE(out.find("gemm"), std::string::npos) << out;
}

}  // namespace
}  // namespace kinetrace::cli

namespace kinetrace::cli {
namespace {

std::string errorOf(const AnalyzeOptions& options) {
  try {
    analyzeCommand(options, std::tmpfile(), std::tmpfile());
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

std::string contentsOf(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(AnalyzeCommandTest, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
  writeRankTrace(path("b.json"), 0);
  const std::string before = contentsOf(path("b.json"));
  AnalyzeOptions options;
  options.quiet = true;
  options.paths = {path("b.json")};
  options.jsonOutput = path("b.json");
  EXPECT_EQ(errorOf(options),
            "kinetrace analyze: the output " + path("b.json") + " is the input " + path("b.json") +
                ": writing it would destroy the trace being read; name another output");
  options.jsonOutput.clear();
  options.paths = {dir_.path()};
  options.htmlOutput = dir_.path() + "/./b.json";
  EXPECT_NE(errorOf(options).find("is the input " + path("b.json")), std::string::npos);
  EXPECT_EQ(contentsOf(path("b.json")), before);
}

TEST_F(AnalyzeCommandTest, AnOutputThatCannotBeWrittenIsSaidBeforeTheTracesAreRead) {
  // A trace that cannot be read: were it read first, its error would come first.
  std::ofstream(path("broken.json")) << "{\"traceEvents\": [ not json";
  AnalyzeOptions options;
  options.quiet = true;
  options.paths = {path("broken.json")};
  options.htmlOutput = path("no such directory/report.html");
  EXPECT_NE(errorOf(options).find("no such directory/report.html"), std::string::npos)
      << errorOf(options);
  options.htmlOutput.clear();
  options.jsonOutput = dir_.path();  // a directory
  EXPECT_NE(errorOf(options).find(dir_.path()), std::string::npos) << errorOf(options);
  EXPECT_EQ(errorOf(options).find("broken.json"), std::string::npos) << errorOf(options);
}

TEST_F(AnalyzeCommandTest, OneTraceInSeveralFormatsIsReadOnce) {
  // The format is told by content: copies of one JSON trace under each name will do.
  for (const char* name : {"t.json", "t.json.gz", "t.pftrace"}) writeRankTrace(path(name), 0);
  writeRankTrace(path("u.pftrace"), 1);
  std::vector<std::string> skipped;
  EXPECT_EQ(traceFilesIn(dir_.path(), &skipped),
            (std::vector<std::string>{path("t.json"), path("u.pftrace")}));
  EXPECT_EQ(skipped,
            (std::vector<std::string>{
                path("t.json.gz") + ": the same trace as " + path("t.json") + ", read in its place",
                path("t.pftrace") + ": the same trace as " + path("t.json") + ", read in its place",
            }));
  AnalyzeOptions options;
  options.paths = {dir_.path()};
  options.jsonOutput = path("analysis.json");
  analyze(options);
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(path("analysis.json")));
  EXPECT_EQ(json["ranks"].size(), 2u);
}

TEST_F(AnalyzeCommandTest, NegativeDurationsAreLeftOutAndCounted) {
  std::ofstream(path("neg.json")) << R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 80,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 200,
     "dur": -1000000000000, "args": {"device": 0, "stream": 7}}]})";
  AnalyzeOptions options;
  options.paths = {path("neg.json")};
  options.jsonOutput = path("analysis.json");
  std::FILE* messages = std::tmpfile();
  std::FILE* out = std::tmpfile();
  analyzeCommand(options, out, messages);
  std::rewind(messages);
  char buffer[4096] = {};
  const std::string said(buffer, std::fread(buffer, 1, sizeof buffer - 1, messages));
  std::fclose(messages);
  std::fclose(out);
  EXPECT_NE(said.find(path("neg.json") + ": left out 1 events with a negative duration (\"dur\")"),
            std::string::npos)
      << said;
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(path("analysis.json")));
  EXPECT_EQ(json["ranks"][0]["kernel_count"], 1);
  EXPECT_EQ(json["ranks"][0]["kernel_ns"], 80'000) << "the other kernel's time is not summed";
}

TEST_F(AnalyzeCommandTest, ADirectoryOfUnreadableFilesSaysWhyForEach) {
  std::ofstream(path("a.json")) << "not json";
  std::ofstream(path("b.json")) << R"({"x": 1})";
  AnalyzeOptions options;
  options.paths = {dir_.path()};
  EXPECT_EQ(errorOf(options),
            "no trace could be read among the 2 files given:\n  " + path("a.json") +
                " is not a trace: it starts with 'n' where Chrome trace JSON starts with '{' or "
                "'[' and a Perfetto trace with the byte 0x0a\n  " +
                path("b.json") + " is not a Chrome trace: it has no traceEvents array");
}

}  // namespace
}  // namespace kinetrace::cli

namespace kinetrace::cli {
namespace {

// The ranks of an analysis's --json with what names the file they came from left out.
nlohmann::json ranksOf(const std::string& jsonPath) {
  nlohmann::json ranks = nlohmann::json::parse(std::ifstream(jsonPath))["ranks"];
  for (nlohmann::json& rank : ranks) rank.erase("path");
  return ranks;
}

// A merged trace was read as one rank: both ranks' correlation ids (1 on each) joined one
// rank's launch to the other's kernel, and the two ranks' streams added up on "GPU 0".
TEST_F(AnalyzeCommandTest, AMergedTraceReadsAsItsRanksWithEachRanksOwnFigures) {
  writeRankTrace(path("rank0.json"), 0);
  writeRankTrace(path("rank1.json"), 1);
  MergeOptions merge;
  merge.paths = {path("rank0.json"), path("rank1.json")};
  merge.output = path("job.json");
  merge.quiet = true;
  ASSERT_EQ(mergeCommand(merge, std::tmpfile(), std::tmpfile()), 0);

  AnalyzeOptions separate;
  separate.paths = {path("rank0.json"), path("rank1.json")};
  separate.jsonOutput = path("separate.json");
  analyze(separate);
  AnalyzeOptions merged;
  merged.paths = {path("job.json")};
  merged.jsonOutput = path("merged.json");
  const std::string text = analyze(merged);

  const nlohmann::json expected = ranksOf(path("separate.json"));
  const nlohmann::json got = ranksOf(path("merged.json"));
  ASSERT_EQ(got.size(), 2u) << text;
  for (std::size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(got[r]["rank"], r);
    EXPECT_EQ(got[r]["kernel_count"], 2);
    EXPECT_EQ(got[r]["devices"], expected[r]["devices"]) << "rank " << r;
    EXPECT_EQ(got[r]["launch_latency"], expected[r]["launch_latency"]) << "rank " << r;
    EXPECT_EQ(got[r], expected[r]) << "rank " << r;
  }
  EXPECT_NE(text.find("rank 1 started ncclAllReduce #1"), std::string::npos) << text;

  // The same from a merged .pftrace.
  merge.output = path("job.pftrace");
  ASSERT_EQ(mergeCommand(merge, std::tmpfile(), std::tmpfile()), 0);
  merged.paths = {merge.output};
  merged.jsonOutput = path("merged_pftrace.json");
  analyze(merged);
  EXPECT_EQ(ranksOf(path("merged_pftrace.json")), expected);

  // --rank picks one rank of the merged trace.
  merged.rank = 1;
  merged.jsonOutput = path("one.json");
  analyze(merged);
  const nlohmann::json one = ranksOf(path("one.json"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], expected[1]);

  // A trace with the path laid over it is one rank's own trace: a merged one is refused,
  // the refusal naming the option that needs it.
  AnalyzeOptions marked;
  marked.paths = {path("job.json")};
  marked.criticalPath = true;
  marked.criticalPathTrace = path("marked.json");
  marked.quiet = true;
  try {
    analyze(marked);
    FAIL() << "a merged trace was marked";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("--critical-path-trace marks one rank's own trace, and " +
                        path("job.json") + " is a merged trace of 2 ranks"),
              std::string::npos)
        << error.what();
  }
}

// Two traces claiming one rank are said, naming both, as merge does; both are read (separate
// runs, or one process's windows, all say rank 0 without a launcher's RANK).
TEST_F(AnalyzeCommandTest, TwoTracesOfOneRankAreSaidNamingBothAndBothRead) {
  writeRankTrace(path("a.json"), 1);
  writeRankTrace(path("b.json"), 1);
  AnalyzeOptions options;
  options.paths = {dir_.path()};
  options.quiet = true;
  options.jsonOutput = path("analysis.json");
  const std::string said = messagesOf(options);
  EXPECT_NE(said.find("kinetrace: " + path("a.json") + " and " + path("b.json") +
                      " both say they are rank 1: read as two traces; for one job's ranks, give "
                      "one trace per rank\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(ranksOf(path("analysis.json")).size(), 2u);
}

TEST_F(AnalyzeCommandTest, FilesOfADirectoryThatAreNoTracesAreSaidAgainAfterTheReport) {
  writeRankTrace(path("rank0.json"), 0);
  std::ofstream(path("config.json")) << R"({"lr": 0.1})";
  AnalyzeOptions options;
  options.paths = {dir_.path()};
  options.quiet = true;
  const std::string said = messagesOf(options);
  const std::size_t at = said.rfind("kinetrace: the report leaves out");
  ASSERT_NE(at, std::string::npos) << said;
  const std::string end = said.substr(at);
  EXPECT_EQ(end,
            "kinetrace: the report leaves out 1 of the 2 files given, which could not be "
            "read as traces:\n  " +
                path("config.json") + " is not a Chrome trace: it has no traceEvents array\n");
}

}  // namespace
}  // namespace kinetrace::cli

namespace kinetrace::cli {
namespace {

// torch.profiler writes distributedInfo after the events; its rank counts as the header's
// does (it was read as "trace 1", so two such ranks could not be told apart).
TEST_F(AnalyzeCommandTest, ARankWrittenAfterTheEventsIsTheTracesRank) {
  std::ofstream(path("late.json")) << R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 80,
     "args": {"device": 0, "stream": 7}}],
    "distributedInfo": {"rank": 3, "world_size": 4}})";
  AnalyzeOptions options;
  options.paths = {path("late.json")};
  options.jsonOutput = path("analysis.json");
  analyze(options);
  EXPECT_EQ(ranksOf(path("analysis.json"))[0]["rank"], 3);
}

}  // namespace
}  // namespace kinetrace::cli

namespace kinetrace::cli {
namespace {

// A file that says it is merged but scatters its events over thousands of ranks' pid
// ranges would hold a collector per range: refused past what a merge writes.
TEST_F(AnalyzeCommandTest, AMergedTraceOfMoreRanksThanAMergeWritesIsRefused) {
  std::ofstream out(path("forged.json"));
  out << R"({"distributedInfo": {"rank": 0, "kinetrace_merged_ranks": 2}, "traceEvents": [)";
  for (int rank = 0; rank < 300; ++rank) {
    out << (rank ? "," : "") << R"({"ph": "X", "cat": "user_annotation", "name": "r", "pid": )"
        << rank * 10'000'000LL << R"(, "tid": 1, "ts": 0, "dur": 1})";
  }
  out << "]}";
  out.close();
  AnalyzeOptions options;
  options.paths = {path("forged.json")};
  EXPECT_EQ(errorOf(options),
            path("forged.json") +
                ": says it is a merged trace, but its processes fall in more than 200 ranks' pid "
                "ranges, which `kinetrace merge` never writes");
}

}  // namespace
}  // namespace kinetrace::cli

namespace kinetrace::cli {
namespace {

// A job's ranks read several at a time give the report read one at a time gives, byte for
// byte, with the messages of each file in the files' order.
TEST_F(AnalyzeCommandTest, RanksReadTogetherReportAsRanksReadOneAtATime) {
  for (int rank = 0; rank < 5; ++rank) {
    writeRankTrace(path("rank" + std::to_string(rank) + ".json"), rank);
  }
  std::ofstream(path("rank2b.json")) << "not json";  // said, in its place among the files
  std::filesystem::create_directory(path("out"));    // the reports: not in the directory read
  AnalyzeOptions options;
  options.paths = {dir_.path()};
  options.jobs = 1;
  options.jsonOutput = path("out/one.json");
  const std::string oneText = analyze(options);
  const std::string oneMessages = messagesOf(options);
  options.jobs = 4;
  options.jsonOutput = path("out/four.json");
  EXPECT_EQ(analyze(options), oneText);
  EXPECT_EQ(messagesOf(options), oneMessages);
  EXPECT_NE(oneMessages.find("skipped " + path("rank2b.json")), std::string::npos) << oneMessages;
  EXPECT_EQ(ranksOf(path("out/one.json")), ranksOf(path("out/four.json")));
  EXPECT_EQ(ranksOf(path("out/four.json")).size(), 5u);
}

// Files that each need most of --memory-mb (their distinct names are kept in memory) cannot
// be read side by side: each refused beside the others is read again alone, and all are
// analysed, as when read one at a time. One that does not fit even alone is an error, not a
// directory's non-trace file.
TEST_F(AnalyzeCommandTest, TracesThatFitTheBudgetOnlyAloneAreAllAnalysedWhenReadTogether) {
  const auto writeNames = [&](const std::string& name, int rank, int names) {
    std::ofstream out(path(name));
    out << R"({"distributedInfo": {"rank": )" << rank << R"(}, "traceEvents": [)";
    for (int i = 0; i < names; ++i) {
      out << (i ? "," : "") << R"({"ph": "X", "cat": "kernel", "name": "k)" << i
          << std::string(180, 'x') << R"(", "pid": 0, "tid": 7, "ts": )" << 10 + 3 * i
          << R"(, "dur": 2, "args": {"device": 0, "stream": 7}})";
    }
    out << "]}";
  };
  for (int rank = 0; rank < 3; ++rank) {
    writeNames("rank" + std::to_string(rank) + ".json", rank, 24'000);
  }
  std::filesystem::create_directory(path("out"));
  AnalyzeOptions options;
  options.paths = {dir_.path()};
  options.memoryBytes = std::size_t{16} << 20;
  options.jobs = 1;
  options.jsonOutput = path("out/one.json");
  const std::string one = analyze(options);
  options.jobs = 3;
  options.jsonOutput = path("out/three.json");
  EXPECT_EQ(analyze(options), one);
  EXPECT_EQ(ranksOf(path("out/three.json")).size(), 3u);

  writeNames("rank3.json", 3, 60'000);
  options.jsonOutput.clear();
  EXPECT_NE(
      errorOf(options).find(path("rank3.json") + ": distinct names would take more than the 16 MB"),
      std::string::npos);
}

}  // namespace
}  // namespace kinetrace::cli
