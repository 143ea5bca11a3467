# KINETRACE_SANITIZE: build every target of the project with a sanitizer (GCC or Clang).
#
#   ""         none (default)
#   "address"  AddressSanitizer + UndefinedBehaviorSanitizer; the first error of either ends
#              the program (-fno-sanitize-recover=all)
#   "thread"   ThreadSanitizer
#
#   cmake -S . -B build-asan -DKINETRACE_SANITIZE=address && cmake --build build-asan
#   ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
#     ctest --test-dir build-asan --output-on-failure
# (intercept_tls_get_addr=0: .ci/run says why.)
#
# Included from the top-level CMakeLists.txt before any target is defined, so the flags reach
# every target (compile and link). CUDA sources get them through nvcc's -Xcompiler, for the
# host code; device code is not instrumented. Running a sanitized program on a GPU needs
# ASAN_OPTIONS=protect_shadow_gap=0 (the CUDA driver maps memory where ASan's shadow gap is).

set(KINETRACE_SANITIZE "" CACHE STRING "Sanitizer for every target: \"\", address (ASan + UBSan) or thread (TSan)")
set_property(CACHE KINETRACE_SANITIZE PROPERTY STRINGS "" address thread)

if(KINETRACE_SANITIZE STREQUAL "")
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  message(FATAL_ERROR "KINETRACE_SANITIZE needs GCC or Clang, not ${CMAKE_CXX_COMPILER_ID}")
endif()
if(KINETRACE_SANITIZE STREQUAL "address")
  set(_kinetrace_sanitize_flags -fsanitize=address -fsanitize=undefined -fno-sanitize-recover=all)
elseif(KINETRACE_SANITIZE STREQUAL "thread")
  set(_kinetrace_sanitize_flags -fsanitize=thread)
else()
  message(FATAL_ERROR "KINETRACE_SANITIZE is '${KINETRACE_SANITIZE}'; use \"\", address or thread")
endif()
list(APPEND _kinetrace_sanitize_flags -fno-omit-frame-pointer)

# nvcc passes -Xcompiler's value to the host compiler split at commas: one flag per item.
list(JOIN _kinetrace_sanitize_flags "," _kinetrace_sanitize_xcompiler)
add_compile_options(
  "$<$<COMPILE_LANGUAGE:C,CXX>:${_kinetrace_sanitize_flags}>"
  "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${_kinetrace_sanitize_xcompiler}>")
# Every link, CUDA programs' included: CMake links those with the host compiler.
add_link_options(${_kinetrace_sanitize_flags})
message(STATUS "kinetrace: sanitizer ${KINETRACE_SANITIZE} (${_kinetrace_sanitize_flags})")
