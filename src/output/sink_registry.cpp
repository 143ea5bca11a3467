#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "output/chrome_json_sink.h"
#include "output/chrome_naming.h"
#include "output/open_sink.h"
#include "output/perfetto_sink.h"
#include "support/text.h"

namespace kinetrace {

Sink::~Sink() = default;

void Sink::describe(const Track& track) {
  detail::forEachChromeNamingEvent(track, [this](const Event& event) { write(event); });
}

namespace {

constexpr std::string_view kSchemeSeparator = "://";

bool isAsciiLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool isAsciiDigit(char c) {
  return c >= '0' && c <= '9';
}

// RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
bool isValidScheme(std::string_view scheme) {
  if (scheme.empty() || !isAsciiLetter(scheme.front())) return false;
  for (char c : scheme) {
    if (!isAsciiLetter(c) && !isAsciiDigit(c) && c != '+' && c != '-' && c != '.') return false;
  }
  return true;
}

// Schemes are case-insensitive (RFC 3986 section 3.1): "FILE://x" is "file://x".
std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The scheme of "name://rest", or empty for a bare path. A path that merely contains
// "://" after a character no scheme may hold ("/tmp/a://b") is a bare path.
std::string_view schemeOf(std::string_view url) {
  const std::size_t separator = url.find(kSchemeSeparator);
  if (separator == std::string_view::npos) return {};
  std::string_view scheme = url.substr(0, separator);
  return isValidScheme(scheme) ? scheme : std::string_view{};
}

// A bare path or "file://" URL: Perfetto's protobuf format for ".pftrace" and
// ".perfetto-trace" (optionally ".gz"), Chrome trace JSON for anything else.
std::unique_ptr<Sink> openTraceFile(const std::string& pathOrFileUrl,
                                    const detail::PathRule& rule) {
  std::string_view path = pathOrFileUrl;
  if (lowercase(schemeOf(path)) == "file") path.remove_prefix(std::string_view("file://").size());
  if (!path.empty() && detail::isPerfettoPath(path))
    return detail::openPerfettoFile(std::string(path), rule);
  return detail::openChromeJsonFile(pathOrFileUrl, rule);
}

}  // namespace

bool detail::namesTraceFormat(std::string_view url) {
  const std::string_view scheme = schemeOf(url);
  if (!scheme.empty() && lowercase(scheme) != "file") return true;
  if (!scheme.empty()) url.remove_prefix(std::string_view("file://").size());
  return detail::endsWith(url, ".json") || detail::endsWith(url, ".json.gz") ||
         (!url.empty() && detail::isPerfettoPath(url));
}

namespace {

class SinkRegistry {
 public:
  SinkRegistry() {
    factories_["file"] = [](const std::string& url) { return openTraceFile(url, {}); };
    factories_["perfetto"] = [](const std::string& url) {
      return detail::openPerfettoFile(url, {});
    };
  }

  void add(std::string scheme, SinkFactory factory) {
    std::lock_guard<std::mutex> lock(mutex_);
    factories_[std::move(scheme)] = std::move(factory);
  }

  // A copy, so the factory runs without the lock: it may open files or register sinks.
  SinkFactory find(const std::string& scheme) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = factories_.find(scheme);
    return found == factories_.end() ? SinkFactory{} : found->second;
  }

  std::string knownSchemes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return detail::joinNames(factories_, [](const auto& entry) { return entry.first; });
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, SinkFactory> factories_;  // ordered: the error lists them sorted
};

SinkRegistry& registry() {
  static SinkRegistry instance;
  return instance;
}

}  // namespace

void registerSink(const std::string& scheme, SinkFactory factory) {
  if (!isValidScheme(scheme)) {
    throw Error("cannot register sink scheme \"" + scheme +
                "\": a scheme is a letter followed by letters, digits, '+', '-' or '.'");
  }
  if (!factory) throw Error("cannot register sink scheme \"" + scheme + "\": no factory");
  registry().add(lowercase(scheme), std::move(factory));
}

std::unique_ptr<Sink> openSink(const std::string& url) {
  return detail::openSinkUnder(url, detail::PathRule{});
}

namespace detail {

std::unique_ptr<Sink> openSinkUnder(const std::string& url, const PathRule& rule) {
  if (url.empty()) throw Error("cannot open a sink for an empty URL or path");
  const std::string scheme = lowercase(schemeOf(url));
  if (scheme.empty()) return openTraceFile(url, rule);
  if (!rule.allowedDirectories.empty()) {
    // The built-in file sinks, never one registered in their place.
    if (scheme == "file") return openTraceFile(url, rule);
    if (scheme == "perfetto") return openPerfettoFile(url, rule);
    throw Error(fmt::format(
        "cannot write trace to \"{}\": a trace that must stay in its allowed directories is "
        "written to a file path, not through the sink of scheme \"{}\"",
        url, scheme));
  }
  SinkFactory factory = registry().find(scheme);
  if (!factory) {
    throw Error(
        fmt::format("no sink registered for URL scheme \"{}\" in \"{}\" "
                    "(registered: {})",
                    schemeOf(url), url, registry().knownSchemes()));
  }
  std::unique_ptr<Sink> sink = factory(url);
  if (!sink) {
    throw Error(fmt::format("the sink factory for scheme \"{}\" returned no sink for \"{}\"",
                            schemeOf(url), url));
  }
  return sink;
}

}  // namespace detail

}  // namespace kinetrace
