#include "runfiles/run_manifest.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>

#include "support/path_rule.h"

namespace kinetrace::runfiles {
namespace {

// Writes of at most PIPE_BUF bytes are the ones POSIX promises not to interleave (for
// pipes; Linux file systems keep any single O_APPEND write whole, this is the safe bound).
constexpr std::size_t kMaxLine = PIPE_BUF;
// What is read of a manifest at most: 16,384 lines of the longest kind, far more than the
// processes of any run write.
constexpr std::size_t kMaxManifestBytes = kMaxLine * 16384;
constexpr std::string_view kCut = "...";

struct EventName {
  ManifestEvent event;
  std::string_view name;
};
constexpr EventName kEventNames[] = {
    {ManifestEvent::Saved, "saved"},
    {ManifestEvent::SaveFailed, "save-failed"},
    {ManifestEvent::NothingRecorded, "nothing-recorded"},
    {ManifestEvent::TracingOff, "tracing-off"},
};

std::string_view nameOf(ManifestEvent event) {
  for (const EventName& entry : kEventNames) {
    if (entry.event == event) return entry.name;
  }
  return "unknown";
}

std::optional<ManifestEvent> eventNamed(std::string_view name) {
  for (const EventName& entry : kEventNames) {
    if (entry.name == name) return entry.event;
  }
  return std::nullopt;
}

// The characters a field cannot hold as themselves, and how each is written.
struct Escape {
  char raw;
  std::string_view written;
};
constexpr Escape kEscapes[] = {{'\\', "\\\\"}, {'\t', "\\t"}, {'\n', "\\n"}, {'\r', "\\r"}};

// One character of a field as written: its escape, or a whole UTF-8 sequence (so a cut
// never splits a character, which a terminal would print as garbage).
struct Unit {
  std::string_view written;
  std::size_t consumed;  // bytes of the field it stands for
};

Unit unitAt(std::string_view text, std::size_t at) {
  for (const Escape& escape : kEscapes) {
    if (text[at] == escape.raw) return {escape.written, 1};
  }
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  std::string_view sequence = text.substr(at, length);
  return {sequence, sequence.size()};
}

std::size_t escapedSize(std::string_view text) {
  std::size_t size = 0;
  for (std::size_t at = 0; at < text.size();) {
    Unit unit = unitAt(text, at);
    size += unit.written.size();
    at += unit.consumed;
  }
  return size;
}

// Appends `text` escaped in at most `room` bytes: whole when it fits, else as many whole
// characters as fit followed by "...". Returns the bytes appended.
std::size_t appendEscaped(std::string& line, std::string_view text, std::size_t room) {
  const bool fits = escapedSize(text) <= room;
  const std::size_t limit = fits ? room : (room >= kCut.size() ? room - kCut.size() : 0);
  std::size_t used = 0;
  for (std::size_t at = 0; at < text.size();) {
    Unit unit = unitAt(text, at);
    if (used + unit.written.size() > limit) break;
    line += unit.written;
    used += unit.written.size();
    at += unit.consumed;
  }
  if (!fits && room >= kCut.size()) {
    line += kCut;
    used += kCut.size();
  }
  return used;
}

std::optional<std::string> unescape(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '\\') {
      out += field[i];
      continue;
    }
    const Escape* escape = nullptr;
    for (const Escape& candidate : kEscapes) {
      if (field.substr(i, 2) == candidate.written) escape = &candidate;
    }
    if (escape == nullptr) return std::nullopt;  // not written by appendManifest
    out += escape->raw;
    ++i;
  }
  return out;
}

