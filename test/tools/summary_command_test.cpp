// `kinetrace summary`: the summaries go to the command's `out`, what could not be read to
// its `err`, whatever the process's own stdout and stderr are.

#include "summary_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli_options.h"
#include "support/temp_dir.h"

namespace kinetrace::cli {
namespace {

// A stream the test reads back.
class Stream {
 public:
  Stream() : file_(std::tmpfile()) {}
  ~Stream() { std::fclose(file_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  std::FILE* file() const { return file_; }
  std::string text() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string text;
    char buffer[4096];
    while (std::size_t got = std::fread(buffer, 1, sizeof buffer, file_)) text.append(buffer, got);
    return text;
  }

 private:
  std::FILE* file_;
};

TEST(SummaryCommandTest, ADirectoryWithoutSummariesIsSaidOnErrAndFails) {
  testing::TempDir dir;
  SummaryOptions options;
  options.paths = {dir.path()};
  Stream out;
  Stream err;
  EXPECT_EQ(summaryCommand(options, out.file(), err.file()), 1);
  EXPECT_EQ(out.text(), "");
  EXPECT_EQ(err.text(), "kinetrace summary: no kinetrace summaries in " + dir.path() + "\n");
}

TEST(SummaryCommandTest, ATraceWithoutASummaryIsAnalysedOntoOut) {
  testing::TempDir dir;
  const std::string trace = (dir / "api.json").string();
  std::ofstream(trace) << R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 80,
     "args": {"device": 0, "stream": 7}}]})";
  SummaryOptions options;
  options.paths = {trace};
  Stream out;
  Stream err;
  EXPECT_EQ(summaryCommand(options, out.file(), err.file()), 0) << err.text();
  EXPECT_NE(out.text().find("gemm"), std::string::npos) << out.text();
}

TEST(SummaryCommandTest, AnUnreadableSummaryIsNamedOnErr) {
  testing::TempDir dir;
  const std::string summary = (dir / "x.summary.json").string();
  std::ofstream(summary) << "{}";
  SummaryOptions options;
  options.paths = {summary};
  Stream out;
  Stream err;
  EXPECT_EQ(summaryCommand(options, out.file(), err.file()), 1);
  EXPECT_EQ(out.text(), "");
  EXPECT_EQ(err.text().rfind("kinetrace summary: " + summary + ": ", 0), 0u) << err.text();
}

TEST(SummaryCommandTest, ASummaryPlantedAsALinkToDevZeroIsRefusedByName) {
  // Read, it would have filled the memory: a directory of traces from someone else.
  testing::TempDir dir;
  const std::string planted = (dir / "kinetrace-run1-node1-pid1.summary.json").string();
  ASSERT_EQ(::symlink("/dev/zero", planted.c_str()), 0);
  SummaryOptions options;
  options.paths = {dir.path()};
  options.memoryBytes = std::size_t{16} << 20;
  Stream out;
  Stream err;
  EXPECT_EQ(summaryCommand(options, out.file(), err.file()), 1);
  EXPECT_EQ(err.text(), "kinetrace summary: " + planted +
                            " is a symbolic link; only a regular file is read there\n");
}

TEST(SummaryCommandTest, TakesMemoryMbAsAnalyzeDoes) {
  EXPECT_EQ(parseCommandLine({"summary", "--memory-mb", "64", "t"}).summary.memoryBytes,
            std::size_t{64} << 20);
  EXPECT_EQ(parseCommandLine({"summary", "t"}).summary.memoryBytes, std::size_t{256} << 20);
  try {
    parseCommandLine({"summary", "--memory-mb", "8", "t"});
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "kinetrace summary: --memory-mb needs a whole number of megabytes 16..1048576, got "
              "'8'");
  }
}

}  // namespace
}  // namespace kinetrace::cli
