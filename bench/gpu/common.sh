# Shared by the bench/gpu scripts: argument defaults, building kinetrace when needed,
# finding Python with torch. Source it; it sets SRC_DIR, BUILD_DIR, OUT_DIR, KINETRACE, PYTHON.
#
#   script.sh [BUILD_DIR] [OUT_DIR]      defaults: /tmp/kinetrace-gpu-build, ./gpu-results

set -u -o pipefail

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH_DIR=$SRC_DIR/bench/gpu
BUILD_DIR=${1:-/tmp/kinetrace-gpu-build}
OUT_DIR=${2:-./gpu-results}
PYTHON=${PYTHON:-python3}
KINETRACE=$BUILD_DIR/bin/kinetrace

mkdir -p "$OUT_DIR" || exit 1
OUT_DIR=$(cd "$OUT_DIR" && pwd)

# Builds the command and the injection library (Release) unless both are there already.
ensure_built() {
  if [[ -x $KINETRACE && -f $BUILD_DIR/lib/libkinetrace_injection.so ]]; then
    return 0
  fi
  echo "building kinetrace in $BUILD_DIR" >&2
  local generator=()
  if command -v ninja > /dev/null; then generator=(-G Ninja); fi
  cmake -S "$SRC_DIR" -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DKINETRACE_BUILD_TESTS=OFF -DKINETRACE_BUILD_EXAMPLES=OFF > "$BUILD_DIR.configure.log" 2>&1 \
    || { cat "$BUILD_DIR.configure.log" >&2; return 1; }
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target kinetrace_cli kinetrace_injection >&2 || return 1
  [[ -x $KINETRACE && -f $BUILD_DIR/lib/libkinetrace_injection.so ]] || {
    echo "the build produced no $KINETRACE or injection library (CUDA toolkit found?)" >&2
    return 1
  }
}

# The median step time (ms) on a torch_train.py RESULT line in a log.
median_of() {
  sed -n 's/.*median_step_ms=\([0-9.]*\).*/\1/p' "$1" | head -n 1
}
