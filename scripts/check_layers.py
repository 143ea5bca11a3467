#!/usr/bin/env python3
"""Checks who includes whom (docs/ARCHITECTURE.md, "Layers", and the analysis passes).

    scripts/check_layers.py [SOURCE_DIR] [--library build/lib/libkinetrace.so]

Each folder of product code may include its own headers and those of the folders listed for
it in ALLOWED, nothing else; CUDA's headers are included by the folders that talk to CUDA
only. With --library, the tracer's shared library is also checked for the offline tools'
entry points (reading, analysing, reporting, merging traces), which only the kinetrace
command may carry. Prints every violation with its file and line, then one line of totals;
exits 1 when there is a violation.
"""

import argparse
import pathlib
import re
import subprocess
import sys

# folder -> the folders whose headers it may include ("kinetrace" is the public API,
# include/kinetrace/). A folder always may include itself.
ALLOWED = {
    "include/kinetrace": set(),
    "src/support": {"kinetrace"},
    "src/model": {"kinetrace", "support"},
    "src/output": {"kinetrace", "support", "model"},
    "src/host": {"kinetrace", "support", "model"},
    "src/correlate": {"kinetrace", "support", "model", "host"},
    "src/cupti": {"kinetrace", "support", "model", "host"},
    "src/session": {"kinetrace", "support", "model", "output", "host", "correlate", "cupti"},
    "src/analysis": {"kinetrace", "support", "model", "output"},
    "src/ondemand": {"kinetrace", "support", "model"},
    "src/runfiles": {"kinetrace", "support", "model", "ondemand"},
    "src/inject": {"kinetrace", "support", "model", "session", "ondemand", "runfiles"},
    "libkineto_api/src": {"kinetrace", "support", "output", "session", "ondemand"},
    "tools/kinetrace": {"kinetrace", "support", "model", "output", "analysis", "runfiles", "session",
                        "ondemand"},
}

# System headers of CUDA, and the only folders that may include them.
CUDA_HEADERS = re.compile(r"#\s*include\s*<(cupti[a-z_]*\.h|cuda\.h|cuda_runtime[a-z_]*\.h|nvtx3/)")
CUDA_ALLOWED = {"src/cupti", "src/inject"}

QUOTED = re.compile(r'#\s*include\s*"([a-z_]+)/[^"]+"')

# Entry points of the offline tools: none may be in libkinetrace.so.
OFFLINE_SYMBOLS = re.compile(
    r"reportHtml|analyzeTraces|writeMerged|formatReport|ChromeTraceReader|PerfettoTraceReader|"
    r"openTraceReader|TraceCollector|formatSummary")


def folder_of(path, root):
    relative = path.relative_to(root).as_posix()
    for folder in ALLOWED:
        if relative.startswith(folder + "/"):
            return folder
    return None


def check_includes(root):
    violations = []
    files = includes = 0
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu") or not path.is_file():
            continue
        folder = folder_of(path, root)
        if folder is None:
            continue
        files += 1
        own = folder.split("/")[-1]
        allowed = ALLOWED[folder] | {own}
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            quoted = QUOTED.match(line.strip())
            if quoted:
                includes += 1
                if quoted.group(1) not in allowed:
                    violations.append(f"{path.relative_to(root)}:{number}: {folder} may not include "
                                      f"\"{quoted.group(1)}/...\" (it may include: "
                                      f"{', '.join(sorted(allowed))})")
            elif CUDA_HEADERS.match(line.strip()) and folder not in CUDA_ALLOWED:
                includes += 1
                violations.append(f"{path.relative_to(root)}:{number}: {folder} may not include "
                                  f"CUDA's headers (only {', '.join(sorted(CUDA_ALLOWED))} do)")
    return violations, files, includes


# The analysis passes (src/analysis/passes/, docs/ARCHITECTURE.md): each figure family's pass
# ("*_pass") is independent of the others, which only trace_analysis.cpp runs together, and
# reads the collected trace, not a file: from the rest of src/analysis a pass may include the
# collected trace's, the report's and the budget's headers only, and the fit's arithmetic
# (metric_fit.h, a pure solver), never a reader or a report.
PASSES = "src/analysis/passes"
PASS_INCLUDE = re.compile(r'#\s*include\s*"analysis/passes/(\w+_pass)\.h"')
ANALYSIS_INCLUDE = re.compile(r'#\s*include\s*"analysis/(\w+\.h)"')
PASS_MAY_INCLUDE = {"trace_analysis.h", "trace_collector.h", "spill.h", "read_budget.h",
                    "gpu_bound.h", "metric_fit.h"}


def check_passes(root):
    violations = []
    for path in sorted((root / PASSES).glob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            where = f"{path.relative_to(root)}:{number}"
            other = PASS_INCLUDE.match(line.strip())
            if other and other.group(1) != path.stem:
                violations.append(f"{where}: a pass may not include another pass "
                                  f"({other.group(1)}); trace_analysis.cpp runs them together")
            outside = ANALYSIS_INCLUDE.match(line.strip())
            if outside and outside.group(1) not in PASS_MAY_INCLUDE:
                violations.append(f"{where}: a pass reads the collected trace, not "
                                  f"analysis/{outside.group(1)} (it may include: "
                                  f"{', '.join(sorted(PASS_MAY_INCLUDE))})")
    return violations


def check_library(library):
    try:
        symbols = subprocess.run(["nm", "-C", str(library)], check=True, capture_output=True,
                                 text=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        return [f"{library}: cannot list its symbols: {error}"]
    found = sorted({line.split(" ", 2)[-1] for line in symbols.splitlines()
                    if OFFLINE_SYMBOLS.search(line)})
    shown = [f"{library}: holds an offline tool's symbol: {name}" for name in found[:5]]
    if len(found) > len(shown):
        shown.append(f"{library}: and {len(found) - len(shown)} more of the offline tools' symbols")
    return shown


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent,
                        type=pathlib.Path)
    parser.add_argument("--library", type=pathlib.Path,
                        help="libkinetrace.so, to check that it holds the tracer only")
    args = parser.parse_args()
    violations, files, includes = check_includes(args.source.resolve())
    violations += check_passes(args.source.resolve())
    if args.library:
        violations += check_library(args.library)
    for violation in violations:
        print(violation)
    library = f"; {args.library.name} checked" if args.library else ""
    print(f"{files} files, {includes} includes across folders: {len(violations)} violations{library}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
