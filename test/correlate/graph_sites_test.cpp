#include "correlate/graph_sites.h"

#include <gtest/gtest.h>

#include <string>

// Graph node creation sites fed by hand: nodes as CUPTI announces them (created inside a
// call, then that call's record when it returns), clones as instantiation makes them.

namespace kinetrace::detail {
namespace {

constexpr uint32_t kThread = 1;  // thread instances
constexpr uint32_t kAutograd = 2;
constexpr int64_t kStart = 1'000'000'000;

class GraphSitesTest : public ::testing::Test {
 protected:
  // A call of `thread` over [start, end]; returns whether it created nodes.
  bool call(uint32_t thread, int64_t start, int64_t end, uint32_t correlation,
            const std::string& name) {
    return sites.onCall(thread, start, end, correlation, [&] {
      ++namesAsked;
      return tables.strings.intern(name);
    });
  }
  const GraphNodeSite& siteOf(uint64_t node) const {
    const uint32_t index = sites.siteOf(node);
    EXPECT_NE(index, 0u) << "node " << node << " has no site";
    return tables.graphNodeSites.at(index == 0 ? 0 : index - 1);
  }
  std::string name(StringId id) const { return std::string(tables.strings.get(id)); }

  TraceTables tables;
  GraphSites sites{tables, 1000};
  int namesAsked = 0;
};

TEST_F(GraphSitesTest, ANodeCreatedInsideACallNamesTheCallAndTheRangeOpenThen) {
  const StringId attention = tables.strings.intern("attention");
  ASSERT_TRUE(sites.onNode(kThread, kStart + 25, 0x100000000, 500, attention, 0));
  EXPECT_TRUE(call(kThread, kStart + 20, kStart + 30, 9, "cudaLaunchKernel"))
      << "a launch into a stream being captured";

  const GraphNodeSite& site = siteOf(0x100000000);
  EXPECT_EQ(site.correlationId, 9u);
  EXPECT_EQ(name(site.call), "cudaLaunchKernel");
  EXPECT_EQ(site.externalId, 500u);
  EXPECT_EQ(name(site.range), "attention");
}

TEST_F(GraphSitesTest, ANodeCreatedBeforeTheThreadsNextCallBeganHasNoCall) {
  ASSERT_TRUE(sites.onNode(kThread, kStart + 50, 0x100000001, 0, StringTable::kEmpty, 0));
  EXPECT_FALSE(call(kThread, kStart + 60, kStart + 70, 10, "cudaStreamSynchronize"));

  const GraphNodeSite& site = siteOf(0x100000001);
  EXPECT_EQ(site.correlationId, 0u) << "created by a call kinetrace did not record";
  EXPECT_EQ(site.call, StringTable::kEmpty);
  EXPECT_EQ(namesAsked, 0) << "a call that created nothing is not named";
  EXPECT_FALSE(call(kThread, kStart + 50, kStart + 80, 11, "cudaGraphAddKernelNode"))
      << "the node waited for one call only";
}

TEST_F(GraphSitesTest, NodesWaitForACallOfTheirOwnThread) {
  ASSERT_TRUE(sites.onNode(kAutograd, kStart + 25, 0x100000002, 0, StringTable::kEmpty, 0));
  EXPECT_FALSE(call(kThread, kStart + 20, kStart + 30, 9, "cudaLaunchKernel"));
  EXPECT_TRUE(call(kAutograd, kStart + 20, kStart + 30, 12, "cudaLaunchKernel"));
  EXPECT_EQ(siteOf(0x100000002).correlationId, 12u);
}

// PyTorch captures the backward pass on its autograd thread and instantiates on the main
// thread: the clones' events may be drained before their originals'. The clone still names
// its original's site, not the instantiating call; a clone of a node never seen has none.
TEST_F(GraphSitesTest, AClonesSiteIsItsOriginalsWhicheverThreadIsDrainedFirst) {
  sites.onNode(kThread, kStart + 80, 0x200000005, 0, StringTable::kEmpty, 0);  // instantiate
  sites.onNode(kThread, kStart + 80, 0x200000005, 0, StringTable::kEmpty, 0x100000005);
  sites.onNode(kThread, kStart + 81, 0x200000006, 0, StringTable::kEmpty, 0);
  sites.onNode(kThread, kStart + 81, 0x200000006, 0, StringTable::kEmpty, 0x100000006);
  call(kThread, kStart + 75, kStart + 90, 12, "cudaGraphInstantiate");
  sites.onNode(kAutograd, kStart + 25, 0x100000005, 0, StringTable::kEmpty, 0);  // drained later
  call(kAutograd, kStart + 20, kStart + 30, 9, "cudaLaunchKernel");

  const GraphNodeSite& site = siteOf(0x200000005);
  EXPECT_EQ(site.correlationId, 9u) << "the backward launch, not the instantiation (12)";
  EXPECT_EQ(name(site.call), "cudaLaunchKernel");
  EXPECT_EQ(sites.siteOf(0x200000006), 0u) << "its original's creation was not seen";
  EXPECT_EQ(sites.siteOf(0), 0u);
}

TEST_F(GraphSitesTest, ACloneOfACloneReachesTheOriginal) {
  sites.onNode(kThread, kStart + 10, 0x100000000, 0, StringTable::kEmpty, 0);
  call(kThread, kStart + 5, kStart + 15, 3, "cudaLaunchKernel");
  sites.onNode(kThread, kStart + 20, 0x200000000, 0, StringTable::kEmpty, 0x100000000);
  sites.onNode(kThread, kStart + 30, 0x300000000, 0, StringTable::kEmpty, 0x200000000);
  EXPECT_EQ(siteOf(0x300000000).correlationId, 3u);
}

TEST_F(GraphSitesTest, ANodeAnnouncedTwiceKeepsItsFirstSite) {
  sites.onNode(kThread, kStart + 10, 0x100000000, 500, StringTable::kEmpty, 0);
  EXPECT_TRUE(sites.onNode(kThread, kStart + 20, 0x100000000, 600, StringTable::kEmpty, 0));
  EXPECT_EQ(tables.graphNodeSites.size(), 1u);
  EXPECT_EQ(siteOf(0x100000000).externalId, 500u);
}

TEST_F(GraphSitesTest, NodesPastTheCapAreNotKeptAndClonesCountTowardIt) {
  GraphSites capped(tables, 2);
  EXPECT_TRUE(capped.onNode(kThread, kStart, 0x100000000, 0, StringTable::kEmpty, 0));
  EXPECT_TRUE(capped.onNode(kThread, kStart, 0x200000000, 0, StringTable::kEmpty, 0x100000000));
  EXPECT_FALSE(capped.onNode(kThread, kStart, 0x100000001, 0, StringTable::kEmpty, 0));
  EXPECT_EQ(capped.siteOf(0x100000001), 0u);
  EXPECT_EQ(capped.siteOf(0x200000000), 1u);
}

TEST_F(GraphSitesTest, ClearForgetsTheNodesButNotTheirSites) {
  sites.onNode(kThread, kStart + 10, 0x100000000, 0, StringTable::kEmpty, 0);
  const std::size_t held = sites.heldBytes();
  EXPECT_GT(held, 0u);
  sites.clear();
  EXPECT_EQ(sites.siteOf(0x100000000), 0u);
  EXPECT_FALSE(call(kThread, kStart, kStart + 20, 3, "cudaLaunchKernel"));
  EXPECT_EQ(tables.graphNodeSites.size(), 1u) << "records already written point at it";
}

}  // namespace
}  // namespace kinetrace::detail
