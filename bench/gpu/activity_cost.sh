#!/usr/bin/env bash
# What each activity kind costs: the CUDA training-step example untraced and traced with
# growing activity sets, interleaved round by round (A B C ... A B C ...), medians of the
# per-run median step times. Needs a build made by test/gpu/run_all.sh (or any build with
# the examples).
#
#   bench/gpu/activity_cost.sh BUILD_DIR OUT_FILE [ROUNDS]
set -u -o pipefail
BUILD_DIR=${1:?build dir}
OUT_FILE=${2:?output markdown file}
ROUNDS=${3:-5}
EXAMPLE=$BUILD_DIR/examples/cuda_training_step
ARGS=(--steps 500 --warmup 20)
SETS=(untraced "kernel" "kernel,memcpy,memset" "kernel,memcpy,memset,launch" "default" "default,cuda_runtime,cuda_driver")
TSV=$(mktemp)

for round in $(seq 1 "$ROUNDS"); do
  for set in "${SETS[@]}"; do
    if [[ $set == untraced ]]; then
      out=$("$EXAMPLE" "${ARGS[@]}" --untraced 2>&1)
    else
      out=$(KINETRACE_ACTIVITIES="host,$set" "$EXAMPLE" "${ARGS[@]}" --output /tmp/activity_cost_trace.json 2>&1)
    fi
    us=$(echo "$out" | grep -o 'median_step_us=[0-9.]*' | cut -d= -f2)
    echo "round $round $set ${us:-nan}"
    printf '%s\t%s\t%s\n' "$round" "$set" "${us:-nan}" >>"$TSV"
  done
done

python3 - "$TSV" "$OUT_FILE" "$ROUNDS" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)" <<'PY'
import collections, datetime, statistics, sys
tsv, out, rounds, gpu = sys.argv[1:]
by = collections.OrderedDict()
for line in open(tsv):
    r, s, v = line.rstrip("\n").split("\t")
    by.setdefault(s, []).append(float(v))
base = statistics.median(by["untraced"])
lines = ["# Cost of each activity set: cuda_training_step (500 steps, 20 warm-up)", "",
         f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}; GPU, driver: {gpu}",
         f"- {rounds} rounds, every set once per round, interleaved; median of the per-run median step times",
         "- command: `bench/gpu/activity_cost.sh BUILD_DIR OUT_FILE " + rounds + "`", "",
         "| activities | median step (us) | / untraced | runs (us) |", "|---|---|---|---|"]
for s, vals in by.items():
    m = statistics.median(vals)
    lines.append(f"| {s} | {m:.1f} | {m / base:.3f} | {', '.join(f'{v:.0f}' for v in vals)} |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
