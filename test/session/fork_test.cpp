#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "session/core.h"
#include "session/session_support.h"
#include "support/test_support.h"
#include "support/trace_json.h"

// fork() while a session records: the child starts with no session (the parent's pipeline
// thread did not come along); the Profiler it inherited says it is the parent's; a Profiler
// of its own records the child alone; the parent's trace is untouched.

namespace kinetrace {
namespace {

using testing::dataOf;
using testing::errorOf;
using testing::fileContents;
using testing::hostOnly;
using testing::nameOf;
using testing::TempDir;

// Runs `body` in a child that reports through a file: "" from body means success. A child
// that hangs is ended by SIGALRM; one that dies says so. Where the child may not allocate
// (see kForkedChildMayAllocate), it checks only that it records nothing, and says so by its
// exit status.
std::string inChild(const TempDir& dir, const std::string& name,
                    const std::function<std::string()>& body) {
  const std::string report = (dir / (name + ".report")).string();
  const pid_t pid = ::fork();
  if (pid < 0) return "fork() failed";
  if (pid == 0) {
    ::alarm(30);
    if (!testing::kForkedChildMayAllocate) ::_exit(kinetrace::recording() ? 3 : 0);
    std::string problem;
    try {
      problem = body();
    } catch (const std::exception& error) {
      problem = std::string("threw: ") + error.what();
    }
    testing::writeFile(report, problem.empty() ? "ok" : problem);
    ::_exit(0);  // no atexit handlers or static destructors of the parent's objects
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return "waitpid() failed";
  if (WIFSIGNALED(status)) {
    return "the child died of signal " + std::to_string(WTERMSIG(status)) +
           (WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
  }
  if (WEXITSTATUS(status) == 3) return "the child records the parent's session";
  if (WEXITSTATUS(status) != 0) {
    return "the child exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (!testing::kForkedChildMayAllocate) return "";
  const std::string said = fileContents(report);
  if (said.empty()) return "the child wrote no report";
  return said == "ok" ? "" : said;
}

TEST(ForkTest, AChildForkedWhileRecordingHasNoSessionAndRecordsOnlyItsOwnEvents) {
  TempDir dir;
  const pid_t parentPid = ::getpid();
  Profiler profiler(hostOnly());
  profiler.start();
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &done] {
      const std::string name = "parent " + std::to_string(t);
      while (!done.load(std::memory_order_relaxed)) {
        Range range(name);
        instant(name);
      }
    });
  }
  constexpr int kChildren = 8;
  for (int child = 0; child < kChildren; ++child) {
    const std::string name = "child-" + std::to_string(child);
    const std::string problem = inChild(dir, name, [&]() -> std::string {
      if (kinetrace::recording()) return "the child records the parent's session";
      const std::string stopped = errorOf([&] { profiler.stop(); });
      const std::string started = errorOf([&] { profiler.start(); });
      const std::string owner = "created by process " + std::to_string(parentPid);
      for (const std::string& message : {stopped, started}) {
        if (message.find(owner) == std::string::npos ||
            message.find("fork()") == std::string::npos) {
          return "the inherited Profiler did not say it is the parent's: \"" + message + "\"";
        }
      }
      if (profiler.recording()) return "the inherited Profiler says it records";
      if (!testing::kForkedChildMayStartThreads) return "";  // recording starts a thread

      Profiler own(hostOnly());
      own.start();
      {
        Range range("child range");
        std::thread([] { Range inThread("child thread range"); }).join();
      }
      Trace trace = own.stop();
      const std::string path = (dir / (name + ".json")).string();
      trace.save(path);
      const auto& data = dataOf(trace);
      if (data.records.ranges.size() != 2) {
        return "the child's trace has " + std::to_string(data.records.ranges.size()) +
               " ranges, not 2";
      }
      for (const auto& range : data.records.ranges) {
        if (nameOf(data, range.name).rfind("child", 0) != 0) {
          return "the child's trace holds \"" + nameOf(data, range.name) + "\"";
        }
      }
      if (!data.records.instants.empty()) return "the child's trace holds the parent's instants";
      if (fileContents(path).find("parent") != std::string::npos)
        return "the saved file names the parent's events";
      return "";
    });
    EXPECT_EQ(problem, "") << name;
  }
  done = true;
  for (auto& thread : threads) thread.join();
  Trace trace = profiler.stop();

  const auto& data = dataOf(trace);
  EXPECT_GT(data.records.ranges.size(), 0u) << "the parent kept recording";
  EXPECT_GT(data.records.instants.size(), 0u);
  for (const auto& range : data.records.ranges) {
    ASSERT_EQ(nameOf(data, range.name).rfind("parent ", 0), 0u) << nameOf(data, range.name);
  }
  EXPECT_EQ(trace.stats().unfinishedRanges, 0u);
}

TEST(ForkTest, AChildForkedWhileStreamingLeavesTheParentsFileAlone) {
  TempDir dir;
  const std::string path = (dir / "parent.json").string();
  Profiler profiler(hostOnly());
  profiler.start(path);
  for (int i = 0; i < 100; ++i) Range range("parent");
  const std::string problem = inChild(dir, "child", [&]() -> std::string {
    // Nothing the child does may complete or damage the parent's output.
    const std::string stopped = errorOf([&] { profiler.stop(); });
    if (stopped.empty()) return "the inherited Profiler stopped";
    if (!testing::kForkedChildMayStartThreads) return "";  // recording starts a thread
    Profiler own(hostOnly());
    own.start((dir / "child.json").string());
    Range range("child");
    own.stop();
    return "";
  });
  EXPECT_EQ(problem, "");
  EXPECT_FALSE(std::filesystem::exists(path)) << "the parent's trace is still being written";
  Trace trace = profiler.stop();
  EXPECT_EQ(trace.saveError(), "");
  const std::string text = fileContents(path);
  EXPECT_EQ(testing::eventsWith(nlohmann::json::parse(text), "X").size(), 100u);
  EXPECT_EQ(text.find("\"child\""), std::string::npos);
  if (testing::kForkedChildMayStartThreads && testing::kForkedChildMayAllocate) {
    EXPECT_NE(fileContents(dir / "child.json").find("\"child\""), std::string::npos);
  }
}

// What the parent's recording holds is counted in the process's memory budget; the child
// holds none of it (its chunks are back in the pool, its pipeline did not come along), so
// a recording in the child has the whole cap.
TEST(ForkTest, AChildDoesNotInheritWhatTheParentsRecordingHeldAgainstTheCap) {
  using namespace kinetrace::literals;
  TempDir dir;
  Config parentConfig = hostOnly();
  parentConfig.memoryMb = 8;
  Profiler profiler(parentConfig);
  profiler.start();
  // Held in memory by the parent's trace: well past the child's whole cap.
  detail::MemoryBudget& budget = detail::Core::instance().budget();
  ASSERT_TRUE(testing::eventually([&] {
    for (int i = 0; i < 10000; ++i) instant("parent"_kt);
    return budget.used() > (3u << 20);
  }));
  const std::string problem = inChild(dir, "child", [&]() -> std::string {
    if (!testing::kForkedChildMayStartThreads) return "";  // recording starts a thread
    Config childConfig = hostOnly();
    childConfig.memoryMb = 2;
    Profiler own(childConfig);
    own.start();
    for (int i = 0; i < 100; ++i) Range range("child"_kt);
    Trace trace = own.stop();
    const TraceStats stats = trace.stats();
    if (stats.hostRanges != 100 || stats.droppedHostEvents + stats.droppedAssembledRecords != 0) {
      return "the child kept " + std::to_string(stats.hostRanges) + " of 100 ranges and dropped " +
             std::to_string(stats.droppedHostEvents) + " events and " +
             std::to_string(stats.droppedAssembledRecords) + " records";
    }
    if (stats.peakMemoryBytes > stats.memoryCapBytes) return "the child's peak is over its cap";
    return "";
  });
  EXPECT_EQ(problem, "");
  Trace trace = profiler.stop();
  EXPECT_GT(trace.stats().hostInstants, 0u);
}

}  // namespace
}  // namespace kinetrace
