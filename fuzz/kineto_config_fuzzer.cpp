// libkineto's on-demand config (ondemand/kineto_config.h), as the dynolog daemon hands it
// over from `dyno gputrace`: the daemon's RPC has no authentication, so this text comes from
// anyone who can reach the daemon's port. Corpus: fuzz/corpus/kineto_config; dictionary:
// fuzz/kineto_config.dict.
//
// Besides not crashing: a request the config yields is confined to /tmp and
// $KINETO_ONDEMAND_TRACE_DIR by its path rule, its path holds no byte that would cut it short,
// and the rule, applied to the path on this machine's file system (nothing made), never
// lands it elsewhere; the request passes the rule every request is judged by.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "ondemand/kineto_config.h"
#include "ondemand/trigger_decision.h"
#include "support/path_rule.h"

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
    std::vector<std::string> allowed{"/tmp"};
    if (!onDemandDir.empty()) allowed.push_back(onDemandDir);
    if (asked.outputRule.allowedDirectories != allowed) {
      fuzz::reportFinding(
          "a daemon's config yields a request not confined to /tmp/ and the "
          "on-demand directory");
    }
    if (asked.output.empty() || asked.output[0] != '/' ||
        ondemand::whyPathUnusable(asked.output).has_value()) {
      fuzz::reportFinding("a daemon's config yields a path that is not absolute and plain");
    }
    detail::PathRule lookOnly = asked.outputRule;
    lookOnly.createDirectories = false;
    const detail::Result<detail::OutputLocation> landed =
        detail::resolveOutput(asked.output, lookOnly);
    if (landed.ok() && !strictlyUnder(landed.value().path(), "/tmp") &&
        (onDemandDir.empty() || !strictlyUnder(landed.value().path(), onDemandDir))) {
      fuzz::reportFinding(
          "a daemon's config lands a trace outside /tmp/ and the on-demand directory");
    }
    if (!ondemand::checkRequest(asked).ok()) {
      fuzz::reportFinding("a daemon's config yields a request the trigger rule refuses");
    }
  }
  return 0;
}
