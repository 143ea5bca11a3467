// Opening a .pftrace file: which paths name one, and the sink over its file.

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "kinetrace/error.h"
#include "output/atomic_file.h"
#include "output/gzip_output.h"
#include "output/perfetto_compression.h"
#include "output/perfetto_sink.h"
#include "support/text.h"

namespace kinetrace::detail {
namespace {

}  // namespace

bool isPerfettoPath(std::string_view path) {
  if (endsWith(path, ".gz")) path.remove_suffix(3);
  return endsWith(path, ".pftrace") || endsWith(path, ".perfetto-trace");
}

std::unique_ptr<Sink> openPerfettoFile(const std::string& pathOrUrl, const PathRule& rule) {
  constexpr std::string_view kScheme = "perfetto://";
  std::string path = pathOrUrl;
  if (path.size() >= kScheme.size() &&
      std::equal(kScheme.begin(), kScheme.end(), path.begin(),
                 [](char a, char b) { return a == (b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b); })) {
    path.erase(0, kScheme.size());
    if (path.empty()) throw Error("trace URL \"" + pathOrUrl + "\" has no path");
  }
  std::unique_ptr<ByteOutput> file = std::make_unique<AtomicFile>(path, rule);
  if (endsWith(path, ".gz")) {
    file = std::make_unique<GzipOutput>(std::move(file));
  } else if (packetCompressionAvailable()) {
    // Packets compressed inside the file: a quarter of the size again, still a .pftrace.
    file = std::make_unique<CompressedPacketsOutput>(std::move(file));
  }
  return std::make_unique<PerfettoSink>(std::move(file));
}

}  // namespace kinetrace::detail
