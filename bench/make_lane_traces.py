#!/usr/bin/env python3
"""Writes a Chrome JSON trace whose slices are hard to lay on .pftrace lanes, to time
`kinetrace convert IN OUT.pftrace` on them:

    make_lane_traces.py OUT.json [--shape SHAPE] [--count N] [--flows]

Shapes (N slices each, on one track):
  crossing  N kernels on one stream, [i, i + N] us: each crosses every other, so each needs
            a lane of its own (kernels overlapping on a stream, taken to the extreme)
  nested    N host ranges one inside the other, [i, 2N - i] us: one lane, N deep
  reverse   N kernels apart from each other, written from the last to the first
  empty     N empty slices at one time

--flows adds a launch arrow to each slice (a flow start on a host thread, its end at the
slice's start), so that the writer looks up the lane holding each arrow's time.
"""
import argparse
import json


def slices(shape, n):
    """(ts, dur) of each slice, in microseconds, in file order."""
    if shape == "crossing":
        return ((i, n) for i in range(n))
    if shape == "nested":
        return ((i, 2 * (n - i)) for i in range(n))
    if shape == "reverse":
        return ((2 * i, 1) for i in reversed(range(n)))
    if shape == "empty":
        return ((0, 0) for _ in range(n))
    raise ValueError(shape)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--shape", choices=["crossing", "nested", "reverse", "empty"], default="crossing")
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--flows", action="store_true")
    args = p.parse_args()

    with open(args.out, "w") as out:
        out.write('{"schemaVersion": 1, "traceEvents": [\n')
        first = True

        def write(event):
            nonlocal first
            out.write(("" if first else ",\n") + json.dumps(event, separators=(",", ":")))
            first = False

        for i, (ts, dur) in enumerate(slices(args.shape, args.count)):
            write({"ph": "X", "cat": "kernel", "name": f"kernel {i % 16}", "pid": 0, "tid": 7,
                   "ts": ts, "dur": dur, "args": {"correlation": i + 1, "stream": 7}})
            if args.flows:
                write({"ph": "s", "id": i + 1, "pid": 100, "tid": 100, "ts": ts, "cat": "ac2g",
                       "name": "ac2g"})
                write({"ph": "f", "id": i + 1, "pid": 0, "tid": 7, "ts": ts, "cat": "ac2g",
                       "name": "ac2g", "bp": "e"})
        out.write("\n]}\n")


if __name__ == "__main__":
    main()
