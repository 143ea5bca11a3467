// What the controller tells `kinetrace run` through the run manifest: one entry per window
// saved, not saved (and why), or empty, and tracing that could not start. Host recording
// only, so no GPU stand-in is needed.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "inject/controller.h"
#include "kinetrace/host.h"
#include "runfiles/run_manifest.h"
#include "support/temp_dir.h"

namespace kinetrace::inject {
namespace {

using runfiles::createManifest;
using runfiles::ManifestEntry;
using runfiles::ManifestEvent;
using runfiles::manifestPath;
using runfiles::readManifest;
using runfiles::traceFileName;
using runfiles::TraceNaming;

using kinetrace::testing::TempDir;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

class ControllerManifestTest : public ::testing::Test {
 protected:
  // `kinetrace run` makes the manifest before it starts the program.
  void SetUp() override { ASSERT_TRUE(createManifest(dir_.path(), "t1")); }
  ControllerOptions options(const std::string& runId = "t1") {
    ControllerOptions o;
    o.config.activities = ActivitySet::parse("host");
    o.config.output = dir_.path();
    o.config.runId = runId;
    o.naming = TraceNaming{runId, "testhost", 77, std::nullopt, std::nullopt};
    return o;
  }
  static std::string traceName(int window = 1) {
    return traceFileName(TraceNaming{"t1", "testhost", 77, std::nullopt, std::nullopt}, window);
  }
  std::string tracePath(int window = 1) const { return dir_.path() + "/" + traceName(window); }
  std::vector<ManifestEntry> manifest() const { return readManifest(dir_.path(), "t1"); }

  TempDir dir_;
};

TEST_F(ControllerManifestTest, ASavedTraceIsEnteredWithItsPath) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();
  std::vector<ManifestEntry> entries = manifest();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::Saved);
  EXPECT_EQ(entries[0].pid, 77);
  EXPECT_EQ(entries[0].window, 1);
  EXPECT_EQ(entries[0].path, tracePath());
  EXPECT_EQ(entries[0].message, "");
}

// The trace is written while recording; something taking its name before the stop (here a
// directory, which fails however privileged the test is) makes the final rename fail.
TEST_F(ControllerManifestTest, ATraceThatCouldNotBeCompletedIsEnteredAsSaveFailedWithTheReason) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  ASSERT_EQ(::mkdir(tracePath().c_str(), 0777), 0);
  controller.finish();

  EXPECT_TRUE(controller.savedTraces().empty());
  std::vector<ManifestEntry> entries = manifest();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::SaveFailed);
  EXPECT_EQ(entries[0].pid, 77);
  EXPECT_EQ(entries[0].window, 1);
  EXPECT_EQ(entries[0].path, tracePath());
  EXPECT_CONTAINS(entries[0].message, "cannot write trace to " + tracePath() +
                                          ": it is a directory, not a regular file");
  EXPECT_EQ(entries[0].message.rfind("kinetrace: ", 0), std::string::npos)
      << "the command adds the one prefix: " << entries[0].message;
  EXPECT_EQ(dir_.entries(), (std::vector<std::string>{traceName(), "kinetrace-t1.manifest"}))
      << "the directory made above and the manifest: no summary, no temporary file left";
}

TEST_F(ControllerManifestTest, AFailedSaveLeavesTheProcessRecordingItsLaterWindows) {
  ControllerOptions o = options();
  o.config.captureRange = CaptureRange::CudaProfilerApi;
  Controller controller(o);
  controller.begin();
  controller.onProfilerApi(true);
  instant("window 1");
  ASSERT_EQ(::mkdir(tracePath(1).c_str(), 0777), 0);
  controller.onProfilerApi(false);
  controller.onProfilerApi(true);
  EXPECT_TRUE(controller.recording()) << "the next cudaProfilerStart() still records";
  instant("window 2");
  controller.onProfilerApi(false);
  controller.finish();

  EXPECT_EQ(controller.savedTraces(), std::vector<std::string>{tracePath(2)});
  std::vector<ManifestEntry> entries = manifest();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].event, ManifestEvent::SaveFailed);
  EXPECT_EQ(entries[0].window, 1);
  EXPECT_CONTAINS(entries[0].message, "cannot write trace to " + tracePath(1));
  EXPECT_EQ(entries[1].event, ManifestEvent::Saved);
  EXPECT_EQ(entries[1].window, 2);
  EXPECT_EQ(entries[1].path, tracePath(2));
}

// The trace's file is opened when recording starts: a name that cannot be written then
// (here a FIFO, which no save may replace) means the process records nothing, and says why.
TEST_F(ControllerManifestTest, AnOutputThatCannotBeOpenedTurnsTracingOffWithTheReason) {
  ASSERT_EQ(::mkfifo(tracePath().c_str(), 0666), 0);
  Controller controller(options());
  controller.begin();
  EXPECT_FALSE(controller.recording());
  instant("something happened");
  controller.finish();

  EXPECT_TRUE(controller.savedTraces().empty());
  std::vector<ManifestEntry> entries = manifest();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::TracingOff);
  EXPECT_EQ(entries[0].window, 1);
  EXPECT_EQ(entries[0].message, "recording could not start: cannot write trace to " + tracePath() +
                                    ": it is a FIFO, not a regular file");
}

TEST_F(ControllerManifestTest, AWindowThatRecordedNothingIsEnteredAsSuch) {
  Controller controller(options());
  controller.begin();
  controller.finish();
  std::vector<ManifestEntry> entries = manifest();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::NothingRecorded);
  EXPECT_EQ(entries[0].pid, 77);
  EXPECT_EQ(entries[0].window, 1);
  EXPECT_EQ(entries[0].path, "");
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"kinetrace-t1.manifest"});
}

// The report then says what is wrong with the directory, not that the program made no CUDA
// call.
TEST_F(ControllerManifestTest, OnDemandWithoutAUsableControlDirectoryIsEnteredSayingWhy) {
  const std::string control = dir_.path() + "/control";
  ASSERT_EQ(::mkdir(control.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(control.c_str(), 0755), 0);
  ::setenv("KINETRACE_CONTROL_DIR", control.c_str(), 1);
  ControllerOptions o = options();
  o.config.captureRange = CaptureRange::OnDemand;
  Controller controller(o);
  controller.begin();
  controller.finish();
  ::unsetenv("KINETRACE_CONTROL_DIR");
  std::vector<ManifestEntry> entries = manifest();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::TracingOff);
  EXPECT_EQ(entries[0].message,
            "on demand, but kinetrace trigger cannot reach it: the control "
            "directory " +
                control +
                " is open to other users (mode 0755, "
                "not 0700); triggers are off (remove it, or set "
                "KINETRACE_CONTROL_DIR to a directory of your own)");
}

TEST_F(ControllerManifestTest, WithoutARunIdNoManifestIsWritten) {
  ASSERT_EQ(::unlink(manifestPath(dir_.path(), "t1").c_str()), 0);
  Controller controller(options(""));
  controller.begin();
  instant("something happened");
  controller.finish();
  ASSERT_EQ(controller.savedTraces().size(), 1u);
  for (const std::string& name : dir_.entries()) {
    EXPECT_EQ(name.find(".manifest"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace kinetrace::inject