template <typename Number>
std::optional<Number> number(std::string_view text) {
  Number value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<ManifestEntry> parseLine(std::string_view line) {
  std::string_view fields[5];
  std::size_t count = 0;
  for (std::size_t begin = 0;;) {
    std::size_t tab = line.find('\t', begin);
    if (count == 5) return std::nullopt;  // more fields than a line has
    fields[count++] = line.substr(begin, tab == std::string_view::npos ? tab : tab - begin);
    if (tab == std::string_view::npos) break;
    begin = tab + 1;
  }
  if (count != 5) return std::nullopt;
  std::optional<ManifestEvent> event = eventNamed(fields[0]);
  std::optional<int64_t> pid = number<int64_t>(fields[1]);
  std::optional<int> window = number<int>(fields[2]);
  std::optional<std::string> path = unescape(fields[3]);
  std::optional<std::string> message = unescape(fields[4]);
  if (!event || !pid || !window || !path || !message) return std::nullopt;
  return ManifestEntry{*event, *pid, *window, std::move(*path), std::move(*message)};
}

// The run's manifest opened with `flags`, its directory reached by the one path rule
// (support/path_rule.h) and the manifest itself never a link; -1 when it cannot be.
int openInRunDirectory(const std::string& dir, const std::string& runId, int flags) {
  const detail::Result<detail::OpenDirectory> opened = detail::openDirectory(dir, {});
  if (!opened.ok()) return -1;
  const std::string name = "kinetrace-" + runId + ".manifest";
  return ::openat(opened.value().fd(), name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, 0666);
}

}  // namespace

std::string manifestPath(const std::string& dir, const std::string& runId) {
  return dir + "/kinetrace-" + runId + ".manifest";
}

bool createManifest(const std::string& dir, const std::string& runId) noexcept {
  if (dir.empty() || runId.empty() || runId.find('/') != std::string::npos) return false;
  try {
    const int fd = openInRunDirectory(dir, runId, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) return false;
    return ::close(fd) == 0;
  } catch (...) {
    return false;  // out of memory building the path
  }
}

bool appendManifest(const std::string& dir, const std::string& runId,
                    const ManifestEntry& entry) noexcept {
  if (dir.empty() || runId.empty() || runId.find('/') != std::string::npos) return false;
  try {
    std::string line(nameOf(entry.event));
    line += '\t' + std::to_string(entry.pid) + '\t' + std::to_string(entry.window) + '\t';
    // What is left for path, tab, message and newline; the message gives way first.
    const std::size_t room = kMaxLine > line.size() + 2 ? kMaxLine - line.size() - 2 : 0;
    const std::size_t pathSize = appendEscaped(line, entry.path, room);
    line += '\t';
    appendEscaped(line, entry.message, room - pathSize);
    line += '\n';

    // Never created here: a manifest its command has already read and removed stays gone.
    const int fd = openInRunDirectory(dir, runId, O_WRONLY | O_APPEND);
    if (fd < 0) return false;
    ssize_t written;
    do {
      written = ::write(fd, line.data(), line.size());
    } while (written < 0 && errno == EINTR);
    const bool closed = ::close(fd) == 0;
    return written == static_cast<ssize_t>(line.size()) && closed;
  } catch (...) {
    return false;  // out of memory building the line: the outcome goes unrecorded
  }
}

std::vector<ManifestEntry> readManifest(const std::string& dir, const std::string& runId) {
  // A manifest is a regular file of lines of at most kMaxLine bytes, one or a few per traced
  // process: anything else (a link to /dev/zero planted in the run's directory) is not read,
  // and a manifest past kMaxManifestBytes is read that far.
  std::string text;
  const int fd = openInRunDirectory(dir, runId, O_RDONLY | O_NONBLOCK);
  struct stat info {};
  if (fd >= 0 && ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    char chunk[1 << 16];
    while (text.size() < kMaxManifestBytes) {
      const ssize_t got = ::read(fd, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      text.append(chunk, static_cast<std::size_t>(got));
    }
  }
  if (fd >= 0) ::close(fd);
  std::vector<ManifestEntry> entries;
  std::size_t begin = 0;
  // Only lines that end in a newline: the last one may be torn.
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    if (std::optional<ManifestEntry> entry =
            parseLine(std::string_view(text).substr(begin, end - begin))) {
      entries.push_back(std::move(*entry));
    }
  }
  return entries;
}

}  // namespace kinetrace::runfiles
