#!/usr/bin/env bash
# What the tracer costs a traced process in code, and how the tree is shaped: the figures of
# bench/README.md's footprint row.
#
#   bench/footprint.sh BUILD_DIR [SOURCE_DIR]
#
# BUILD_DIR: a build of SOURCE_DIR (default: this checkout) with its libraries built
# (targets kinetrace, kinetrace_injection, kineto). Prints a Markdown table:
#   - each shared library's size on disk, its size stripped (what is mapped from it), and the
#     symbols it exports;
#   - the bytes a process maps from libkinetrace.so when it loads it, and how many of those are
#     resident right after loading (/proc/self/smaps of a process that dlopen()s it);
#   - whether the offline tools' entry points (analysis, the HTML report, merging, the readers)
#     are in the library;
#   - lines of C++ per layer (src/<layer>, tools/, libkineto_api/);
#   - the repeated-code pairs that the `duplicates` command finds in the product code (src/,
#     include/, tools/, libkineto_api/), when that command is on the PATH;
#   - the result of scripts/check_layers.py, when SOURCE_DIR has it.
set -euo pipefail

build=${1:?usage: bench/footprint.sh BUILD_DIR [SOURCE_DIR]}
source_dir=${2:-$(cd "$(dirname "$0")/.." && pwd)}
build=$(cd "$build" && pwd)
lib_dir=$build/lib
[[ -d $lib_dir ]] || lib_dir=$build/lib64

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| what | value |"
echo "|---|---|"
for name in libkinetrace.so libkinetrace_injection.so libkineto_api.so; do
  file=$(readlink -f "$lib_dir/$name" 2> /dev/null || true)
  if [[ ! -f $file ]]; then
    echo "| $name | not built |"
    continue
  fi
  strip -o "$work/stripped.so" "$file"
  exported=$(nm -D --defined-only "$file" | wc -l)
  printf '| %s | %s bytes on disk, %s stripped, %s exported symbols |\n' \
    "$name" "$(stat -c %s "$file")" "$(stat -c %s "$work/stripped.so")" "$exported"
done

# Mapped and resident bytes of libkinetrace.so in a process that loads it and does nothing.
python3 - "$lib_dir/libkinetrace.so" << 'EOF'
import ctypes, os, sys
path = os.path.realpath(sys.argv[1])
ctypes.CDLL(path)
mapped = resident = 0
current = None
with open("/proc/self/smaps") as smaps:
    for line in smaps:
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:
            current = fields[5] if len(fields) >= 6 else ""
            if current == path:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                mapped += end - start
        elif current == path and fields[0] == "Rss:":
            resident += int(fields[1]) * 1024
print(f"| libkinetrace.so in a process that loads it | {mapped} bytes mapped, {resident} resident |")
EOF

offline=$(nm -C "$(readlink -f "$lib_dir/libkinetrace.so")" |
  grep -cE 'reportHtml|analyzeTraces|writeMerged|openTraceReader|ChromeTraceReader|PerfettoTraceReader' || true)
echo "| offline tools' symbols in libkinetrace.so | $offline |"

lines() { find "$@" -name '*.cpp' -o -name '*.h' -o -name '*.cu' 2> /dev/null | xargs cat 2> /dev/null | wc -l; }
layers=""
for dir in "$source_dir"/src/*/; do
  layers+="$(basename "$dir") $(lines "$dir"), "
done
layers+="tools $(lines "$source_dir/tools"), libkineto_api $(lines "$source_dir/libkineto_api/src"), include $(lines "$source_dir/include")"
echo "| lines of C++ per folder | $layers |"

if command -v duplicates > /dev/null; then
  mkdir "$work/product"
  for dir in src include tools libkineto_api; do cp -r "$source_dir/$dir" "$work/product/"; done
  pairs=$(cd "$work/product" && duplicates --most 1 --seconds 120 | head -n 1)
  echo "| repeated code in src/, include/, tools/, libkineto_api/ (\`duplicates\`) | $pairs |"
fi

if [[ -f $source_dir/scripts/check_layers.py ]]; then
  if result=$(python3 "$source_dir/scripts/check_layers.py" "$source_dir" 2>&1); then
    echo "| include rules (scripts/check_layers.py) | $(echo "$result" | tail -n 1) |"
  else
    echo "| include rules (scripts/check_layers.py) | FAILED: $(echo "$result" | wc -l) lines |"
  fi
else
  echo "| include rules | no check in this tree |"
fi
