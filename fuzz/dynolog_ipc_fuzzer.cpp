// The dynolog datagram decoder (ondemand/dynolog_ipc.h): what a traced process's dynolog
// client makes of a datagram from the daemon's socket (the header, then the payload a config
// text), and the poll decoder the daemon's side of the protocol uses. Corpus:
// fuzz/corpus/dynolog_ipc (datagrams as encodeMessage writes them).
//
// Besides not crashing: a poll that decodes encodes back to the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "ondemand/dynolog_ipc.h"
#include "ondemand/kineto_config.h"

namespace {

using namespace kinetrace;

// A datagram is at most 64 KB (the client's receive buffer; -max_len); decoding it holds a few
// copies of it.
constexpr std::size_t kHeapLimitBytes = std::size_t{4} << 20;

// The one call into the decoder.
detail::Result<ondemand::DynologMessage> decode(std::string_view datagram) {
  return ondemand::decodeMessage(datagram);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view datagram(reinterpret_cast<const char*>(data), size);
  fuzz::HeapLimit limit(kHeapLimitBytes, "decoding a dynolog datagram");
  const auto message = decode(datagram);
  if (!message.ok()) return 0;
  const std::string& payload = message.value().payload;
  if (const auto poll = ondemand::decodePoll(payload); poll.ok()) {
    if (ondemand::encodePoll(poll.value()) != payload) {
      fuzz::reportFinding("a poll decoded and encoded again differs");
    }
  }
  // As the client hands a reply's payload on (DynologClient::receiveAll).
  if (message.value().type == ondemand::kDynologRequestType && !payload.empty()) {
    (void)ondemand::requestFromKinetoConfig(payload, 4242, "");
  }
  return 0;
}
