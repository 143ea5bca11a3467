#include "files.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kinetrace/error.h"

namespace kinetrace::cli {

bool isRegularFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool isReadableStream(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && !S_ISDIR(info.st_mode);
}

void refuseOutputOverInput(const std::string& output, const std::vector<std::string>& inputs,
                           const char* command) {
  if (output.empty()) return;
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // not there yet: nothing to destroy
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      throw Error(fmt::format(
          "{}: the output {} is the input {}: writing it would destroy the trace being read; "
          "name another output",
          command, output, input));
    }
  }
}

bool isDirectory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return "";
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> listDirectory(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* handle = ::opendir(dir.c_str())) {
    while (dirent* entry = ::readdir(handle)) names.emplace_back(entry->d_name);
    ::closedir(handle);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string baseName(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

}  // namespace kinetrace::cli
