#include "output/nccl_kernel_name.h"

#include <array>
#include <utility>

namespace kinetrace::detail {
namespace {

constexpr std::array<std::string_view, 6> kCollectives = {"AllReduce", "AllGather", "ReduceScatter",
                                                          "Broadcast", "Reduce",    "AllToAll"};
constexpr std::array<std::string_view, 7> kReductions = {"Sum", "Prod",      "Max",       "Min",
                                                         "Avg", "PreMulSum", "SumPostDiv"};
// Longest first: "COLLNET_DIRECT" is one algorithm, not "COLLNET" and a datatype "DIRECT".
constexpr std::array<std::string_view, 8> kAlgorithms = {
    "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "RING", "TREE", "NVLS", "PAT", "COLLNET"};
constexpr std::array<std::string_view, 3> kProtocols = {"LL128", "LL", "SIMPLE"};

template <std::size_t N>
bool isOneOf(std::string_view word, const std::array<std::string_view, N>& words) {
  for (std::string_view w : words) {
    if (word == w) return true;
  }
  return false;
}

// The word at the start of `rest` that is one of `words` and ends at a '_' or at the end.
template <std::size_t N>
std::string_view wordAt(std::string_view rest, const std::array<std::string_view, N>& words) {
  for (std::string_view w : words) {
    if (rest.substr(0, w.size()) == w && (rest.size() == w.size() || rest[w.size()] == '_')) {
      return w;
    }
  }
  return {};
}

}  // namespace

std::optional<NcclKernelName> parseNcclKernelName(std::string_view name) {
  std::string_view rest;
  for (std::string_view prefix :
       {std::string_view("ncclDevKernel_"), std::string_view("ncclKernel_")}) {
    if (name.substr(0, prefix.size()) == prefix) rest = name.substr(prefix.size());
  }
  if (rest.empty()) return std::nullopt;
  rest = rest.substr(0, rest.find_first_of("(<"));  // the function's parameters, templates

  NcclKernelName out;
  const std::size_t operationEnd = rest.find('_');
  out.operation = rest.substr(0, operationEnd);
  out.collective = isOneOf(out.operation, kCollectives);
  rest =
      operationEnd == std::string_view::npos ? std::string_view() : rest.substr(operationEnd + 1);

  // The other parts come in either order (2.19: reduction, type, algorithm, protocol;
  // before: algorithm, protocol, reduction, type). What is not a known algorithm, protocol or
  // reduction is the datatype, which may hold '_' itself ("int8_t", "__nv_bfloat16").
  const char* typeStart = nullptr;
  const char* typeEnd = nullptr;
  for (std::size_t at = 0; at < rest.size();) {
    const std::string_view tail = rest.substr(at);
    std::string_view word;
    if (out.algorithm.empty() && !(word = wordAt(tail, kAlgorithms)).empty()) {
      out.algorithm = word;
    } else if (out.protocol.empty() && !(word = wordAt(tail, kProtocols)).empty()) {
      out.protocol = word;
    } else if (out.reduction.empty() && !(word = wordAt(tail, kReductions)).empty()) {
      out.reduction = word;
    } else {
      word = tail.substr(0, tail.find('_'));  // empty between the two '_' of "__nv_..."
      if (typeStart == nullptr) typeStart = tail.data();
      typeEnd = tail.data() + word.size();
    }
    at += word.size() + 1;  // the word and the '_' after it
  }
  if (typeStart != nullptr) out.datatype = std::string_view(typeStart, typeEnd - typeStart);
  return out;
}

std::string_view ncclPayloadArgName(std::string_view payloadEntry) {
  // The names NCCL gives its payload entries (src/include/nvtx_payload_schemas.h in NCCL).
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"Message size [bytes]", "nccl bytes"},
      {"Bytes", "nccl bytes"},  // NCCL 2.19-2.23's broadcast, send and receive
      {"NCCL communicator ID", "nccl communicator"},
      {"Reduction operation", "nccl reduction"},
      {"Peer rank", "nccl peer"},
      {"Root", "nccl root"},
      {"No. of ranks", "nccl ranks"},
      {"Rank", "nccl rank"},
      // kinetrace's own, on an ncclGroupEnd: what the calls of the group were.
      {"Calls in the group", "nccl group calls"},
  };
  for (const auto& [entry, arg] : kNames) {
    if (entry == payloadEntry) return arg;
  }
  return {};
}

}  // namespace kinetrace::detail
