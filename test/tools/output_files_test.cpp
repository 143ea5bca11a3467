// The files `kinetrace convert` and `merge` write: interrupted (Ctrl-C, a hangup, a kill)
// they leave no temporary file beside their output and end by the signal; salvaging a
// temporary file left by an earlier kill (SIGKILL cannot be caught) reads it, never removes
// it; a file replaced keeps its mode; another user's link in /tmp is not followed.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli_options.h"
#include "convert_command.h"
#include "merge_command.h"
#include "support/temp_dir.h"
#include "support/test_support.h"

namespace kinetrace::cli {
namespace {
using kinetrace::testing::deadPid;

constexpr char kTrace[] =
    R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})";

// Convert only: merge reads each input twice, so it refuses a FIFO before opening its output
// (MergeInputTest below), and no input can hold it up midway. Both commands install the same
// cleanup (removeTemporaryFilesOnSignals), tested alone in atomic_file_test.cpp.
class InterruptedOutputTest : public ::testing::TestWithParam<int> {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The names in the directory that hold ".tmp.".
  std::vector<std::string> temporaryFiles() const {
    std::vector<std::string> found;
    for (const std::string& name : dir_.entries()) {
      if (name.find(".tmp.") != std::string::npos) found.push_back(name);
    }
    return found;
  }

  testing::TempDir dir_{"kinetrace_interrupted"};
};

// The command reads a FIFO that no byte ever reaches: it has opened its output (before
// reading, to name an unwritable one at once) and waits on its input when the signal comes.
TEST_P(InterruptedOutputTest, RemovesItsTemporaryFileAndEndsBySignal) {
  const int signal = GetParam();
  const std::string fifo = path("input.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Read and write: opening never blocks, and the FIFO never reaches its end.
  const int feed = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(feed, 0);
  const std::string output = path("out.pftrace");

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::FILE* quiet = std::fopen("/dev/null", "w");
    try {
      ConvertOptions options;
      options.input = fifo;
      options.output = output;
      convertCommand(options, quiet, quiet);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "%s\n", error.what());
      ::_exit(2);
    }
    ::_exit(3);  // the input has no end: not reached
  }

  // Bounded by polls, not by time: the temporary file appears when the output is opened.
  bool appeared = false;
  for (int poll = 0; poll < 5000 && !appeared; ++poll) {
    appeared = !temporaryFiles().empty();
    if (!appeared) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(appeared) << "the command opened its output";
  ASSERT_EQ(::kill(child, signal), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::close(feed);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), signal);
  EXPECT_EQ(temporaryFiles(), std::vector<std::string>{});
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"input.json"});
}

// "Interrupted", "Terminated", "HungUp".
std::string caseName(const ::testing::TestParamInfo<int>& param) {
  return param.param == SIGINT ? "Interrupted" : param.param == SIGTERM ? "Terminated" : "HungUp";
}

INSTANTIATE_TEST_SUITE_P(Convert, InterruptedOutputTest, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         caseName);

TEST(MergeInputTest, AFifoIsRefusedNamingItAndNoOutputIsLeft) {
  testing::TempDir dir("kinetrace_merge_fifo");
  const std::string fifo = dir.path() + "/input.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  MergeOptions options;
  options.paths = {fifo};
  options.output = dir.path() + "/merged.json";
  std::FILE* quiet = std::fopen("/dev/null", "w");
  try {
    mergeCommand(options, quiet, quiet);
    ADD_FAILURE() << "a FIFO was merged";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find(fifo), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos)
        << error.what();
  }
  std::fclose(quiet);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"input.json"});
}

// `kinetrace convert X.json.tmp.<pid>.<hex> X.json` used to remove its input before reading
// it: the cleanup of stale temporary files for X.json took it for one.
TEST(SalvageTest, ConvertingATemporaryFileLeftByAKilledSaveKeepsIt) {
  testing::TempDir dir("kinetrace_salvage");
  const std::string name = "trace.json.tmp." + std::to_string(deadPid()) + ".0badf00d";
  const std::string leftover = (dir / name).string();
  {
    std::FILE* file = std::fopen(leftover.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs(kTrace, file);
    std::fclose(file);
  }
  ConvertOptions options;
  options.input = leftover;
  options.output = (dir / "trace.json").string();
  options.quiet = true;
  EXPECT_EQ(convertCommand(options, stdout, stderr), 0);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"trace.json", name}));
  EXPECT_EQ(testing::fileContents(leftover), kTrace);
  EXPECT_NE(testing::fileContents(dir / "trace.json").find(R"("name":"a")"), std::string::npos);
}

int convertQuietly(const std::string& input, const std::string& output) {
  ConvertOptions options;
  options.input = input;
  options.output = output;
  options.quiet = true;
  return convertCommand(options, stdout, stderr);
}

void writeText(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr) << path;
  std::fputs(text.c_str(), file);
  std::fclose(file);
}

TEST(OutputFileTest, AConvertedFileReplacedKeepsItsMode) {
  testing::TempDir dir("kinetrace_mode");
  const std::string in = (dir / "in.json").string();
  const std::string out = (dir / "out.json").string();
  writeText(in, kTrace);
  writeText(out, "old");
  ASSERT_EQ(::chmod(out.c_str(), 0600), 0);
  EXPECT_EQ(convertQuietly(in, out), 0);
  struct stat info {};
  ASSERT_EQ(::stat(out.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  EXPECT_NE(testing::fileContents(out).find(R"("name":"a")"), std::string::npos);
}

// As root, `convert in.json /tmp/x.json` replaced /etc/... through another user's link.
TEST(OutputFileTest, ConvertDoesNotFollowAnotherUsersLinkInASharedDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to make a link owned by another user";
  testing::TempDir dir("kinetrace_shared");
  const std::string shared = (dir / "tmp").string();
  ASSERT_EQ(::mkdir(shared.c_str(), 01777), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);  // mkdir's mode passes through the umask
  const std::string victim = (dir / "passwd").string();
  writeText(victim, "root:x:0:0");
  const std::string in = (dir / "in.json").string();
  writeText(in, kTrace);
  const std::string link = shared + "/x.json";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  std::string error;
  try {
    convertQuietly(in, link);
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("cannot write trace to " + link + ": not following " + link +
                       ": it is a symbolic link of another user (uid 65534)"),
            std::string::npos)
      << error;
  EXPECT_EQ(testing::fileContents(victim), "root:x:0:0");
}

}  // namespace
}  // namespace kinetrace::cli
