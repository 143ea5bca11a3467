// What `kinetrace run` prints after the program: traces from the directory, what went wrong
// from the run manifest.

#include "run_report.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"
#include "support/test_support.h"

namespace kinetrace::cli {
namespace {

using kinetrace::testing::deadPid;
using runfiles::ManifestEntry;
using runfiles::ManifestEvent;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)
#define EXPECT_LACKS(text, part) \
  EXPECT_EQ(std::string(text).find(part), std::string::npos) << (text)

constexpr const char* kMadeNoCudaCall = "this program made none";

RunOptions quiet() {
  RunOptions options;
  options.printSummary = false;
  return options;
}

RunTrace traceAt(const std::string& path) {
  RunTrace trace;
  trace.path = path;
  return trace;
}

TEST(RunReportTest, WithNeitherTraceNorOutcomeTheProgramMadeNoCudaCall) {
  std::string report = runReport({}, {}, "/out", quiet());
  EXPECT_CONTAINS(report,
                  "kinetrace: no trace was written. A process is traced from its first "
                  "CUDA call (cuInit): this program made none");
  EXPECT_LACKS(report, "--delay");
  RunOptions delayed = quiet();
  delayed.settings["delay"] = "5s";
  EXPECT_CONTAINS(runReport({}, {}, "/out", delayed), "or it ended before --delay passed.");
}

TEST(RunReportTest, AFailedSaveIsReportedWithItsReasonNotAsNoCudaCall) {
  std::vector<ManifestEntry> outcomes = {
      {ManifestEvent::SaveFailed, 4242, 1, "/x/y.json",
       "kinetrace: cannot write trace to /x/y.json: No space left on device"}};
  std::string report = runReport({}, outcomes, "/x", quiet());
  EXPECT_EQ(report,
            "kinetrace: no trace was written to /x/\n"
            "kinetrace: pid 4242 could not save its trace: cannot write trace to /x/y.json: No "
            "space left on device\n");
}

TEST(RunReportTest, ALaterWindowIsNamedWhenItsSaveFails) {
  std::vector<ManifestEntry> outcomes = {
      {ManifestEvent::SaveFailed, 7, 3, "/x/t-w3.json", "cannot write trace to /x/t-w3.json: EIO"}};
  EXPECT_CONTAINS(runReport({}, outcomes, "/x", quiet()),
                  "kinetrace: pid 7 could not save the trace of its window 3: cannot write");
}

TEST(RunReportTest, FailuresFollowTheTracesThatWereSaved) {
  std::vector<RunTrace> traces = {traceAt("/x/kinetrace-r-h-pid1.json")};
  std::vector<ManifestEntry> outcomes = {
      {ManifestEvent::Saved, 1, 1, "/x/kinetrace-r-h-pid1.json", ""},
      {ManifestEvent::SaveFailed, 2, 1, "/x/kinetrace-r-h-pid2.json", "disk full"},
      {ManifestEvent::TracingOff, 3, 0, "", "kinetrace config: bad value"}};
  EXPECT_EQ(runReport(traces, outcomes, "/x", quiet()),
            "kinetrace: 1 trace in /x/\n"
            "  kinetrace-r-h-pid1.json   (no summary)\n"
            "kinetrace: pid 2 could not save its trace: disk full\n"
            "kinetrace: pid 3 was not traced: bad value\n");
}

TEST(RunReportTest, ProcessesThatRecordedNothingShareOneLine) {
  std::vector<ManifestEntry> outcomes = {{ManifestEvent::NothingRecorded, 10, 1, "", ""},
                                         {ManifestEvent::NothingRecorded, 11, 1, "", ""},
                                         {ManifestEvent::NothingRecorded, 10, 2, "", ""}};
  std::string report = runReport({}, outcomes, "/x", quiet());
  EXPECT_EQ(report,
            "kinetrace: no trace was written to /x/\n"
            "kinetrace: pids 10, 11 started CUDA but recorded no activity, so wrote no trace\n");
  EXPECT_LACKS(report, kMadeNoCudaCall);
  EXPECT_CONTAINS(runReport({}, {outcomes[0]}, "/x", quiet()), "kinetrace: pid 10 started CUDA");
}

TEST(RunReportTest, ProblemsAreSetApartFromTheLastSummary) {
  RunOptions options;  // summaries printed; this trace has none to print
  std::vector<RunTrace> traces = {traceAt("/x/kinetrace-r-h-pid1.json")};
  std::vector<ManifestEntry> outcomes = {{ManifestEvent::TracingOff, 3, 0, "", "why"}};
  EXPECT_CONTAINS(runReport(traces, outcomes, "/x", options),
                  "(no summary)\n\nkinetrace: pid 3 was not traced: why\n");
}

void touch(const std::string& path) {
  std::ofstream(path) << "{}";
}


TEST(RunReportTest, ATriggeredTraceWrittenOutsideTheDirectoryIsListedWithItsPath) {
  kinetrace::testing::TempDir dir;
  const std::string traces = dir.path() + "/traces";
  const std::string asked = dir.path() + "/asked.json";
  touch(asked);
  std::vector<ManifestEntry> outcomes = {{ManifestEvent::Saved, 5, 1, asked, ""}};
  EXPECT_EQ(runReport(tracesOfRun(traces, "r", outcomes), outcomes, traces, quiet()),
            "kinetrace: 1 trace\n  " + asked + "   (no summary)\n");
}

TEST(RunReportTest, ProcessesStillRunningAreListedNotTakenForNoCudaCall) {
  RunRemains remains;
  remains.stillRunning = {321};
  const std::string report = runReport({}, {}, "/x", quiet(), remains);
  EXPECT_EQ(report,
            "kinetrace: no trace was written to /x/\n"
            "kinetrace: pid 321 is still running (started by the program, it outlives it); its "
            "trace is written when it ends, and not reported here\n");
  EXPECT_LACKS(report, kMadeNoCudaCall);
}

TEST(RunReportTest, TheTemporaryFileOfAKilledProcessIsFoundAndNamed) {
  kinetrace::testing::TempDir dir;
  const pid_t dead = deadPid();
  const std::string trace = "kinetrace-r-h-pid" + std::to_string(dead) + ".json";
  const std::string left = dir.path() + "/" + trace + ".tmp." + std::to_string(dead) + ".00c0ffee";
  touch(left);
  // One of a live process (this one) is being written: not a leftover.
  touch(dir.path() + "/kinetrace-r-h-pid1.json.tmp." + std::to_string(::getpid()) + ".0abc");
  // Another run's, and a name that only looks like one.
  touch(dir.path() + "/kinetrace-other-h.json.tmp." + std::to_string(dead) + ".0abc");
  touch(dir.path() + "/kinetrace-r-h.json.tmp." + std::to_string(dead) + ".xyz");
  const std::vector<LeftoverFile> leftovers = leftoverFilesOfRun(dir.path(), "r");
  ASSERT_EQ(leftovers.size(), 1u);
  EXPECT_EQ(leftovers[0].pid, dead);
  EXPECT_EQ(leftovers[0].path, left);
  RunRemains remains;
  remains.leftovers = leftovers;
  EXPECT_EQ(runReport({}, {}, dir.path(), quiet(), remains),
            "kinetrace: no trace was written to " + dir.path() + "/\nkinetrace: pid " +
                std::to_string(dead) +
                " was killed while writing its trace; the part it wrote "
                "is left in " +
                left + "\n");
}

}  // namespace
}  // namespace kinetrace::cli
