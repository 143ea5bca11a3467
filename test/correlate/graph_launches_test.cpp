#include "correlate/graph_launches.h"

#include <gtest/gtest.h>

// Launches of CUDA graphs learnt from the nodes that joined them, asked for by the nodes of
// conditional bodies, which carry their graph's id but no correlation id.

namespace kinetrace::detail {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(GraphLaunchesTest, ABodyNodeBelongsToTheLaunchWhoseFirstNodeStartedLastBeforeIt) {
  GraphLaunches launches(16, 30 * kSecond);
  launches.onJoined(2, 1000, 11);
  launches.onJoined(2, 1100, 11);  // the same launch's later node
  launches.onJoined(2, 2000, 12);
  EXPECT_EQ(launches.launchAt(2, 999), 0u) << "before the first launch";
  EXPECT_EQ(launches.launchAt(2, 1000), 11u);
  EXPECT_EQ(launches.launchAt(2, 1500), 11u);
  EXPECT_EQ(launches.launchAt(2, 2500), 12u);
  EXPECT_EQ(launches.launchAt(3, 2500), 0u) << "another graph's launches are not its";
}

TEST(GraphLaunchesTest, ALaunchStartsAtItsEarliestNodeWhateverTheOrderTheyArrive) {
  GraphLaunches launches(16, 30 * kSecond);
  launches.onJoined(2, 2000, 12);
  launches.onJoined(2, 1200, 11);  // arrived late: placed before launch 12
  launches.onJoined(2, 1000, 11);  // an earlier node of launch 11
  EXPECT_EQ(launches.launchAt(2, 1100), 11u);
  EXPECT_EQ(launches.launchAt(2, 1999), 11u);
  EXPECT_EQ(launches.launchAt(2, 2000), 12u);
}

TEST(GraphLaunchesTest, OnlyTheLastLaunchesOfAGraphAreKept) {
  GraphLaunches launches(2, 30 * kSecond);
  launches.onJoined(2, 1000, 11);
  launches.onJoined(2, 2000, 12);
  launches.onJoined(2, 3000, 13);
  EXPECT_EQ(launches.launchAt(2, 1500), 0u) << "launch 11 was let go";
  EXPECT_EQ(launches.launchAt(2, 2500), 12u);
}

TEST(GraphLaunchesTest, LaunchesLongBeforeTheNewestAreLetGo) {
  GraphLaunches launches(16, kSecond);
  launches.onJoined(2, 1000, 11);
  launches.onJoined(2, 1000 + 2 * kSecond, 12);
  EXPECT_EQ(launches.launchAt(2, 1500), 0u);
  EXPECT_EQ(launches.launchAt(2, 1500 + 2 * kSecond), 12u);
  EXPECT_GT(launches.heldBytes(), 0u);
  launches.clear();
  EXPECT_EQ(launches.launchAt(2, 1500 + 2 * kSecond), 0u);
  EXPECT_EQ(launches.heldBytes(), 0u);
}

}  // namespace
}  // namespace kinetrace::detail
