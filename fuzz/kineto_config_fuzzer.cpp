// libkineto's on-demand config (ondemand/kineto_config.h), as the dynolog daemon hands it
// over from `dyno gputrace`: the daemon's RPC has no authentication, so this text comes from
// anyone who can reach the daemon's port. Corpus: fuzz/corpus/kineto_config; dictionary:
// fuzz/kineto_config.dict.
//
// Besides not crashing: a request the config yields writes its trace only where it may (under
// /tmp/ or $KINETO_ONDEMAND_TRACE_DIR), checked here on the path as the system will see it
// (cut at a NUL, ".." and "." resolved), and passes the rule every request is judged by.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "ondemand/kineto_config.h"
#include "ondemand/trigger_decision.h"

namespace {

using namespace kinetrace;

// A config arrives in one datagram of at most 64 KB (-max_len); parsing it holds a few copies.
constexpr std::size_t kHeapLimitBytes = std::size_t{4} << 20;
constexpr int64_t kPid = 4242;
// $KINETO_ONDEMAND_TRACE_DIR: unset, and set.
constexpr const char* kOnDemandDirs[] = {"", "/data/traces"};

// The one call into the parser.
detail::Result<ondemand::KinetoConfigRequest> requestFrom(std::string_view text,
                                                          const std::string& onDemandDir) {
  return ondemand::requestFromKinetoConfig(text, kPid, onDemandDir);
}

// `path` as open() reads it, resolved lexically; false when it climbs above the root.
bool systemPath(const std::string& path, std::string* out) {
  const std::string seen = path.substr(0, path.find('\0'));
  out->clear();
  std::size_t begin = 0;
  while (begin <= seen.size()) {
    std::size_t end = seen.find('/', begin);
    if (end == std::string::npos) end = seen.size();
    const std::string part = seen.substr(begin, end - begin);
    if (part == "..") {
      if (out->empty()) return false;
      out->erase(out->rfind('/'));
    } else if (!part.empty() && part != ".") {
      *out += "/" + part;
    }
    begin = end + 1;
  }
  return true;
}

bool strictlyUnder(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() + 1 && path.compare(0, dir.size() + 1, dir + "/") == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::HeapLimit limit(kHeapLimitBytes, "reading a libkineto config");
  const auto config = ondemand::parseKinetoConfig(text);
  if (config.ok() && config.value().logFile) {
    (void)ondemand::withPid(*config.value().logFile, kPid);
  }
  for (const std::string onDemandDir : kOnDemandDirs) {
    const auto request = requestFrom(text, onDemandDir);
    if (!request.ok()) continue;
    if (!config.ok()) fuzz::reportFinding("a config that does not parse yields a request");
    const ondemand::TriggerRequest& asked = request.value().request;
    std::string path;
    if (asked.output.empty() || asked.output[0] != '/' || !systemPath(asked.output, &path) ||
        !(strictlyUnder(path, "/tmp") ||
          (!onDemandDir.empty() && strictlyUnder(path, onDemandDir)))) {
      fuzz::reportFinding(
          "a daemon's config names a trace path that the system reads as outside /tmp/ and "
          "the on-demand directory");
    }
    if (!ondemand::checkRequest(asked).ok()) {
      fuzz::reportFinding("a daemon's config yields a request the trigger rule refuses");
    }
  }
  return 0;
}
