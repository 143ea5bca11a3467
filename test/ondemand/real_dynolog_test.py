#!/usr/bin/env python3
"""On-demand traces through the real dynolog daemon: starts it (a private port and socket
directory, stopped by its pid), starts a program that uses libkineto's API as PyTorch does
(kinetrace's libkineto_api.so, KINETO_USE_DAEMON=1), sends the RPC `dyno gputrace` sends,
and checks that the daemon's reply lists the program and that the program writes the trace
asked for at the path dyno prints: in duration mode, then in iteration mode.

    real_dynolog_test.py --app build/test/kineto_framework_app [--daemon PATH]

The daemon is ../shared/tools/dynolog/dynolog (or $DYNOLOG_BIN); without it the test says so
and exits 77 (skipped).
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import dyno  # noqa: E402

HERE = pathlib.Path(__file__).resolve()
DEFAULT_DAEMON = HERE.parents[3] / "shared" / "tools" / "dynolog" / "dynolog"
DEADLINE_S = 60


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def start_daemon(binary, socket_dir):
    env = dict(os.environ, KINETO_IPC_SOCKET_DIR=socket_dir,
               LD_LIBRARY_PATH=str(pathlib.Path(binary).parent / "lib"))
    daemon = subprocess.Popen(
        [binary, "--enable_ipc_monitor", "--port", "0",
         "--kernel_monitor_reporting_interval_s", "3600", "--logtostderr=1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in daemon.stderr:
        found = re.search(r"System assigned port = (\d+)", line)
        if found:
            return daemon, int(found.group(1))
    fail("the daemon ended before it listened (exit %s)" % daemon.wait())


def start_app(app, socket_dir, trace_dir):
    env = dict(os.environ, KINETO_USE_DAEMON="1", KINETO_IPC_SOCKET_DIR=socket_dir,
               ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS="0.1",
               KINETO_ONDEMAND_TRACE_DIR=trace_dir, KINETRACE_LOG_LEVEL="info")
    proc = subprocess.Popen([app, "5"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        fail("the program did not start: %r %s" % (line, proc.stderr.read()))
    return proc, int(line.split()[1])


def trigger_until_matched(port, pid, log_file, **options):
    """The daemon knows a process once it has polled: ask until the reply lists it."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        reply, paths = dyno.gputrace(port, log_file, pids=[pid], **options)
        if pid in reply.get("processesMatched", []):
            if pid not in reply.get("activityProfilersTriggered", []):
                fail("matched but not triggered: %s" % reply)
            return reply, paths
        time.sleep(0.05)
    fail("the daemon never listed pid %d" % pid)


def wait_for_file(path):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if os.path.exists(path):
            try:
                with open(path) as f:
                    return json.load(f)
            except ValueError:
                pass  # being renamed into place
        time.sleep(0.05)
    fail("no trace at %s" % path)


def ops_in(trace):
    return [e for e in trace["traceEvents"] if e.get("name") == "app::step_op"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", required=True)
    parser.add_argument("--daemon", default=os.environ.get("DYNOLOG_BIN", str(DEFAULT_DAEMON)))
    args = parser.parse_args()
    if not os.access(args.daemon, os.X_OK):
        print("SKIP: no dynolog daemon at %s (set DYNOLOG_BIN)" % args.daemon)
        return 77

    with tempfile.TemporaryDirectory(prefix="kinetrace_dyno_") as work:
        daemon, port = start_daemon(args.daemon, work)
        app = None
        try:
            if dyno.rpc(port, {"fn": "getVersion"}).get("version") is None:
                fail("getVersion gave no version")
            app, pid = start_app(args.app, work, work)

            # Duration mode: dyno gputrace --log-file DIR/timed.json --duration-ms 300
            reply, paths = trigger_until_matched(port, pid, work + "/timed.json",
                                                 duration_ms=300)
            expected = "%s/timed_%d.json" % (work, pid)
            if paths != [expected]:
                fail("dyno would print %s, not %s" % (paths, expected))
            trace = wait_for_file(expected)
            meta = trace.get("kinetrace_trigger", {})
            if meta.get("origin") != "dynolog" or not meta.get("request_trace_id"):
                fail("the trace does not say dynolog asked for it: %s" % meta)
            if meta["asked"].get("duration_ns") != 300_000_000:
                fail("asked %s, not 300 ms" % meta["asked"])
            if not ops_in(trace):
                fail("the framework's ops are not in the duration trace")
            print("duration: %s, %d ops, reply %s" % (expected, len(ops_in(trace)),
                                                      json.dumps(reply)))

            # Iteration mode: --iterations 4 --profile-start-iteration-roundup 10
            reply, paths = trigger_until_matched(port, pid, work + "/steps.json",
                                                 iterations=4, roundup=10)
            expected = "%s/steps_%d.json" % (work, pid)
            trace = wait_for_file(expected)
            steps = trace.get("kinetrace_steps", {})
            if steps.get("count") != 4 or steps.get("first", 1) % 10 != 0:
                fail("iteration window %s, not 4 steps from a multiple of 10" % steps)
            if len(ops_in(trace)) != 4:
                fail("%d ops in 4 steps (one a step)" % len(ops_in(trace)))
            print("iterations: %s, steps %s, reply %s" % (expected, steps, json.dumps(reply)))
        finally:
            if app is not None:
                app.stdin.close()
                try:
                    app.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    app.kill()
                    fail("the program did not end when asked")
                if app.returncode != 0:
                    fail("the program exited %d: %s" % (app.returncode, app.stderr.read()))
            daemon.terminate()
            daemon.wait(timeout=20)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
