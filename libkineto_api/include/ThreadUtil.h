// kinetrace's libkineto-compatible API: process and thread identities.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace libkineto {

// The OS thread id (gettid), cached per thread unless `cache` is false.
int32_t systemThreadId(bool cache = true);
// A small id for the calling thread, stable for its life.
int32_t threadId();
bool setThreadName(const std::string& name);
std::string getThreadName();

// The process id in the root pid namespace where it can be read; `ns` gets the namespace.
int32_t pidNamespace(ino_t& ns);
int32_t processId(bool cache = true);
std::string processName(int32_t pid);
// This process and its ancestors, with their command names, from the nearest up.
std::vector<std::pair<int32_t, std::string>> pidCommandPairsOfAncestors();

// Forgets the cached thread and process ids (a forked child must).
void resetTLS();

}  // namespace libkineto
