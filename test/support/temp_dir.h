#pragma once

// A directory of its own for a test, removed with everything in it at the end of the scope.

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace kinetrace::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "kinetrace_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern.c_str();
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    // A test may have made it read-only; removal needs write permission.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Empty when the directory could not be made.
  const std::string& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return std::filesystem::path(path_) / name; }

  // The names in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

// A directory of its own outside /tmp, for tests of what must never be written outside the
// allowed directories (which always include /tmp): beside the working directory, in $HOME,
// /var/tmp or /dev/shm, the first of those not under /tmp that takes one. Removed with
// everything in it at the end of the scope; path() is empty when none could be made.
class TempDirOutsideTmp {
 public:
  explicit TempDirOutsideTmp(const std::string& prefix = "kinetrace_outside") {
    std::error_code error;
    const std::filesystem::path tmp = std::filesystem::canonical("/tmp", error);
    std::vector<std::filesystem::path> parents = {std::filesystem::current_path(error)};
    if (const char* home = std::getenv("HOME")) parents.emplace_back(home);
    parents.emplace_back("/var/tmp");
    parents.emplace_back("/dev/shm");
    for (const std::filesystem::path& parent : parents) {
      const std::filesystem::path resolved = std::filesystem::canonical(parent, error);
      if (error || resolved.empty() || underTmp(resolved, tmp)) continue;
      std::string pattern = (resolved / (prefix + "_XXXXXX")).string();
      if (::mkdtemp(pattern.data()) != nullptr) {
        path_ = pattern.c_str();
        return;
      }
    }
  }
  ~TempDirOutsideTmp() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDirOutsideTmp(const TempDirOutsideTmp&) = delete;
  TempDirOutsideTmp& operator=(const TempDirOutsideTmp&) = delete;

  const std::string& path() const { return path_; }

 private:
  static bool underTmp(const std::filesystem::path& path, const std::filesystem::path& tmp) {
    const auto [tmpEnd, pathAt] = std::mismatch(tmp.begin(), tmp.end(), path.begin(), path.end());
    return !tmp.empty() && tmpEnd == tmp.end();
  }

  std::string path_;
};

// The whole content of a file ("" when it cannot be read).
inline std::string fileContents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void writeFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace kinetrace::testing
