// A program that uses no CUDA at all, for `kinetrace run` end-to-end tests:
//
//   host_only_program exit N        exits with status N
//   host_only_program echo          copies stdin to stdout, then exits 0
//   host_only_program signal N      raises signal N
//   host_only_program env NAME      prints the variable's value

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) return 0;
  if (std::strcmp(argv[1], "exit") == 0 && argc > 2) return std::atoi(argv[2]);
  if (std::strcmp(argv[1], "echo") == 0) {
    int c;
    while ((c = std::getchar()) != EOF) std::putchar(c);
    return 0;
  }
  if (std::strcmp(argv[1], "signal") == 0 && argc > 2) {
    raise(std::atoi(argv[2]));
    return 99;
  }
  if (std::strcmp(argv[1], "env") == 0 && argc > 2) {
    const char* value = std::getenv(argv[2]);
    std::printf("%s\n", value != nullptr ? value : "(unset)");
    return 0;
  }
  return 0;
}
