#include "support/path_rule.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <system_error>
#include <utility>

namespace kinetrace::detail {
namespace {

// Linux's own limit on the links followed in one path lookup (MAXSYMLINKS).
constexpr int kMaxLinkHops = 40;
// A directory made on the way may vanish before it is opened (another process removing
// it); making it again is tried this many times in one resolution before giving up.
constexpr int kMaxDirectoryRetries = 8;

std::string reason(int error) {
  return std::system_category().message(error);
}

// "/" for no parts, else "/a/b".
std::string joined(const std::vector<std::string>& parts) {
  if (parts.empty()) return "/";
  std::string path;
  for (const std::string& part : parts) path += "/" + part;
  return path;
}

// The components of `path` in order, without empty and "." ones ("a//./b" -> a, b); ".."
// stays, to be walked up from the directory it is met in.
std::vector<std::string> componentsOf(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= path.size()) {
    std::size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(begin, end - begin);
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    begin = end + 1;
  }
  return parts;
}

// Whether a path's text names a directory whatever is there ("x/", "x/.", "..").
bool namesDirectory(const std::string& path) {
  if (path.back() == '/') return true;
  const std::size_t slash = path.rfind('/');
  const std::string last = path.substr(slash == std::string::npos ? 0 : slash + 1);
  return last == "." || last == "..";
}

// What a link points to, as stored.
std::optional<std::string> readLinkAt(int dirFd, const std::string& name) {
  std::string target(256, '\0');
  for (;;) {
    const ssize_t size = ::readlinkat(dirFd, name.c_str(), target.data(), target.size());
    if (size < 0) return std::nullopt;
    if (static_cast<std::size_t>(size) < target.size()) {
      target.resize(static_cast<std::size_t>(size));
      return target;
    }
    target.resize(target.size() * 2);  // possibly cut short: read again with more room
  }
}

bool isInside(const std::vector<std::string>& parts, const std::vector<std::string>& root) {
  return parts.size() >= root.size() && std::equal(root.begin(), root.end(), parts.begin());
}

enum class Want { Directory, File };

struct Walked {
  OpenDirectory directory;
  std::string name;  // Want::File: the file's name in `directory`
  bool exists = false;
  struct stat existing {};
  bool viaLinks = false;
};

// One resolution: the directory reached so far, held open, and the components still to walk.
class PathWalk {
 public:
  PathWalk(const std::string& path, const PathRule& rule,
           const std::vector<std::vector<std::string>>* allowed)
      : path_(path), rule_(rule), allowed_(allowed) {}

  Result<Walked> run(Want want) {
    if (path_.empty()) return Failure{"the path is empty"};
    if (path_.find('\0') != std::string::npos) return Failure{"the path holds a NUL byte"};
    if (want == Want::File && namesDirectory(path_)) {
      return Failure{"it names a directory, not a file"};
    }
    if (Status started = startAt(path_[0] == '/'); !started.ok()) return Failure{started.why()};
    for (const std::string& part : componentsOf(path_)) pending_.push_back(part);

    while (!pending_.empty()) {
      std::string name = std::move(pending_.front());
      pending_.pop_front();
      const bool last = pending_.empty();
      if (name == "..") {
        if (last && want == Want::File) return Failure{"it names a directory, not a file"};
        if (Status up = goUp(); !up.ok()) return Failure{up.why()};
        continue;
      }
      if (last && want == Want::File) {
        Status file = atFile(name);
        if (!file.ok()) return Failure{file.why()};
        if (done_) return finish(std::move(name));
        continue;  // a link: its target's components are pending now
      }
      if (Status step = intoDirectory(name); !step.ok()) return Failure{step.why()};
    }
    if (want == Want::File) {
      // Links ending in a directory ("x -> /tmp/dir/") leave no name.
      return Failure{"it names a directory, not a file"};
    }
    if (Status inside = checkAllowed("it is"); !inside.ok()) return Failure{inside.why()};
    Walked walked;
    walked.directory = OpenDirectory(dir_.release(), joined(parts_));
    walked.viaLinks = viaLinks_;
    return walked;
  }

 private:
  // Owns one descriptor.
  class Fd {
   public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    void reset(int fd = -1) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = fd;
    }
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

   private:
    int fd_ = -1;
  };

  Status startAt(bool root) {
    if (root) {
      parts_.clear();
      dir_.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (dir_.get() < 0) return Failure{"/: " + reason(errno)};
      return {};
    }
    // A relative path starts where the process is: its real path, every link followed.
    std::string cwd(256, '\0');
    while (::getcwd(cwd.data(), cwd.size()) == nullptr) {
      if (errno != ERANGE) return Failure{"the current directory: " + reason(errno)};
      cwd.resize(cwd.size() * 2);
    }
    cwd.resize(cwd.find('\0'));
    parts_ = componentsOf(cwd);
    dir_.reset(::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir_.get() < 0) return Failure{"the current directory: " + reason(errno)};
    return {};
  }

