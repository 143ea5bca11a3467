#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "support/text.h"

// Small file-system helpers of the kinetrace command. None throws but readSmallFile and
// refuseOutputOverInput: a path that cannot be read reads as missing or empty.

namespace kinetrace::cli {

bool isRegularFile(const std::string& path);
bool isDirectory(const std::string& path);

// The bytes of a small file the user names (a configuration): a regular file (a link to
// one is followed) of at most `maxBytes`. Throws kinetrace::Error naming it otherwise: a
// device or FIFO could make the read endless. Files others may have put in place are read
// with detail::readRegularFile (analysis/regular_file.h) instead, which follows no link.
std::string readSmallFile(const std::string& path, std::size_t maxBytes);

// The names in `dir` ("." and ".." included), sorted; none when it cannot be read.
std::vector<std::string> listDirectory(const std::string& dir);

using detail::endsWith;  // support/text.h

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
