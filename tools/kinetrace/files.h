#pragma once

#include <string>
#include <vector>

// Small file-system helpers of the kinetrace command. None throws: a path that cannot be
// read reads as missing or empty.

namespace kinetrace::cli {

bool isRegularFile(const std::string& path);
bool isDirectory(const std::string& path);

// The file's bytes; "" when it cannot be read.
std::string readFile(const std::string& path);

// The names in `dir` ("." and ".." included), sorted; none when it cannot be read.
std::vector<std::string> listDirectory(const std::string& dir);

bool endsWith(const std::string& text, const std::string& suffix);

// "/a/b/c.json" -> "c.json"
std::string baseName(const std::string& path);

}  // namespace kinetrace::cli
