#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "kinetrace/sink.h"
#include "session/session_support.h"
#include "support/test_support.h"
#include "support/trace_json.h"

// A Profiler with an output writes the trace while it records: the file appears whole at
// stop, and a write that fails is reported by the trace, never thrown by stop().

namespace kinetrace {
namespace {

using testing::dataOf;
using testing::errorOf;
using testing::eventually;
using testing::fileContents;
using testing::findRange;
using testing::hostOnly;
using testing::TempDir;

// The temporary files a save to `name` in `dir` is writing ("<name>.tmp.<pid>.<hex>").
std::vector<std::string> temporariesOf(const TempDir& dir, const std::string& name) {
  std::vector<std::string> found;
  for (const std::string& entry : dir.entries()) {
    if (entry.rfind(name + ".tmp.", 0) == 0) found.push_back(entry);
  }
  return found;
}

uintmax_t sizeOr0(const std::filesystem::path& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : size;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

TEST(StreamingOutputTest, TheFileIsWrittenWhileRecordingAndAppearsWholeOnlyAtStop) {
  TempDir dir;
  const std::string path = (dir / "trace.json").string();
  Config config = hostOnly();
  config.output = path;
  config.memoryMb = 16;
  Profiler profiler(config);
  profiler.addMetadata("model", "before the start");
  profiler.start();
  ASSERT_EQ(temporariesOf(dir, "trace.json").size(), 1u) << "the output is open from the start";
  const std::string temporary = (dir / temporariesOf(dir, "trace.json")[0]).string();

  // More than the sink's buffer (1 MiB of JSON): the pipeline writes it to the temporary
  // file while recording continues, and the target does not exist yet.
  constexpr int kRanges = 30000;
  for (int i = 0; i < kRanges; ++i) Range range("step " + std::to_string(i));
  ASSERT_TRUE(eventually([&] { return sizeOr0(temporary) > 0; }))
      << "nothing was written while recording";
  EXPECT_FALSE(std::filesystem::exists(path)) << "a reader never sees a half-written trace";
  profiler.addMetadata("phase", "while recording");
  Trace trace = profiler.stop();

  EXPECT_TRUE(temporariesOf(dir, "trace.json").empty());
  ASSERT_TRUE(std::filesystem::exists(path));
  const std::string text = fileContents(path);
  const nlohmann::json root = nlohmann::json::parse(text);
  const int ranges = kRanges;
  int written = 0;
  std::vector<bool> seen(static_cast<std::size_t>(ranges), false);
  for (const nlohmann::json& e : root["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++written;
    const std::string name = e["name"];
    ASSERT_EQ(name.rfind("step ", 0), 0u) << name;
    seen[static_cast<std::size_t>(std::stoi(name.substr(5)))] = true;
  }
  EXPECT_EQ(written, ranges) << "every event is in the file, once";
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), ranges);

  // Header metadata before the events, what is known only at the end after them.
  const std::size_t events = text.find("\"traceEvents\"");
  ASSERT_NE(events, std::string::npos);
  EXPECT_LT(text.find("\"model\""), events);
  EXPECT_GT(text.find("\"phase\""), events);
  for (const char* key : {"kinetrace_memory_peak_bytes", "kinetrace_memory_cap_bytes",
                          "kinetrace_dropped_host_events", "kinetrace_dropped_assembled_records",
                          "kinetrace_cupti_dropped_records", "kinetrace_out_of_window_events",
                          "kinetrace_record_counts"}) {
    EXPECT_GT(text.rfind(std::string("\"") + key + "\""), events) << key << " is in the footer";
  }
  EXPECT_GT(root["kinetrace_memory_peak_bytes"].get<uint64_t>(), 0u);
  EXPECT_LE(root["kinetrace_memory_peak_bytes"].get<uint64_t>(), config.memoryCapBytes());
  EXPECT_EQ(root["kinetrace_memory_cap_bytes"].get<uint64_t>(), config.memoryCapBytes());
  EXPECT_EQ(root["kinetrace_dropped_host_events"].get<uint64_t>(), 0u);
  EXPECT_EQ(root["kinetrace_dropped_assembled_records"].get<uint64_t>(), 0u);
  EXPECT_EQ(root["kinetrace_record_counts"]["ranges"].get<int>(), ranges);
  EXPECT_EQ(root["traceName"], path);

  // The trace says where its events went instead of holding them.
  EXPECT_FALSE(trace.hasEvents());
  EXPECT_EQ(trace.outputPath(), path);
  EXPECT_EQ(trace.saveError(), "");
  EXPECT_EQ(trace.stats().hostRanges, static_cast<uint64_t>(ranges));
  EXPECT_TRUE(dataOf(trace).records.empty());
  const std::string elsewhere = (dir / "copy.json").string();
  std::string message = errorOf([&] { trace.save(elsewhere); });
  EXPECT_NE(message.find("events were written to " + path), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(elsewhere));
  MemorySink memory;
  message = errorOf([&] { trace.writeTo(memory); });
  EXPECT_NE(message.find("events were written to " + path), std::string::npos) << message;
}

TEST(StreamingOutputTest, StartWithAnUnwritableOutputThrowsNamingThePathAndRecordsNothing) {
  const std::string bad = "/nonexistent-kinetrace-dir/trace.json";
  Profiler profiler(hostOnly());
  std::string message = errorOf([&] { profiler.start(bad); });
  EXPECT_NE(message.find(bad), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  EXPECT_FALSE(profiler.recording());
  EXPECT_FALSE(kinetrace::recording()) << "no host event is recorded after a failed start";
  { Range ignored("after the failed start"); }
  EXPECT_NE(errorOf([&] { profiler.stop(); }).find("without start()"), std::string::npos);

  TempDir dir;
  const std::string good = (dir / "trace.json").string();
  profiler.start(good);  // the process's recording slot was given back
  { Range kept("kept"); }
  Trace trace = profiler.stop();
  EXPECT_EQ(trace.outputPath(), good);
  EXPECT_EQ(trace.stats().hostRanges, 1u);
  const nlohmann::json root = nlohmann::json::parse(fileContents(good));
  ASSERT_EQ(testing::eventsWith(root, "X").size(), 1u);
  EXPECT_EQ(testing::eventsWith(root, "X")[0]["name"], "kept");
}

TEST(StreamingOutputTest, StartWithAnUnknownSchemeThrowsNamingIt) {
  Profiler profiler(hostOnly());
  std::string message = errorOf([&] { profiler.start("nosuchscheme://x"); });
  EXPECT_NE(message.find("\"nosuchscheme\""), std::string::npos) << message;
  EXPECT_FALSE(profiler.recording());
}

// A sink that fails, as a full disk would, at the write after `writesBeforeFailing`.
struct FailingSinkState {
  std::atomic<int> writes{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> calledAfterFailing{false};
  int writesBeforeFailing = 0;
};

class FailingSink final : public Sink {
 public:
  explicit FailingSink(std::shared_ptr<FailingSinkState> state) : state_(std::move(state)) {}
  void begin(const TraceHeader&) override {}
  void write(const Event& event) override {
    if (state_->failed) state_->calledAfterFailing = true;
    // The tracks' names (Sink::describe's default) come as events too: only records count.
    if (event.phase == Phase::Metadata) return;
    if (state_->writes.load() == state_->writesBeforeFailing) {
      state_->failed = true;
      throw Error("test sink: no space left on the device");
    }
    ++state_->writes;
  }
  void end(const Metadata&) override {
    if (state_->failed) state_->calledAfterFailing = true;
  }

 private:
  std::shared_ptr<FailingSinkState> state_;
};

TEST(StreamingOutputTest, AFailedWriteNeverMakesStopThrowAndTheTraceKeepsWhatFollowed) {
  auto state = std::make_shared<FailingSinkState>();
  state->writesBeforeFailing = 3;
  registerSink("failing-session-test",
               [state](const std::string&) { return std::make_unique<FailingSink>(state); });
  Profiler profiler(hostOnly());
  testing::StderrCapture log;
  profiler.start("failing-session-test://trace");
  for (int i = 0; i < 3; ++i) Range range("written " + std::to_string(i));
  // The three ranges go out on the pipeline's next cycle; the next event makes it fail.
  ASSERT_TRUE(eventually([&] { return state->writes.load() == 3; }));
  { Range range("refused"); }
  ASSERT_TRUE(eventually([&] { return state->failed.load(); }));
  constexpr int kAfter = 500;
  for (int i = 0; i < kAfter; ++i) Range range("after " + std::to_string(i));

  Trace trace;
  EXPECT_EQ(errorOf([&] { trace = profiler.stop(); }), "") << "stop() does not throw";
  const std::string said = log.text();

  EXPECT_NE(trace.saveError().find("test sink: no space left on the device"), std::string::npos)
      << trace.saveError();
  EXPECT_NE(trace.saveError().find("3 events written before were lost"), std::string::npos)
      << trace.saveError();
  EXPECT_FALSE(state->calledAfterFailing) << "a sink that threw is not called again";
  ASSERT_TRUE(trace.hasEvents()) << "what could not be written is held";
  const auto& data = dataOf(trace);
  EXPECT_NE(findRange(data, "refused"), nullptr) << "the batch that failed is kept whole";
  for (int i = 0; i < kAfter; ++i) {
    ASSERT_NE(findRange(data, "after " + std::to_string(i)), nullptr) << i;
  }
  EXPECT_EQ(findRange(data, "written 0"), nullptr) << "written to the sink, not kept";
  // The held events can be saved elsewhere.
  MemorySink memory;
  trace.writeTo(memory);
  EXPECT_EQ(std::count_if(memory.events().begin(), memory.events().end(),
                          [](const OwnedEvent& e) { return e.phase == Phase::Complete; }),
            kAfter + 1);
  EXPECT_EQ(occurrences(said, "no space left on the device"), 1u) << "said once:\n" << said;
  EXPECT_NE(said.find("failing-session-test://trace"), std::string::npos) << said;
}

// A file that may not grow (RLIMIT_FSIZE, as a full disk or a quota does): the write fails
// while recording, stop() still returns, and the trace holds what followed. In a child, so
// the limit binds nothing else.
TEST(StreamingOutputTest, AFileThatCannotGrowIsReportedByTheTraceNotThrown) {
  TempDir dir;
  const std::string path = (dir / "trace.json").string();
  const std::string report = (dir / "report.txt").string();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(60);  // a hang fails the child by SIGALRM
    std::string problem;
    {
      const std::string log = (dir / "stderr.txt").string();
      std::FILE* redirected = std::freopen(log.c_str(), "w", stderr);
      ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of death
      const rlimit limit{64 << 10, 64 << 10};
      ::setrlimit(RLIMIT_FSIZE, &limit);
      Profiler profiler(hostOnly());
      profiler.start(path);
      // The sink's buffer reaches the file once it fills (1 MiB); the failed file is removed
      // with the sink.
      constexpr int ranges = 30000;  // about 3 MiB of JSON
      for (int i = 0; i < ranges; ++i) Range range("before " + std::to_string(i));
      const bool failed = eventually([&] { return temporariesOf(dir, "trace.json").empty(); });
      for (int i = 0; i < 100; ++i) Range range("after");
      Trace trace;
      const std::string thrown = errorOf([&] { trace = profiler.stop(); });
      std::fflush(stderr);
      const std::string said = redirected != nullptr ? fileContents(log) : "";
      auto expect = [&problem](bool ok, const std::string& what) {
        if (!ok && problem.empty()) problem = what;
      };
      expect(failed, "the write never failed");
      expect(thrown.empty(), "stop() threw: " + thrown);
      expect(trace.saveError().find("cannot write trace to " + path + ": File too large") !=
                 std::string::npos,
             "saveError: " + trace.saveError());
      expect(trace.hasEvents(), "the trace holds no events");
      const auto& data = dataOf(trace);
      expect(data.records.ranges.size() >= 100 &&
                 data.records.ranges.size() <= static_cast<std::size_t>(ranges) + 100,
             "held " + std::to_string(data.records.ranges.size()) + " of " +
                 std::to_string(ranges + 100));
      expect(std::count_if(data.records.ranges.begin(), data.records.ranges.end(),
                           [&](const detail::RangeRecord& r) {
                             return testing::nameOf(data, r.name) == "after";
                           }) == 100,
             "the ranges after the failure are not all held");
      expect(!std::filesystem::exists(path), "a failed trace left a file at the path");
      expect(occurrences(said, "File too large") == 1, "logged other than once:\n" + said);
    }
    testing::writeFile(report, problem.empty() ? "ok" : problem);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(fileContents(report), "ok");
}

}  // namespace
}  // namespace kinetrace