  std::string here(const std::string& name) const {
    std::string path = joined(parts_);
    if (path.back() != '/') path += '/';
    return path + name;
  }

  // Failure naming the part at fault, unless that is the whole path as given.
  Failure failAt(const std::string& part, const std::string& why) const {
    return Failure{part == path_ ? why : part + ": " + why};
  }

  Status goUp() {
    if (parts_.empty()) return {};  // "/.." is "/"
    // ".." is never a link: it is the directory above the one held, the real one.
    const int up = ::openat(dir_.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (up < 0) return failAt(joined(parts_) + "/..", reason(errno));
    dir_.reset(up);
    parts_.pop_back();
    return {};
  }

  // A directory on the way: entered, or made first, or a link followed.
  Status intoDirectory(const std::string& name) {
    const int child =
        ::openat(dir_.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child >= 0) {
      dir_.reset(child);
      parts_.push_back(name);
      return {};
    }
    struct stat info {};
    if (::fstatat(dir_.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
      const int error = errno;
      if (error != ENOENT || !rule_.createDirectories) return failAt(here(name), reason(error));
      return makeDirectory(name);
    }
    if (S_ISLNK(info.st_mode)) return follow(name, info);
    if (S_ISDIR(info.st_mode)) {
      // A directory that cannot be opened even as a path (no search permission above it).
      return failAt(here(name), reason(errno));
    }
    return failAt(here(name), "not a directory");
  }

  Status makeDirectory(const std::string& name) {
    if (Status inside = checkAllowed("making " + here(name) + " would be"); !inside.ok()) {
      return inside;
    }
    if (++directoryRetries_ > kMaxDirectoryRetries) {
      return failAt(here(name), "made, but removed again before it could be opened");
    }
    if (::mkdirat(dir_.get(), name.c_str(), 0777) != 0 && errno != EEXIST) {
      return Failure{"cannot make " + here(name) + ": " + reason(errno)};
    }
    pending_.push_front(name);  // entered as any directory
    return {};
  }

  // The last component of a file's path: a file (or none yet), or a link to follow.
  Status atFile(const std::string& name) {
    struct stat info {};
    if (::fstatat(dir_.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return failAt(here(name), reason(errno));
      done_ = true;  // a new file (a dangling link's target is made, too)
      return {};
    }
    if (S_ISLNK(info.st_mode)) return follow(name, info);
    if (!S_ISREG(info.st_mode)) {
      if (!viaLinks_) {
        return failAt(here(name), std::string("it is ") + describeFileType(info.st_mode) +
                                      ", not a regular file");
      }
      return Failure{"it links to " + here(name) + ", " + describeFileType(info.st_mode) +
                     ", not a regular file"};
    }
    done_ = true;
    exists_ = true;
    existing_ = info;
    return {};
  }

  // Follows the link `name` of the directory held, as fs.protected_symlinks would: its
  // target's components are walked next, from the root when it is absolute.
  Status follow(const std::string& name, const struct stat& link) {
    if (++hops_ > kMaxLinkHops) return Failure{reason(ELOOP)};
    struct stat directory {};
    if (::fstat(dir_.get(), &directory) != 0) return failAt(joined(parts_), reason(errno));
    const bool shared = (directory.st_mode & S_ISVTX) != 0 && (directory.st_mode & S_IWOTH) != 0;
    if (shared && link.st_uid != directory.st_uid && link.st_uid != ::geteuid()) {
      return Failure{"not following " + here(name) +
                     ": it is a symbolic link of another user (uid " + std::to_string(link.st_uid) +
                     ") in the shared directory " + joined(parts_) +
                     " (sticky and writable by all), so it may point anywhere; remove it or "
                     "write elsewhere"};
    }
    const std::optional<std::string> target = readLinkAt(dir_.get(), name);
    if (!target) return failAt(here(name), reason(errno));
    if (target->empty()) return failAt(here(name), reason(ENOENT));
    if (target->find('\0') != std::string::npos) return failAt(here(name), reason(EINVAL));
    viaLinks_ = true;
    const std::vector<std::string> parts = componentsOf(*target);
    pending_.insert(pending_.begin(), parts.begin(), parts.end());
    if ((*target)[0] == '/') return startAt(true);
    return {};
  }

  // Whether the directory held is inside an allowed one (or there are none to be inside).
  Status checkAllowed(const std::string& what) const {
    if (allowed_ == nullptr) return {};
    for (const std::vector<std::string>& root : *allowed_) {
      if (isInside(parts_, root)) return {};
    }
    std::string list;
    for (const std::string& dir : rule_.allowedDirectories) {
      list += (list.empty() ? "" : ", ") + dir;
    }
    if (allowed_->empty()) {
      return Failure{"none of the directories allowed (" + list + ") exists"};
    }
    std::string why =
        what + " in " + joined(parts_) + ", outside the directories allowed (" + list + ")";
    if (!rule_.confinedBecause.empty()) why += ": " + rule_.confinedBecause;
    return Failure{std::move(why)};
  }

  Result<Walked> finish(std::string name) {
    if (Status inside = checkAllowed("it lands"); !inside.ok()) return Failure{inside.why()};
    Walked walked;
    const std::string path = joined(parts_);
    walked.directory = OpenDirectory(dir_.release(), path);
    walked.name = std::move(name);
    walked.exists = exists_;
    walked.existing = existing_;
    walked.viaLinks = viaLinks_;
    return walked;
  }

  const std::string& path_;
  const PathRule& rule_;
  const std::vector<std::vector<std::string>>* allowed_;  // resolved; null: anywhere
  Fd dir_;
  std::vector<std::string> parts_;  // dir_'s real path
  std::deque<std::string> pending_;
  int hops_ = 0;
  int directoryRetries_ = 0;
  bool viaLinks_ = false;
  bool done_ = false;
  bool exists_ = false;
  struct stat existing_ {};
};

// The rule's allowed directories, resolved (links followed, nothing made); those missing are
// left out. Null when the rule allows anywhere.
std::optional<std::vector<std::vector<std::string>>> resolvedAllowed(const PathRule& rule) {
  if (rule.allowedDirectories.empty()) return std::nullopt;
  std::vector<std::vector<std::string>> roots;
  const PathRule plain;
  for (const std::string& dir : rule.allowedDirectories) {
    if (dir.empty() || dir[0] != '/') continue;  // only absolute ones mean a fixed place
    Result<Walked> walked = PathWalk(dir, plain, nullptr).run(Want::Directory);
    if (walked.ok()) roots.push_back(componentsOf(walked.value().directory.path()));
  }
  return roots;
}

Result<Walked> walk(const std::string& path, const PathRule& rule, Want want) {
  const std::optional<std::vector<std::vector<std::string>>> allowed = resolvedAllowed(rule);
  return PathWalk(path, rule, allowed ? &*allowed : nullptr).run(want);
}

}  // namespace

OpenDirectory::~OpenDirectory() {
  if (fd_ >= 0) ::close(fd_);
}

OpenDirectory::OpenDirectory(OpenDirectory&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

OpenDirectory& OpenDirectory::operator=(OpenDirectory&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

std::string OpenDirectory::pathOf(const std::string& name) const {
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

Result<OpenDirectory> openDirectory(const std::string& path, const PathRule& rule) {
  Result<Walked> walked = walk(path, rule, Want::Directory);
  if (!walked.ok()) return Failure{walked.why()};
  return std::move(walked.value().directory);
}

Result<OutputLocation> resolveOutput(const std::string& path, const PathRule& rule) {
  Result<Walked> walked = walk(path, rule, Want::File);
  if (!walked.ok()) return Failure{walked.why()};
  OutputLocation location;
  location.directory = std::move(walked.value().directory);
  location.name = std::move(walked.value().name);
  location.exists = walked.value().exists;
  location.existing = walked.value().existing;
  location.viaLinks = walked.value().viaLinks;
  return location;
}

Status probeWritable(const OpenDirectory& directory, const std::string& name) {
  // Hidden, and short enough for NAME_MAX whatever the name's length.
  const std::string probe = "." + name.substr(0, 64) + ".probe." + std::to_string(::getpid()) +
                            "." + std::to_string(distinctTag());
  const int fd = ::openat(directory.fd(), probe.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Failure{directory.path() + ": " + reason(errno)};
  ::close(fd);
  ::unlinkat(directory.fd(), probe.c_str(), 0);
  return {};
}

Status removeOutput(const std::string& path, const PathRule& rule) {
  Result<OutputLocation> location = resolveOutput(path, rule);
  if (!location.ok()) return Failure{location.why()};
  if (!location.value().exists) return {};
  if (::unlinkat(location.value().directory.fd(), location.value().name.c_str(), 0) != 0 &&
      errno != ENOENT) {
    return Failure{location.value().path() + ": " + reason(errno)};
  }
  return {};
}

uint32_t distinctTag() {
  static std::atomic<uint64_t> counter{0};
  uint64_t x = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  x ^= counter.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ULL;
  x ^= static_cast<uint64_t>(::getpid()) << 32;
  // splitmix64's finaliser spreads every input bit over the tag.
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return static_cast<uint32_t>(x);
}

const char* describeFileType(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

}  // namespace kinetrace::detail
