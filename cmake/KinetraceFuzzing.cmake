# KINETRACE_BUILD_FUZZERS: build the libFuzzer targets of fuzz/ (<name>_fuzzer), Clang only.
#
#   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DKINETRACE_BUILD_FUZZERS=ON \
#     -DKINETRACE_BUILD_TESTS=OFF -DKINETRACE_BUILD_EXAMPLES=OFF -DKINETRACE_WITH_CUDA=OFF
#   cmake --build build-fuzz --target kinetrace_fuzzers
# (scripts/fuzz.sh does this and runs them.)
#
# Every target of the build is compiled with -fsanitize=fuzzer-no-link (libFuzzer's coverage
# feedback, without its main) on top of AddressSanitizer + UndefinedBehaviorSanitizer
# (KINETRACE_SANITIZE=address, set here when no sanitizer is chosen): a fuzzer finds what the
# code does wrong, not only where it crashes. Only the fuzzers link libFuzzer itself
# (-fsanitize=fuzzer, fuzz/CMakeLists.txt).
#
# Included from the top-level CMakeLists.txt before any target is defined, and before
# KinetraceSanitizers.cmake, which reads KINETRACE_SANITIZE.

option(KINETRACE_BUILD_FUZZERS "Build the libFuzzer targets of fuzz/ (Clang)" OFF)
if(NOT KINETRACE_BUILD_FUZZERS)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "KINETRACE_BUILD_FUZZERS needs Clang (libFuzzer), not "
                      "${CMAKE_CXX_COMPILER_ID}: configure with -DCMAKE_CXX_COMPILER=clang++ "
                      "(scripts/setup.sh --fuzz installs it)")
endif()
if(NOT KINETRACE_SANITIZE)
  set(KINETRACE_SANITIZE address CACHE STRING
      "Sanitizer for every target: \"\", address (ASan + UBSan) or thread (TSan)" FORCE)
elseif(NOT KINETRACE_SANITIZE STREQUAL "address")
  message(FATAL_ERROR "KINETRACE_BUILD_FUZZERS goes with KINETRACE_SANITIZE=address, "
                      "not ${KINETRACE_SANITIZE}")
endif()
add_compile_options(-fsanitize=fuzzer-no-link)
add_link_options(-fsanitize=fuzzer-no-link)
message(STATUS "kinetrace: libFuzzer targets (fuzz/)")
