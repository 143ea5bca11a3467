// What the controller tells `kinetrace run` through the run manifest: one entry per window
// saved, not saved, or empty. Host recording only, so no GPU stand-in is needed.

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "inject/controller.h"
#include "inject/run_manifest.h"
#include "kinetrace/host.h"
#include "support/test_support.h"

namespace kinetrace::inject {
namespace {

using kinetrace::testing::TempDir;

class ControllerManifestTest : public ::testing::Test {
 protected:
  ControllerOptions options(const std::string& runId = "t1") {
    ControllerOptions o;
    o.config.activities = ActivitySet::parse("host");
    o.config.output = dir_.path();
    o.config.runId = runId;
    o.naming = TraceNaming{runId, "testhost", 77, std::nullopt, std::nullopt};
    return o;
  }
  std::string tracePath() const {
    return dir_.path() + "/" +
           traceFileName(TraceNaming{"t1", "testhost", 77, std::nullopt, std::nullopt});
  }

  TempDir dir_;
};

TEST_F(ControllerManifestTest, ASavedTraceIsEnteredWithItsPath) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();
  std::vector<ManifestEntry> entries = readManifest(dir_.path(), "t1");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::Saved);
  EXPECT_EQ(entries[0].pid, 77);
  EXPECT_EQ(entries[0].window, 1);
  EXPECT_EQ(entries[0].path, tracePath());
}

TEST_F(ControllerManifestTest, AFailedSaveIsEnteredWithTheReason) {
  // A directory where the trace should go: the save fails however privileged the test is.
  ASSERT_EQ(::mkdir(tracePath().c_str(), 0777), 0);
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();
  EXPECT_TRUE(controller.savedTraces().empty());
  std::vector<ManifestEntry> entries = readManifest(dir_.path(), "t1");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::SaveFailed);
  EXPECT_EQ(entries[0].window, 1);
  EXPECT_EQ(entries[0].path, tracePath());
  EXPECT_NE(entries[0].message.find("cannot write trace to " + tracePath() + ": Is a directory"),
            std::string::npos)
      << entries[0].message;
}

TEST_F(ControllerManifestTest, AWindowThatRecordedNothingIsEnteredAsSuch) {
  Controller controller(options());
  controller.begin();
  controller.finish();
  std::vector<ManifestEntry> entries = readManifest(dir_.path(), "t1");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event, ManifestEvent::NothingRecorded);
  EXPECT_EQ(entries[0].pid, 77);
  EXPECT_EQ(entries[0].path, "");
}

TEST_F(ControllerManifestTest, WithoutARunIdNoManifestIsWritten) {
  Controller controller(options(""));
  controller.begin();
  instant("something happened");
  controller.finish();
  ASSERT_EQ(controller.savedTraces().size(), 1u);
  DIR* listing = ::opendir(dir_.path().c_str());
  ASSERT_NE(listing, nullptr);
  while (dirent* entry = ::readdir(listing)) {
    EXPECT_EQ(std::string(entry->d_name).find(".manifest"), std::string::npos) << entry->d_name;
  }
  ::closedir(listing);
}

}  // namespace
}  // namespace kinetrace::inject
