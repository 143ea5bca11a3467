// The trigger channel's request parser (runfiles/trigger_channel.h): the line `kinetrace
// trigger` sends a traced process over its socket. Only the process's owner may connect, but
// the parser still meets whatever that user's programs send. Corpus: fuzz/corpus/trigger_request.
//
// Besides not crashing: a request that parses is written back by formatRequest as a line that
// parses to the same request, with the same output path (formatRequest is then a fixed point).

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "runfiles/trigger_channel.h"

namespace {

using namespace kinetrace;

// A request line is at most 4096 bytes (RequestReader refuses longer ones; -max_len):
// parsing it needs a few copies of it.
constexpr std::size_t kHeapLimitBytes = std::size_t{1} << 20;

// The one call into the parser.
detail::Result<runfiles::TriggerRequest> parse(const std::string& line) {
  return runfiles::parseRequest(line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  fuzz::HeapLimit limit(kHeapLimitBytes, "parsing a trigger request");
  const auto request = parse(line);
  if (!request.ok()) return 0;
  const std::string formatted = runfiles::formatRequest(request.value());
  const auto again = parse(formatted);
  if (!again.ok()) fuzz::reportFinding("a request formatRequest wrote does not parse");
  if (again.value().verb != request.value().verb ||
      again.value().output != request.value().output) {
    fuzz::reportFinding("a request formatRequest wrote parses to another verb or output");
  }
  if (runfiles::formatRequest(again.value()) != formatted) {
    fuzz::reportFinding("a request written, parsed and written again differs");
  }
  return 0;
}
