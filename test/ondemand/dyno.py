#!/usr/bin/env python3
"""What `dyno gputrace` sends to a dynolog daemon, for tests and benchmarks where the `dyno`
command is absent: one RPC over TCP, framed as a native int32 length and JSON, both ways.

    dyno.py --port N gputrace --log-file /tmp/t.json [--duration-ms 500 | --iterations N
            [--profile-start-iteration-roundup R]] [--pids 0] [--job-id 0]
            [--profile-start-time MS] [--process-limit 3] [--record-shapes] [--with-stacks]
    dyno.py --port N version

Prints the daemon's reply, then the trace paths dyno would print (libkineto's "_<pid>"
naming), one a line, as "trace PATH".
"""

import argparse
import json
import socket
import struct
import sys


def rpc(port, request, host="localhost", timeout=10):
    """Sends one request (a dict) and returns the daemon's reply (a dict)."""
    with socket.create_connection((host, port), timeout=timeout) as conn:
        body = json.dumps(request).encode()
        conn.sendall(struct.pack("=i", len(body)) + body)
        head = b""
        while len(head) < 4:
            chunk = conn.recv(4 - len(head))
            if not chunk:
                raise RuntimeError("the daemon closed the connection without a reply")
            head += chunk
        (length,) = struct.unpack("=i", head)
        reply = b""
        while len(reply) < length:
            chunk = conn.recv(length - len(reply))
            if not chunk:
                raise RuntimeError("the daemon's reply was cut short")
            reply += chunk
    return json.loads(reply)


def gputrace_config(log_file, duration_ms=500, iterations=-1, roundup=1, start_time_ms=0,
                    record_shapes=False, profile_memory=False, with_stacks=False,
                    with_flops=False, with_modules=False):
    """The config text dyno writes for these options."""
    if iterations > 0:
        trigger = (f"PROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP={roundup}\n"
                   f"ACTIVITIES_ITERATIONS={iterations}")
    else:
        trigger = f"PROFILE_START_TIME={start_time_ms}\nACTIVITIES_DURATION_MSECS={duration_ms}"
    flags = (f"PROFILE_REPORT_INPUT_SHAPES={str(record_shapes).lower()}\n"
             f"PROFILE_PROFILE_MEMORY={str(profile_memory).lower()}\n"
             f"PROFILE_WITH_STACK={str(with_stacks).lower()}\n"
             f"PROFILE_WITH_FLOPS={str(with_flops).lower()}\n"
             f"PROFILE_WITH_MODULES={str(with_modules).lower()}")
    return f"ACTIVITIES_LOG_FILE={log_file}\n{trigger}\n{flags}"


def gputrace(port, log_file, pids=(0,), job_id=0, process_limit=3, **options):
    """Sends dyno gputrace's request; returns (reply, the trace paths dyno prints)."""
    reply = rpc(port, {"fn": "setKinetOnDemandRequest",
                       "config": gputrace_config(log_file, **options),
                       "job_id": job_id, "pids": list(pids), "process_limit": process_limit})
    paths = [log_file.replace(".json", f"_{pid}.json") for pid in reply.get("processesMatched", [])]
    return reply, paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="localhost")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("version")
    trace = commands.add_parser("gputrace")
    trace.add_argument("--log-file", required=True)
    trace.add_argument("--duration-ms", type=int, default=500)
    trace.add_argument("--iterations", type=int, default=-1)
    trace.add_argument("--profile-start-iteration-roundup", type=int, default=1)
    trace.add_argument("--profile-start-time", type=int, default=0)
    trace.add_argument("--pids", default="0")
    trace.add_argument("--job-id", type=int, default=0)
    trace.add_argument("--process-limit", type=int, default=3)
    trace.add_argument("--record-shapes", action="store_true")
    trace.add_argument("--with-stacks", action="store_true")
    args = parser.parse_args()
    if args.command == "version":
        print(json.dumps(rpc(args.port, {"fn": "getVersion"}, host=args.host)))
        return 0
    reply, paths = gputrace(args.port, args.log_file,
                            pids=[int(p) for p in args.pids.split(",")], job_id=args.job_id,
                            process_limit=args.process_limit, duration_ms=args.duration_ms,
                            iterations=args.iterations,
                            roundup=args.profile_start_iteration_roundup,
                            start_time_ms=args.profile_start_time,
                            record_shapes=args.record_shapes, with_stacks=args.with_stacks)
    print(json.dumps(reply))
    for path in paths:
        print("trace", path)
    return 0 if reply.get("processesMatched") else 1


if __name__ == "__main__":
    sys.exit(main())
