#!/usr/bin/env python3
"""Runs a command and says its wall time and the peak of the memory its whole process tree
held at once (the sum of the resident sets of the command and every process it started,
read from /proc every 50 ms): the figure that compares a program reading with threads
against one reading with a pool of processes, which GNU time's largest-process figure
would not.

    tree_peak.py [--out FILE] -- COMMAND...

Prints (and writes to FILE) one line: "wall_s=12.34 peak_mb=567.8 rc=0".
"""
import argparse
import os
import subprocess
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def children_of():
    """{parent pid: [child pids]} of every process now."""
    tree = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        tree.setdefault(parent, []).append(int(name))
    return tree


def tree_rss_bytes(root):
    tree, total, todo = children_of(), 0, [root]
    while todo:
        pid = todo.pop()
        todo += tree.get(pid, [])
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except OSError:
            pass
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("no command given")
    start = time.monotonic()
    process = subprocess.Popen(command)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss_bytes(process.pid))
        time.sleep(0.05)
    line = f"wall_s={time.monotonic() - start:.2f} peak_mb={peak / 1e6:.1f} rc={process.returncode}"
    print(line, file=sys.stderr)
    if args.out:
        with open(args.out, "w") as f:
            f.write(line + "\n")
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
