// `kinetrace summary`: the summaries go to the command's `out`, what could not be read to
// its `err`, whatever the process's own stdout and stderr are.

#include "summary_command.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kinetrace::cli
