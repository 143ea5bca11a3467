// The run manifest: lines appended by the traced processes, read back by the command.

#include "runfiles/run_manifest.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.h"

namespace kinetrace::runfiles {
namespace {

using kinetrace::testing::TempDir;

std::string readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

void appendRaw(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::app) << text;
}

// Entries as text, so a mismatch shows which field differs.
std::vector<std::string> shown(const std::vector<ManifestEntry>& entries) {
  std::vector<std::string> out;
  for (const ManifestEntry& e : entries) {
    out.push_back(std::to_string(static_cast<int>(e.event)) + " pid " + std::to_string(e.pid) +
                  " window " + std::to_string(e.window) + " path [" + e.path + "] message [" +
                  e.message + "]");
  }
  return out;
}

TEST(RunManifestTest, IsNamedAfterTheRunInTheTraceDirectory) {
  EXPECT_EQ(manifestPath("/out", "20250301-141503-77"),
            "/out/kinetrace-20250301-141503-77.manifest");
}

TEST(RunManifestTest, EveryKindOfEntryIsReadBackAsWritten) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  const std::vector<ManifestEntry> written = {
      {ManifestEvent::Saved, 4242, 1, "/out/kinetrace-r-h-pid4242.json", ""},
      {ManifestEvent::SaveFailed, 4243, 2, "/out/kinetrace-r-h-pid4243-w2.json",
       "cannot write trace to /out/kinetrace-r-h-pid4243-w2.json: No space left on device"},
      {ManifestEvent::NothingRecorded, 4244, 1, "", ""},
      {ManifestEvent::TracingOff, 4245, 0, "", "CUPTI could not be loaded"},
  };
  for (const ManifestEntry& entry : written) ASSERT_TRUE(appendManifest(dir.path(), "r", entry));
  EXPECT_EQ(shown(readManifest(dir.path(), "r")), shown(written));
}

TEST(RunManifestTest, TabsNewlinesAndBackslashesInFieldsSurvive) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  ManifestEntry entry{ManifestEvent::SaveFailed, 1, 1, "/odd\tdir\\/t.json",
                      "line one\nline two\r\n\tindented \\n not an escape"};
  ASSERT_TRUE(appendManifest(dir.path(), "r", entry));
  EXPECT_EQ(shown(readManifest(dir.path(), "r")), shown({entry}));
  const std::string text = readFile(manifestPath(dir.path(), "r"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << "one line: " << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\t'), 4) << "five fields: " << text;
}

TEST(RunManifestTest, NoFileMeansNoEntries) {
  TempDir dir;
  EXPECT_TRUE(readManifest(dir.path(), "never-written").empty());
}

TEST(RunManifestTest, TornUnknownAndMalformedLinesAreSkipped) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  const std::string path = manifestPath(dir.path(), "r");
  ASSERT_TRUE(appendManifest(dir.path(), "r", {ManifestEvent::Saved, 1, 1, "/a.json", ""}));
  appendRaw(path, "exploded\t2\t1\t\t\n");             // an event this reader does not know
  appendRaw(path, "saved\t3\t1\t/b.json\n");           // a field missing
  appendRaw(path, "saved\t4\t1\t/c.json\t\textra\n");  // a field too many
  appendRaw(path, "saved\tpid\t1\t/d.json\t\n");       // not a number
  appendRaw(path, "save-failed\t6\t1\t/e.json\tbad \\q escape\n");
  ASSERT_TRUE(appendManifest(dir.path(), "r", {ManifestEvent::Saved, 7, 1, "/f.json", ""}));
  appendRaw(path, "saved\t8\t1\t/g.js");  // the writer was killed mid-line
  std::vector<ManifestEntry> entries = readManifest(dir.path(), "r");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].pid, 1);
  EXPECT_EQ(entries[1].pid, 7);
}

TEST(RunManifestTest, ALongMessageIsCutSoTheLineStaysUnderPipeBuf) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  const std::string path = "/out/kinetrace-r-h-pid9.json";
  ManifestEntry entry{ManifestEvent::SaveFailed, 9, 1, path, std::string(10000, 'x') + "\tend"};
  ASSERT_TRUE(appendManifest(dir.path(), "r", entry));
  const std::string text = readFile(manifestPath(dir.path(), "r"));
  EXPECT_LE(text.size(), static_cast<std::size_t>(PIPE_BUF));
  std::vector<ManifestEntry> entries = readManifest(dir.path(), "r");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].path, path) << "the path is kept whole";
  EXPECT_EQ(entries[0].message.substr(0, 100), std::string(100, 'x'));
  EXPECT_EQ(entries[0].message.substr(entries[0].message.size() - 4), "x...")
      << "the cut is marked";
}

