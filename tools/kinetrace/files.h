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

// Whether the path exists and is not a directory: a file, or a pipe, FIFO or /dev/stdin
// that a trace can be read from as a stream.
bool isReadableStream(const std::string& path);

// Throws kinetrace::Error when `output` is one of `inputs` (the same file by device and
// inode, whatever the names: a link, "./a" for "a"): writing it would destroy the input
// before, or while, it is read. `command` names the command in the message.
void refuseOutputOverInput(const std::string& output, const std::vector<std::string>& inputs,
                           const char* command);

}  // namespace kinetrace::cli
