#pragma once

#include <optional>
#include <string_view>

// What an NCCL kernel's name says about the work it does. NCCL names a kernel for the
// operation it runs and how:
//   NCCL 2.19 and later: ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)
//   earlier:             ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ...)
// (point-to-point and mixed work: ncclDevKernel_SendRecv, ncclDevKernel_Generic_1). Sizes,
// communicators and peers are not in the name.

namespace kinetrace::detail {

struct NcclKernelName {
  std::string_view operation;  // "AllReduce", "AllGather", "ReduceScatter", "SendRecv", ...
  std::string_view reduction;  // "Sum", "Max", ...; empty when the name has none
  std::string_view datatype;   // "f32", "bf16", "float", "__nv_bfloat16", ...; or empty
  std::string_view algorithm;  // "RING", "TREE", "NVLS", "COLLNET_DIRECT", ...; or empty
  std::string_view protocol;   // "LL", "LL128", "SIMPLE"; or empty
  // A collective: every rank of the communicator takes part and they finish together
  // (all-reduce, all-gather, reduce-scatter, broadcast, reduce, all-to-all).
  bool collective = false;
};

// The parts of an NCCL kernel's name (views into `name`), or nullopt when it is not one.
std::optional<NcclKernelName> parseNcclKernelName(std::string_view name);

// What the GPU work launched inside an NCCL call carries of that call's NVTX payload (NCCL
// 2.19 and later describe each call in its "NCCL" NVTX domain: "Message size [bytes]",
// "NCCL communicator ID", "Peer rank", "Root", "Reduction operation", ...): the argument name
// the work gets ("nccl bytes", "nccl communicator", ...), or empty for entries it does not
// carry.
std::string_view ncclPayloadArgName(std::string_view payloadEntry);

}  // namespace kinetrace::detail
