// `kinetrace trigger` itself: what it sends for the caller's arguments (a relative --output
// means the caller's directory), and libkineto's keys refused when they overflow.

#include "trigger_command.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "runfiles/trigger_channel.h"
#include "support/temp_dir.h"

namespace kinetrace::cli {
namespace {

using kinetrace::testing::TempDir;
using detail::Result;

std::string workingDirectory() {
  char buffer[4096];
  return ::getcwd(buffer, sizeof buffer) != nullptr ? buffer : "";
}

TEST(TriggerCommandTest, ADurationTooLongForNanosecondsIsRefusedNotWrapped) {
  TriggerOptions options;
  int64_t startAt = 0;
  std::string ignored;
  try {
    applyLibkinetoConfig("ACTIVITIES_DURATION_SECS=18446744074\n", &options, &startAt, &ignored);
    FAIL() << "accepted; recorded " << options.durationNs << " ns";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "kinetrace trigger: --config: ACTIVITIES_DURATION_SECS=18446744074 is longer than "
              "the longest window (366 days)");
  }
  applyLibkinetoConfig("ACTIVITIES_DURATION_SECS=31622400\n", &options, &startAt, &ignored);
  EXPECT_EQ(options.durationNs, int64_t{31622400} * 1000000000) << "366 days still fit";
}

TEST(TriggerCommandTest, ARelativeOutputIsTheCallersDirectoryNotTheTargets) {
  TempDir dir;
  const std::string controlDir = dir.path() + "/control";
  ::setenv("KINETRACE_CONTROL_DIR", controlDir.c_str(), 1);
  Result<runfiles::TriggerListener> listener = runfiles::listenForTriggers("run9", 777001);
  ASSERT_TRUE(listener.ok()) << listener.why();
  const int listenFd = listener.value().fd;
  const std::string socket = listener.value().path;

  TriggerOptions options;
  options.job = "run9";
  options.durationNs = 1000;
  options.startInNs = 0;
  options.output = "relative dir/";
  std::FILE* out = std::tmpfile();
  int status = -1;
  std::thread command([&] { status = triggerCommand(options, out, stderr); });

  // Serve the one request the command sends, as a traced process would.
  runfiles::RequestReader reader(listenFd);
  std::string line;
  while (line.empty()) {
    std::vector<pollfd> waits;
    reader.addPollFds(&waits);
    ASSERT_GT(::poll(waits.data(), waits.size(), 30000), 0) << "the command sent nothing";
    for (runfiles::RequestReader::Request& request : reader.service(0)) {
      line = request.line;
      runfiles::answer(request.fd, "ok somewhere");
    }
  }
  command.join();
  std::fclose(out);
  ::close(listenFd);
  ::unsetenv("KINETRACE_CONTROL_DIR");

  EXPECT_EQ(status, 0);
  const Result<runfiles::TriggerRequest> request = runfiles::parseRequest(line);
  ASSERT_TRUE(request.ok()) << request.why();
  EXPECT_EQ(request.value().output, workingDirectory() + "/relative dir/");
}

}  // namespace
}  // namespace kinetrace::cli
