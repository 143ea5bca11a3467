// Process and thread identities, as libkineto reports them.

#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ThreadUtil.h"

namespace libkineto {
namespace {

// Cached per thread and per process: PyTorch asks for them for every op it records. A
// forked child resets them (resetTLS), as its ids differ.
thread_local int32_t tSystemThreadId = 0;
thread_local int32_t tThreadId = 0;
std::atomic<int32_t> gProcessId{0};
std::atomic<int32_t> gNextThreadId{1};

// The fields of /proc/PID/stat after the command name, which may hold spaces and ')'.
std::vector<std::string> statFieldsAfterName(int32_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::vector<std::string> fields;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return fields;
  std::istringstream rest(text.substr(close + 1));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

}  // namespace

int32_t systemThreadId(bool cache) {
  if (!cache || tSystemThreadId == 0) {
    tSystemThreadId = static_cast<int32_t>(::syscall(SYS_gettid));
  }
  return tSystemThreadId;
}

int32_t threadId() {
  if (tThreadId == 0) tThreadId = gNextThreadId.fetch_add(1, std::memory_order_relaxed);
  return tThreadId;
}

bool setThreadName(const std::string& name) {
  // The kernel keeps 15 characters.
  return ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str()) == 0;
}

std::string getThreadName() {
  char name[64] = {};
  if (::pthread_getname_np(::pthread_self(), name, sizeof name) != 0) return "Unknown";
  return name;
}

int32_t pidNamespace(ino_t& ns) {
  struct stat info {};
  if (::stat("/proc/self/ns/pid", &info) != 0) return -1;
  ns = info.st_ino;
  return 0;
}

int32_t processId(bool cache) {
  int32_t pid = gProcessId.load(std::memory_order_relaxed);
  if (!cache || pid == 0) {
    pid = static_cast<int32_t>(::getpid());
    gProcessId.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

std::string processName(int32_t pid) {
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  // Arguments are separated by NULs; the name is the first.
  const std::size_t end = text.find('\0');
  if (end != std::string::npos) text.resize(end);
  return text.empty() ? "Unknown" : text;
}

std::vector<std::pair<int32_t, std::string>> pidCommandPairsOfAncestors() {
  std::vector<std::pair<int32_t, std::string>> pairs;
  int32_t pid = processId();
  // Bounded, in case /proc shows a cycle.
  for (int depth = 0; depth < 64 && pid > 0; ++depth) {
    pairs.emplace_back(pid, processName(pid));
    const std::vector<std::string> fields = statFieldsAfterName(pid);
    // After the name: state, then the parent's pid.
    if (fields.size() < 2) break;
    pid = static_cast<int32_t>(std::stol(fields[1]));
  }
  return pairs;
}

void resetTLS() {
  tSystemThreadId = 0;
  tThreadId = 0;
  gProcessId.store(0, std::memory_order_relaxed);
}

}  // namespace libkineto
