// Runs a fuzz target's LLVMFuzzerTestOneInput on inputs kept in the repository, in builds
// without libFuzzer (GCC, CI's ASan and TSan stages): every seed and every input that once
// crashed is run again by ctest, so what was fixed stays fixed without clang.
//
//   <name>_fuzz_replay PATH...     each file, or each file of each directory (not hidden
//                                  ones, not recursively), in name order
//
// A finding aborts, as under libFuzzer; "replaying FILE" before each input names the culprit.

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool isDirectory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// The files to replay for one argument; false when it names nothing.
bool inputsOf(const std::string& path, std::vector<std::string>* inputs) {
  if (!isDirectory(path)) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return false;
    inputs->push_back(path);
    return true;
  }
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return false;
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (!isDirectory(path + "/" + name)) inputs->push_back(path + "/" + name);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!inputsOf(argv[i], &inputs)) {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE|DIRECTORY... (no inputs given)\n", argv[0]);
    return 2;
  }
  double slowest = 0;
  std::string slowestInput;
  for (const std::string& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), {});
    if (!file.good() && !file.eof()) {
      std::fprintf(stderr, "cannot read %s\n", input.c_str());
      return 2;
    }
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", input.c_str(), bytes.size());
    const auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > slowest) {
      slowest = seconds;
      slowestInput = input;
    }
  }
  std::fprintf(stderr, "replayed %zu inputs; the slowest took %.3f s (%s)\n", inputs.size(),
               slowest, slowestInput.c_str());
  return 0;
}
