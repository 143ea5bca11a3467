#include "runfiles/trace_naming.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "model/trace_file_name.h"
#include "support/text.h"

namespace kinetrace::runfiles {

using detail::endsWith;

namespace {

constexpr std::string_view kPrefix = "kinetrace";
constexpr std::string_view kSummarySuffix = ".summary.json";
// Longest first: ".json.gz" before ".json".
constexpr std::string_view kTraceSuffixes[] = {".json.gz", ".pftrace", ".json"};

std::optional<std::string> variable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return sanitizeNamePart(value, 16);
}

}  // namespace

std::string sanitizeNamePart(std::string_view text, std::size_t maxLength) {
  std::string out;
  for (char c : text.substr(0, maxLength)) {
    bool plain = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += plain ? c : '_';
  }
  return out;
}

TraceNaming namingFromEnvironment(std::string runId) {
  TraceNaming naming;
  naming.runId = sanitizeNamePart(runId);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof host, "host");
  // The short name: "node7.cluster.example.com" -> "node7".
  std::string_view shortHost(host);
  shortHost = shortHost.substr(0, shortHost.find('.'));
  naming.host = sanitizeNamePart(shortHost);
  naming.pid = static_cast<int64_t>(getpid());
  naming.rank = variable("RANK");
  naming.localRank = variable("LOCAL_RANK");
  return naming;
}

std::string traceFileName(const TraceNaming& naming, int window) {
  std::vector<std::string> parts;
  parts.push_back(naming.runId);
  if (naming.rank) parts.push_back("rank" + *naming.rank);
  if (naming.localRank) parts.push_back("local" + *naming.localRank);
  parts.push_back(naming.host.empty() ? std::string("host") : naming.host);
  parts.push_back("pid" + std::to_string(naming.pid));
  if (window > 1) parts.push_back("w" + std::to_string(window));
  return kinetrace::traceFileName(parts, naming.format);
}

std::string summaryPathFor(const std::string& tracePath) {
  std::string_view path(tracePath);
  for (std::string_view suffix : kTraceSuffixes) {
    if (endsWith(path, suffix)) {
      path.remove_suffix(suffix.size());
      break;
    }
  }
  return std::string(path) + std::string(kSummarySuffix);
}

bool isSummaryOfRun(std::string_view fileName, std::string_view runId) {
  if (!endsWith(fileName, kSummarySuffix)) return false;
  std::string prefix(kPrefix);
  prefix += '-';
  if (!runId.empty()) {
    prefix += runId;
    prefix += '-';
  }
  return fileName.substr(0, prefix.size()) == prefix;
}

}  // namespace kinetrace::runfiles