TEST(RunManifestTest, ACutNeverSplitsAnEscapeOrAUtf8Character) {
  TempDir dir;
  // Every possible cut position of a message of two-byte escapes and two- and three-byte
  // characters: each line must still read back, ending in whole characters.
  for (std::size_t pad = 0; pad < 8; ++pad) {
    const std::string runId = "r" + std::to_string(pad);
    std::string message(pad, 'p');
    for (int i = 0; i < 3000; ++i) message += i % 3 == 0 ? "\t" : i % 3 == 1 ? "é" : "€";
    ASSERT_TRUE(createManifest(dir.path(), runId));
    ASSERT_TRUE(appendManifest(dir.path(), runId, {ManifestEvent::TracingOff, 1, 0, "", message}));
    std::vector<ManifestEntry> entries = readManifest(dir.path(), runId);
    ASSERT_EQ(entries.size(), 1u) << "pad " << pad;
    const std::string& cut = entries[0].message;
    ASSERT_GE(cut.size(), 3u);
    EXPECT_EQ(cut.substr(cut.size() - 3), "...");
    EXPECT_EQ(message.compare(0, cut.size() - 3, cut, 0, cut.size() - 3), 0)
        << "a prefix of the message, cut between characters";
    const unsigned char last = static_cast<unsigned char>(cut[cut.size() - 4]);
    EXPECT_TRUE(last == '\t' || last == 0xA9 || last == 0xAC || last == 'p')
        << "ends with a whole character (é ends 0xA9, € ends 0xAC)";
  }
}

TEST(RunManifestTest, AnOverlongPathIsCutWhenNothingElseLeavesRoom) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  ManifestEntry entry{ManifestEvent::Saved, 1, 1, "/" + std::string(5000, 'd'), "why"};
  ASSERT_TRUE(appendManifest(dir.path(), "r", entry));
  EXPECT_LE(readFile(manifestPath(dir.path(), "r")).size(), static_cast<std::size_t>(PIPE_BUF));
  std::vector<ManifestEntry> entries = readManifest(dir.path(), "r");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].path.substr(entries[0].path.size() - 3), "...");
  EXPECT_EQ(entries[0].message, "") << "the message gives way first";
}

TEST(RunManifestTest, AFailedAppendReturnsFalseAndThrowsNothing) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  ManifestEntry entry{ManifestEvent::Saved, 1, 1, "/a.json", ""};
  EXPECT_FALSE(appendManifest(dir.path() + "/no/such/dir", "r", entry));
  EXPECT_FALSE(appendManifest(dir.path(), "", entry)) << "no run id: no manifest";
  EXPECT_FALSE(appendManifest(dir.path(), "../escape", entry)) << "a run id is a name part";
  EXPECT_FALSE(appendManifest("", "r", entry));
}

// A process that outlives its run's command (which read and removed the manifest) writes
// nothing: no manifest is left behind in the trace directory.
TEST(RunManifestTest, AnAppendAfterTheManifestWasRemovedLeavesNothing) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  ASSERT_TRUE(appendManifest(dir.path(), "r", {ManifestEvent::Saved, 1, 1, "/a.json", ""}));
  ASSERT_EQ(::unlink(manifestPath(dir.path(), "r").c_str()), 0);
  EXPECT_FALSE(appendManifest(dir.path(), "r", {ManifestEvent::Saved, 2, 1, "/b.json", ""}));
  EXPECT_TRUE(dir.entries().empty());
}

// Long lines (about 3 KB, most of PIPE_BUF) from many writers at once: every line whole.
TEST(RunManifestTest, ConcurrentAppendsFromProcessesAndThreadsGiveWholeLines) {
  TempDir dir;
  ASSERT_TRUE(createManifest(dir.path(), "r"));
  constexpr int kProcesses = 4, kThreads = 4, kLinesEach = 50;
  auto message = [](int64_t pid, int thread, int line) {
    return std::to_string(pid) + "/" + std::to_string(thread) + "/" + std::to_string(line) + ":" +
           std::string(3000, static_cast<char>('a' + thread));
  };
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t child = ::fork();
    if (child == 0) {
      bool ok = true;
      std::vector<std::thread> threads;
      std::vector<char> results(kThreads, 1);
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          for (int line = 0; line < kLinesEach; ++line) {
            ManifestEntry entry{ManifestEvent::SaveFailed, ::getpid(), t, "/t.json",
                                message(::getpid(), t, line)};
            if (!appendManifest(dir.path(), "r", entry)) results[t] = 0;
          }
        });
      }
      for (std::thread& thread : threads) thread.join();
      for (char result : results) ok = ok && result;
      ::_exit(ok ? 0 : 1);
    }
    ASSERT_GT(child, 0);
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "an append failed";
  }
  std::vector<ManifestEntry> entries = readManifest(dir.path(), "r");
  EXPECT_EQ(entries.size(), static_cast<std::size_t>(kProcesses * kThreads * kLinesEach));
  for (const ManifestEntry& entry : entries) {
    const std::string prefix = std::to_string(entry.pid) + "/" + std::to_string(entry.window) + "/";
    ASSERT_EQ(entry.message.rfind(prefix, 0), 0u) << "a line of another writer inside this one";
    EXPECT_EQ(entry.message.substr(entry.message.size() - 3000),
              std::string(3000, static_cast<char>('a' + entry.window)));
  }
}

}  // namespace
}  // namespace kinetrace::runfiles
