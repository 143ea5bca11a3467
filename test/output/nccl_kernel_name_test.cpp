// NCCL kernels' names, as NCCL 2.19+ and earlier versions give them, taken apart.

#include "output/nccl_kernel_name.h"

#include <gtest/gtest.h>

#include <string>

namespace kinetrace::detail {
namespace {

std::string describe(std::string_view name) {
  const std::optional<NcclKernelName> n = parseNcclKernelName(name);
  if (!n) return "not nccl";
  return std::string(n->operation) + (n->collective ? " collective" : " point-to-point") +
         " reduction=" + std::string(n->reduction) + " type=" + std::string(n->datatype) +
         " algorithm=" + std::string(n->algorithm) + " protocol=" + std::string(n->protocol);
}

TEST(NcclKernelNameTest, NamesOfNccl219AndLaterGiveEveryPart) {
  EXPECT_EQ(describe("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "AllReduce collective reduction=Sum type=f32 algorithm=RING protocol=LL");
  EXPECT_EQ(describe("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL128"),
            "ReduceScatter collective reduction=Sum type=bf16 algorithm=RING protocol=LL128");
  EXPECT_EQ(describe("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "AllGather collective reduction= type= algorithm=RING protocol=LL");
  EXPECT_EQ(describe("ncclDevKernel_AllReduce_Max_u64_COLLNET_DIRECT_SIMPLE"),
            "AllReduce collective reduction=Max type=u64 algorithm=COLLNET_DIRECT protocol=SIMPLE");
  EXPECT_EQ(describe("ncclDevKernel_AllReduce_Sum_f16_NVLS_TREE_SIMPLE"),
            "AllReduce collective reduction=Sum type=f16 algorithm=NVLS_TREE protocol=SIMPLE");
  EXPECT_EQ(describe("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
            "SendRecv point-to-point reduction= type= algorithm= protocol=");
  EXPECT_EQ(describe("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"),
            "Generic point-to-point reduction= type=1 algorithm= protocol=");
}

TEST(NcclKernelNameTest, EarlierNamesWithTypesThatHoldUnderscores) {
  EXPECT_EQ(
      describe("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
      "AllReduce collective reduction=Sum type=float algorithm=RING protocol=LL");
  EXPECT_EQ(describe("ncclKernel_AllReduce_TREE_LL128_Sum___nv_bfloat16"),
            "AllReduce collective reduction=Sum type=__nv_bfloat16 algorithm=TREE protocol=LL128");
  EXPECT_EQ(describe("ncclKernel_Broadcast_RING_SIMPLE_Sum_int8_t"),
            "Broadcast collective reduction=Sum type=int8_t algorithm=RING protocol=SIMPLE");
  EXPECT_EQ(describe("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"),
            "SendRecv point-to-point reduction=Sum type=int8_t algorithm=RING protocol=SIMPLE");
}

TEST(NcclKernelNameTest, OtherKernelsAreNotNccl) {
  EXPECT_EQ(describe("void at::native::vectorized_elementwise_kernel<4>(int)"), "not nccl");
  EXPECT_EQ(describe("my_ncclDevKernel_AllReduce"), "not nccl");
  EXPECT_EQ(describe("ncclDevKernel_"), "not nccl");
  EXPECT_EQ(describe(""), "not nccl");
}

}  // namespace
}  // namespace kinetrace::detail
