// `kinetrace merge`: its command line, and a merge of two rank traces into a file that reads
// back with each rank apart and the shift reported.

#include "merge_command.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "analysis/trace_reader.h"
#include "cli_options.h"
#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "support/temp_dir.h"
#include "support/usage_error.h"

namespace kinetrace::cli {
namespace {

using kinetrace::testing::usageErrorOf;

TEST(MergeOptionsTest, TakesTracesAndAnOutput) {
  Command command = parseCommandLine({"merge", "rank0.json", "rank1.json", "-o", "job.json"});
  EXPECT_EQ(command.kind, Command::Kind::Merge);
  EXPECT_EQ(command.merge.paths, (std::vector<std::string>{"rank0.json", "rank1.json"}));
  EXPECT_EQ(command.merge.output, "job.json");
  EXPECT_TRUE(command.merge.align);
  EXPECT_FALSE(parseCommandLine({"merge", "--no-align", "a", "b", "--output=j.json"}).merge.align);
  EXPECT_TRUE(parseCommandLine({"merge", "-q", "a", "b", "-o", "j"}).merge.quiet);
  EXPECT_EQ(parseCommandLine({"merge", "--help"}).helpTopic, "merge");
  EXPECT_EQ(parseCommandLine({"help", "merge"}).helpTopic, "merge");
  EXPECT_NE(helpFor("merge").find("NCCL collectives"), std::string::npos);
}

TEST(MergeOptionsTest, TakesMemoryMbAsAnalyzeDoes) {
  EXPECT_EQ(parseCommandLine({"merge", "--memory-mb", "32", "a", "b", "-o", "j"}).merge.memoryBytes,
            std::size_t{32} << 20);
  EXPECT_EQ(parseCommandLine({"merge", "a", "b", "-o", "j"}).merge.memoryBytes,
            std::size_t{256} << 20);
  EXPECT_EQ(usageErrorOf({"merge", "--memory-mb", "x", "a", "b", "-o", "j"}),
            "kinetrace merge: --memory-mb needs a whole number of megabytes 16..1048576, got 'x'");
}

TEST(MergeOptionsTest, WithoutAnOutputOrWithOneTraceItIsAUsageError) {
  EXPECT_EQ(usageErrorOf({"merge", "a.json", "b.json"}),
            "kinetrace merge: give the merged trace's path: kinetrace merge TRACE... -o OUT");
  EXPECT_EQ(usageErrorOf({"merge", "a.json", "-o", "j.json"}),
            "kinetrace merge: give two traces or more, one per rank (got 1)");
  EXPECT_NE(usageErrorOf({"merge", "--zip", "a", "b", "-o", "j"}).find("unknown option '--zip'"),
            std::string::npos);
}

// Two ranks with one all-reduce each, rank 1's clock 1.5 ms late.
std::string rankTrace(int rank, int64_t clockUs) {
  const std::string end = std::to_string(1'700'000'000'000'000 + 5'000 + clockUs);
  return R"({"distributedInfo": {"rank": )" + std::to_string(rank) +
         R"(}, "traceEvents": [{"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": )" + end +
         R"(, "dur": 40, "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}]})";
}

// rank0.json and rank1.json in `dir`, rank 1's clock 1.5 ms late; their paths.
std::pair<std::string, std::string> writeTwoRanks(const testing::TempDir& dir) {
  const std::string a = (dir / "rank0.json").string();
  const std::string b = (dir / "rank1.json").string();
  std::ofstream(a) << rankTrace(0, 0);
  std::ofstream(b) << rankTrace(1, 1'500);
  return {a, b};
}

TEST(MergeCommandTest, WritesOneTraceAndReportsEachRanksShift) {
  testing::TempDir dir;
  const auto [a, b] = writeTwoRanks(dir);
  MergeOptions options;
  options.paths = {b, a};
  options.output = (dir / "job.pftrace").string();
  std::FILE* out = std::tmpfile();
  std::FILE* messages = std::tmpfile();
  ASSERT_EQ(mergeCommand(options, out, messages), 0);
  std::rewind(out);
  char buffer[4096] = {};
  const std::string printed(buffer, std::fread(buffer, 1, sizeof buffer - 1, out));
  std::fclose(out);
  std::fclose(messages);
  EXPECT_NE(printed.find("merged 2 traces into " + options.output + ": wrote 2 of 2 events"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("rank 1 (" + b +
                         "): shifted -1.500 ms, aligned on 1 NCCL collectives, "
                         "residual skew median 0 ns, max 0 ns"),
            std::string::npos)
      << printed;

  MemorySink read;
  detail::ReadBudget budget;
  detail::readTraceFile(options.output, read, "job", budget);
  std::vector<int64_t> ends;
  for (const OwnedEvent& e : read.events()) {
    if (e.category == "kernel") ends.push_back(e.timestampNs + e.durationNs);
  }
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0], ends[1]);

  // An output that cannot be written is named before any input is read.
  options.output = (dir / "missing" / "job.json").string();
  EXPECT_THROW(mergeCommand(options, stdout, stderr), Error);
}

TEST(MergeCommandTest, ItSaysWroteNOfMAndWhatItLeftOutOnStderr) {
  testing::TempDir dir;
  const auto [a, b] = writeTwoRanks(dir);
  std::ofstream(a) << R"({"distributedInfo": {"rank": 0}, "traceEvents": [
    {"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})";
  MergeOptions options;
  options.paths = {a, b};
  options.output = (dir / "job.json").string();
  std::FILE* out = std::tmpfile();
  std::FILE* messages = std::tmpfile();
  ASSERT_EQ(mergeCommand(options, out, messages), 0);
  auto text = [](std::FILE* file) {
    std::rewind(file);
    char buffer[4096] = {};
    std::string read(buffer, std::fread(buffer, 1, sizeof buffer - 1, file));
    std::fclose(file);
    return read;
  };
  const std::string printed = text(out);
  const std::string said = text(messages);
  EXPECT_NE(printed.find("merged 2 traces into " + options.output + ": wrote 2 of 3 events"),
            std::string::npos)
      << printed;
  EXPECT_NE(said.find("kinetrace: left out 1 events of phase 'B' (the output has no place for "
                      "them)"),
            std::string::npos)
      << said;
}

TEST(MergeCommandTest, AnOutputThatIsOneOfTheInputsIsRefused) {
  testing::TempDir dir;
  const auto [a, b] = writeTwoRanks(dir);
  MergeOptions options;
  options.paths = {a, b};
  options.output = b;
  try {
    mergeCommand(options, stdout, stderr);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "kinetrace merge: the output " + b + " is the input " + b +
                  ": writing it would destroy the trace being read; name another output");
  }
  std::ifstream in(b);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), rankTrace(1, 1'500));
}

}  // namespace
}  // namespace kinetrace::cli
