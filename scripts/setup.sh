#!/usr/bin/env bash
# Installs what building kinetrace needs, where it is missing, with the system's package
# manager; says what it installs and why. Both README commands and CI run it first.
#
#   scripts/setup.sh            what the build and the tests need
#   scripts/setup.sh --bench    also Google Benchmark (for -DKINETRACE_BUILD_BENCHMARKS=ON)
#   scripts/setup.sh --browser  also Chromium (the test that opens `kinetrace analyze --html`
#                               reports in a browser; without it that one test is left out)
#   scripts/setup.sh --fuzz     also Clang and its libFuzzer runtime (scripts/fuzz.sh)
#   scripts/setup.sh --check    only lists what is missing; exit status 1 if anything is
#
# Debian and Ubuntu (apt-get) are supported. Elsewhere, or without the right to install,
# it prints the list and exits 1, so the build never starts half-equipped. The CUDA toolkit
# is optional and never installed here: without it kinetrace builds CPU-only.
set -euo pipefail

want_bench=0
want_browser=0
want_fuzz=0
check_only=0
for arg in "$@"; do
  case $arg in
    --bench) want_bench=1 ;;
    --browser) want_browser=1 ;;
    --fuzz) want_fuzz=1 ;;
    --check) check_only=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (known: --bench, --browser, --fuzz, --check)" >&2; exit 2 ;;
  esac
done

# package: the file or command that shows it is there
declare -A probe=(
  [cmake]=cmd:cmake
  [g++]=cmd:g++
  [make]=cmd:make
  [python3]=cmd:python3
  [libfmt-dev]=file:/usr/include/fmt/format.h
  [nlohmann-json3-dev]=file:/usr/include/nlohmann/json.hpp
  [libgtest-dev]=file:/usr/include/gtest/gtest.h
  [libgmock-dev]=file:/usr/include/gmock/gmock.h
  [zlib1g-dev]=file:/usr/include/zlib.h
  [libdeflate-dev]=file:/usr/include/libdeflate.h
  # the .pftrace check decodes with Perfetto's .proto files (test/output/perfetto_import_check.py)
  [protobuf-compiler]=cmd:protoc
  [python3-protobuf]=file:/usr/lib/python3/dist-packages/google/protobuf/__init__.py
)
order=(cmake g++ make python3 libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev zlib1g-dev libdeflate-dev)
order+=(protobuf-compiler python3-protobuf)
if [[ $want_bench == 1 ]]; then
  probe[libbenchmark-dev]=file:/usr/include/benchmark/benchmark.h
  order+=(libbenchmark-dev)
fi
if [[ $want_browser == 1 ]]; then
  probe[chromium]=cmd:chromium
  # The font the report's labels are measured in (the browser test checks none is cut off).
  probe[fonts-dejavu-core]=file:/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
  order+=(chromium fonts-dejavu-core)
fi

if [[ $want_fuzz == 1 ]]; then
  probe[clang]=cmd:clang++
  order+=(clang)
fi

present() {
  local how=${1%%:*} what=${1#*:}
  if [[ $how == cmd ]]; then command -v "$what" >/dev/null 2>&1; else [[ -e $what ]]; fi
}

# The tests that run the real HTA beside `kinetrace analyze` and `kinetrace diff`
# (test/analysis/hta_*referee.py): HTA needs pandas and PyYAML, its critical path networkx;
# without them those tests are skipped.
probe[python3-pandas]=file:/usr/lib/python3/dist-packages/pandas/__init__.py
probe[python3-yaml]=file:/usr/lib/python3/dist-packages/yaml/__init__.py
probe[python3-networkx]=file:/usr/lib/python3/dist-packages/networkx/__init__.py
order+=(python3-pandas python3-yaml python3-networkx)

# libFuzzer: whether clang++ links a fuzz target. Debian ships it apart from Clang, in
# libclang-rt-N-dev (N: Clang's major version; bookworm and later), in libclang-common-N-dev
# before that; Clang itself only recommends it, and recommendations are not installed here.
libfuzzer_links() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local dir status
  dir=$(mktemp -d)
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
    > "$dir/target.cpp"
  status=0
  clang++ -fsanitize=fuzzer "$dir/target.cpp" -o "$dir/target" >/dev/null 2>&1 || status=1
  rm -rf "$dir"
  return $status
}
libfuzzer_package() {
  local major
  major=$(clang++ -dumpversion | cut -d. -f1)
  if apt-cache show "libclang-rt-$major-dev" >/dev/null 2>&1; then
    echo "libclang-rt-$major-dev"
  else
    echo "libclang-common-$major-dev"
  fi
}

missing=()
for package in "${order[@]}"; do
  present "${probe[$package]}" || missing+=("$package")
done
# Without Clang yet, its libFuzzer package is known once Clang is installed (below).
if [[ $want_fuzz == 1 ]] && command -v clang++ >/dev/null 2>&1 && ! libfuzzer_links; then
  if command -v apt-cache >/dev/null 2>&1; then
    missing+=("$(libfuzzer_package)")
  else
    missing+=("libFuzzer (Clang's compiler-rt)")
  fi
fi

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: every build dependency is installed"
  exit 0
fi
echo "setup: missing: ${missing[*]}"
[[ $check_only == 1 ]] && exit 1

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: no apt-get here; install the packages above (or your system's equivalents:" \
       "CMake >= 3.25, a C++17 compiler, fmt, nlohmann_json, GoogleTest, zlib, libdeflate) and run again" >&2
  exit 1
fi
sudo=()
if [[ $(id -u) != 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "setup: installing needs root; run as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [[ $want_fuzz == 1 ]] && ! libfuzzer_links; then
  runtime=$(libfuzzer_package)
  echo "setup: installing $runtime (libFuzzer for the Clang just installed) with apt-get"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$runtime" >/dev/null
  if ! libfuzzer_links; then
    echo "setup: clang++ -fsanitize=fuzzer still links nothing after installing $runtime" >&2
    exit 1
  fi
fi
echo "setup: done"
