#include "runfiles/trace_naming.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "model/trace_file_name.h"
#include "support/test_support.h"

namespace kinetrace::runfiles {
namespace {

using kinetrace::testing::ScopedEnv;

TEST(TraceNamingTest, PlainProcessIsNamedByRunHostAndPid) {
  TraceNaming naming{"20250301-141503-77", "node7", 4242, std::nullopt, std::nullopt};
  EXPECT_EQ(traceFileName(naming), "kinetrace-20250301-141503-77-node7-pid4242.json");
}

TEST(TraceNamingTest, RanksComeFirstSoTheyDoNotCollide) {
  TraceNaming rank0{"run", "node7", 100, "0", "0"};
  TraceNaming rank1{"run", "node7", 101, "1", "1"};
  EXPECT_EQ(traceFileName(rank0), "kinetrace-run-rank0-local0-node7-pid100.json");
  EXPECT_EQ(traceFileName(rank1), "kinetrace-run-rank1-local1-node7-pid101.json");
  EXPECT_NE(traceFileName(rank0), traceFileName(rank1));
}

TEST(TraceNamingTest, LaterWindowsOfOneProcessAreNumbered) {
  TraceNaming naming{"run", "h", 9, std::nullopt, std::nullopt};
  EXPECT_EQ(traceFileName(naming, 1), "kinetrace-run-h-pid9.json");
  EXPECT_EQ(traceFileName(naming, 2), "kinetrace-run-h-pid9-w2.json");
}

TEST(TraceNamingTest, WithoutRunIdTheNameStillWorks) {
  TraceNaming naming{"", "h", 9, std::nullopt, std::nullopt};
  EXPECT_EQ(traceFileName(naming), "kinetrace-h-pid9.json");
}

TEST(TraceNamingTest, EnvironmentGivesPidHostAndRanks) {
  ScopedEnv rank("RANK", "3");
  ScopedEnv local("LOCAL_RANK", "1");
  TraceNaming naming = namingFromEnvironment("run1");
  EXPECT_EQ(naming.pid, getpid());
  EXPECT_FALSE(naming.host.empty());
  EXPECT_EQ(naming.host.find('.'), std::string::npos) << "short host name";
  ASSERT_TRUE(naming.rank.has_value());
  EXPECT_EQ(*naming.rank, "3");
  EXPECT_EQ(*naming.localRank, "1");
  std::string name = traceFileName(naming);
  EXPECT_EQ(name.rfind("kinetrace-run1-rank3-local1-", 0), 0u) << name;
  EXPECT_NE(name.find("-pid" + std::to_string(getpid()) + ".json"), std::string::npos) << name;
}

TEST(TraceNamingTest, WithoutRanksInTheEnvironmentNoRankPartIsWritten) {
  ScopedEnv rank("RANK", nullptr);
  ScopedEnv local("LOCAL_RANK", nullptr);
  TraceNaming naming = namingFromEnvironment("run1");
  EXPECT_FALSE(naming.rank.has_value());
  EXPECT_FALSE(naming.localRank.has_value());
  EXPECT_EQ(traceFileName(naming).find("rank"), std::string::npos);
}

TEST(TraceNamingTest, OddCharactersNeverReachTheFileName) {
  ScopedEnv rank("RANK", "../../etc");
  TraceNaming naming = namingFromEnvironment("a/b c");
  std::string name = traceFileName(naming);
  EXPECT_EQ(name.find('/'), std::string::npos) << name;
  EXPECT_EQ(name.find(' '), std::string::npos) << name;
  EXPECT_EQ(sanitizeNamePart("x/y z\n"), "x_y_z_");
}

TEST(TraceNamingTest, TheFormatGivesTheExtension) {
  TraceNaming naming;
  naming.host = "h";
  naming.pid = 9;
  naming.format = TraceFormat::Pftrace;
  EXPECT_EQ(traceFileName(naming), "kinetrace-h-pid9.pftrace");
  naming.format = TraceFormat::JsonGz;
  EXPECT_EQ(traceFileName(naming, 2), "kinetrace-h-pid9-w2.json.gz");
  // The rule the library's sessions name files by too.
  EXPECT_EQ(kinetrace::traceFileName({"pid9", "123"}, TraceFormat::Pftrace),
            "kinetrace-pid9-123.pftrace");
  EXPECT_EQ(kinetrace::traceFileName({"pid9", "123"}, TraceFormat::Json),
            "kinetrace-pid9-123.json");
}

TEST(TraceNamingTest, SummariesSitBesideTheirTraceAndAreFoundByRun) {
  EXPECT_EQ(summaryPathFor("/t/kinetrace-r-h-pid1.json"), "/t/kinetrace-r-h-pid1.summary.json");
  EXPECT_EQ(summaryPathFor("/t/kinetrace-r-h-pid1.json.gz"), "/t/kinetrace-r-h-pid1.summary.json");
  EXPECT_EQ(summaryPathFor("/t/kinetrace-r-h-pid1.pftrace"), "/t/kinetrace-r-h-pid1.summary.json");
  EXPECT_TRUE(isSummaryOfRun("kinetrace-r1-h-pid1.summary.json", "r1"));
  EXPECT_FALSE(isSummaryOfRun("kinetrace-r2-h-pid1.summary.json", "r1"));
  EXPECT_FALSE(isSummaryOfRun("kinetrace-r1-h-pid1.json", "r1"));
  EXPECT_FALSE(isSummaryOfRun("kinetrace-r1-h-pid1.summary.json.tmp.1.ab", "r1"));
  EXPECT_TRUE(isSummaryOfRun("kinetrace-r1-h-pid1.summary.json", ""));
}

}  // namespace
}  // namespace kinetrace::runfiles
