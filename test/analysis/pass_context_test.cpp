// The context the analysis's passes share, and the join of GPU operations to their launch
// calls that hands them the operations.

#include "analysis/passes/pass_context.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

TEST(PassContextTest, EachOperationIsJoinedToItsLaunchCallByCorrelationId) {
  TraceBuilder b;
  b.op("gemm", 0, 2, 5, 9);
  b.kernel("graph_kernel", 10, 12);  // no launch call in the trace
  b.op("relu", 3, 4, 13, 15, "kernel", 8);
  PassFixture f(b.take());
  std::vector<JoinedOp> ops;
  joinOperations(f.trace(), [&ops](const JoinedOp& op) { ops.push_back(op); });
  ASSERT_EQ(ops.size(), 3u);
  auto named = [&](const std::string& name) {
    for (const JoinedOp& op : ops) {
      if (f.trace().name(op.name) == name) return op;
    }
    ADD_FAILURE() << "no " << name;
    return JoinedOp{};
  };
  const JoinedOp gemm = named("gemm");
  EXPECT_TRUE(gemm.hasCall);
  EXPECT_EQ(gemm.callStartNs, kBase);
  EXPECT_EQ(gemm.callEndNs, kBase + 2 * kUs);
  EXPECT_EQ(gemm.callTid, 1);
  EXPECT_EQ(gemm.startNs, kBase + 5 * kUs);
  const JoinedOp relu = named("relu");
  EXPECT_EQ(relu.callStartNs, kBase + 3 * kUs);
  EXPECT_EQ(relu.stream, 8);
  EXPECT_FALSE(named("graph_kernel").hasCall);
}

TEST(PassContextTest, AKeptNameTakesWhatALongNameHoldsFromTheReportsHold) {
  TraceBuilder b;
  const std::string longName(40, 'k');
  b.op(longName, 0, 1, 2, 3);
  b.op("relu", 4, 5, 6, 7);
  PassFixture f(b.take());
  std::vector<uint32_t> names;
  joinOperations(f.trace(), [&names](const JoinedOp& op) { names.push_back(op.name); });
  ASSERT_EQ(names.size(), 2u);
  const PassContext& context = f.context();
  EXPECT_EQ(context.keptName(names[1]), "relu");
  EXPECT_EQ(context.reportHold->bytes(), 0u) << "a short name is kept in the string itself";
  EXPECT_EQ(context.keptName(names[0]), longName);
  EXPECT_EQ(context.reportHold->bytes(), 40 + 1 + kAllocationOverheadBytes);
}

}  // namespace
}  // namespace kinetrace::detail::passes
