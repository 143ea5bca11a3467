#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/NAME/), the ones made from
scripts: traces in torch.profiler's and HTA's layouts (test/analysis's makers), those traces
converted by the built kinetrace command (kinetrace's Chrome JSON writer, its .pftrace
writer: packets compressed inside the file, gzip over plain packets, and plain packets),
summaries, trigger request lines, libkineto configs as `dyno gputrace` writes them (test/
ondemand/dyno.py), dynolog datagrams, and command lines.

    fuzz/make_corpus.py --kinetrace build/bin/kinetrace [--out fuzz/corpus]

Files already there are replaced, others are left alone (the torch.profiler traces recorded
on a GPU, fuzz/corpus/README.md, are not made here). The output is the same on every run.
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "analysis"))
sys.path.insert(0, os.path.join(ROOT, "test", "ondemand"))
import make_hta_traces  # noqa: E402
import make_sample_traces  # noqa: E402
from dyno import gputrace_config  # noqa: E402


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def gzipped(data):
    # mtime=0: the same bytes on every run.
    return gzip.compress(data, mtime=0)


def sample_trace(rank, steps, **options):
    with tempfile.TemporaryFile("w+") as f:
        make_sample_traces.trace(rank, steps, f, **options)
        f.seek(0)
        return f.read()


def first_events(text, count):
    """The trace with only its first `count` events: a seed of a few KB, each kind still in it."""
    trace = json.loads(text)
    trace["traceEvents"] = trace["traceEvents"][:count]
    return json.dumps(trace, separators=(",", ":"))


def chrome_json(out, scratch):
    """Chrome trace JSON: made by the test scripts, a few written by hand for what they lack."""
    d = os.path.join(out, "chrome_json")
    write(f"{d}/torch_style_one_step.json", first_events(sample_trace(0, 1), 60))
    write(f"{d}/torch_style_two_steps_rank1.json.gz", gzipped(sample_trace(1, 2).encode()))
    write(f"{d}/torch_style_no_steps.json",
          first_events(sample_trace(0, 1, step_ranges=False), 60))
    hta = os.path.join(scratch, "hta")
    os.makedirs(hta, exist_ok=True)
    for name in ("one_stream", "syncs", "streams_nccl", "after_steps", "workload"):
        getattr(make_hta_traces, name)(os.path.join(hta, f"{name}.json"))
        with open(os.path.join(hta, f"{name}.json"), "rb") as f:
            write(f"{d}/hta_{name}.json", f.read())
    # A bare array of events, as some tracers write.
    write(f"{d}/bare_array.json", json.dumps([
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2.25,
         "args": {"device": 0, "stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 1.0, "dur": 0.5, "args": {"correlation": 1}},
        {"ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 4},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 5}]))
    # What kinetrace's own traces carry beside the events: metadata lines, naming events,
    # flows, counters, GPU metrics and their sampling report, memory instants.
    events = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
        {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 0}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 4242, "tid": 4242,
         "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
         "ts": 10, "dur": 3.5, "args": {"correlation": 11, "cbid": 211}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 11, "pid": 4242, "tid": 4242, "ts": 10},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 50,
         "args": {"device": 0, "stream": 7, "correlation": 11, "grid": [128, 1, 1],
                  "block": [256, 1, 1], "registers per thread": 64,
                  "SM throughput (%)": 91.5, "DRAM read (bytes/s)": 1.2e12}},
        {"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": 11, "pid": 0, "tid": 7,
         "ts": 20},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
         "tid": 7, "ts": 75, "dur": 5, "args": {"device": 0, "stream": 7, "bytes": 4096}},
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7,
         "ts": 81, "dur": 1, "args": {"device": 0, "stream": 7, "wait_on_stream": 9}},
        # GPU metric samples as kinetrace writes them: a gpu_metric counter per metric, its
        # value keyed by the unit (the analysis fits short kernels' metrics from them).
        {"ph": "C", "cat": "gpu_metric", "name": "SM throughput", "pid": 0,
         "tid": 1073741824, "ts": 0, "args": {"%": 42.5}},
        {"ph": "C", "cat": "gpu_metric", "name": "SM throughput", "pid": 0,
         "tid": 1073741824, "ts": 40, "args": {"%": 91.0}},
        {"ph": "C", "cat": "gpu_metric", "name": "DRAM throughput", "pid": 0,
         "tid": 1073741825, "ts": 40, "args": {"%": 12.0}},
        {"ph": "C", "name": "SM throughput (%)", "pid": 0, "tid": 0, "ts": 30,
         "args": {"SM throughput (%)": 88.0}},
        {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 4242,
         "tid": 4242, "ts": 90, "args": {"Total Allocated": 1048576, "Bytes": 4096,
                                         "Addr": 139872}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
         "pid": 0, "tid": 9, "ts": 60, "dur": 30,
         "args": {"device": 0, "stream": 9, "nccl call": "ncclAllReduce", "nccl bytes": 65536}},
    ]
    header = ('{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": 0, '
              '"world_size": 2},\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100", '
              '"totalGlobalMem": 85000000000}],\n  "baseTimeNanoseconds": 1764000000000000000,\n'
              '  "displayTimeUnit": "ms",\n  "traceEvents": [\n')
    footer = ('\n  ],\n  "kinetrace_gpu_metrics": {"metrics": ["SM throughput (%)"], '
              '"interval_ns": 1000000, "samples": 3, "lost": 1, "corrupted": 0, '
              '"setup_dropped": 1},\n  "kinetrace_dropped_host_events": 0,\n'
              '  "traceName": "kinetrace-gpu.json"\n}\n')
    write(f"{d}/kinetrace_style_gpu.json",
          header + ",\n".join(json.dumps(e, separators=(",", ":")) for e in events) + footer)
    return d


def convert(kinetrace, source, target):
    # Run where the output goes, named without its directory: the trace records its own name,
    # which would otherwise hold the temporary directory's.
    directory, name = os.path.split(target)
    subprocess.run([kinetrace, "convert", "--quiet", os.path.abspath(source), name],
                   cwd=directory, check=True)
    with open(target, "rb") as f:
        return f.read()


def pftrace(out, scratch, kinetrace, json_dir):
    """.pftrace, written by kinetrace's Perfetto writer from the JSON seeds."""
    d = os.path.join(out, "pftrace")
    for name in ("kinetrace_style_gpu.json", "hta_streams_nccl.json", "hta_syncs.json",
                 "bare_array.json"):
        stem = name[: -len(".json")]
        write(f"{d}/{stem}.pftrace", convert(kinetrace, os.path.join(json_dir, name),
                                             os.path.join(scratch, f"{stem}.pftrace")))
    # gzip over plain packets, and the plain packets themselves.
    packed = convert(kinetrace, os.path.join(json_dir, "hta_one_stream.json"),
                     os.path.join(scratch, "one_stream.pftrace.gz"))
    write(f"{d}/hta_one_stream.pftrace.gz", packed)
    write(f"{d}/hta_one_stream_plain_packets.pftrace", gzip.decompress(packed))
    # Two ranks merged by `kinetrace merge`: read back as its ranks, split by process.
    ranks = []
    for rank in (0, 1):
        path = os.path.join(scratch, f"rank{rank}.json")
        with open(path, "w") as f:
            f.write(first_events(sample_trace(rank, 1), 40))
        ranks.append(path)
    subprocess.run([kinetrace, "merge", "--quiet", *ranks, "-o", "merged.json"], cwd=scratch,
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(scratch, "merged.json"), "rb") as f:
        write(f"{out}/chrome_json/kinetrace_merged_two_ranks.json",
              f.read().replace(scratch.encode(), b"traces"))
    # Back to JSON through kinetrace's own JSON writer: its layout, for the JSON target.
    write(f"{out}/chrome_json/kinetrace_converted_from_pftrace.json",
          convert(kinetrace, f"{d}/hta_streams_nccl.pftrace",
                  os.path.join(scratch, "back.json")))


def summaries(out):
    d = os.path.join(out, "summary")
    full = {
        "kinetrace_summary": 1, "trace": "kinetrace-run1-node1-pid4242.json", "pid": 4242,
        "rank": 0, "world_size": 2, "process_name": "python", "window_ns": 2014000000,
        "devices": [{"device": 0, "busy_ns": 1702000000, "kernel_busy_ns": 1650000000}],
        "busy_ns": 1702000000, "kernel_busy_ns": 1650000000, "utilisation": 0.845,
        "kernel_utilisation": 0.819, "kernel_count": 61482, "kernel_total_ns": 1688000000,
        "top_kernels": [
            {"name": "ampere_sgemm_128x64_tn", "count": 12000, "total_ns": 695000000,
             "max_ns": 81000},
            {"name": "void at::native::vectorized_elementwise_kernel<4, "
                     "at::native::CUDAFunctor_add<float>>(int, float*)",
             "count": 30000, "total_ns": 210000000, "max_ns": 9000}],
        "memcpy_count": 120, "memcpy_bytes": 536870912,
        "memcpy_by_kind": [{"kind": "HtoD", "count": 100, "bytes": 503316480,
                            "total_ns": 41000000},
                           {"kind": "DtoH", "count": 20, "bytes": 33554432,
                            "total_ns": 3000000}],
        "memset_count": 8, "memset_bytes": 4096, "graph_count": 0, "sync_count": 14,
        "host_range_count": 900, "dropped_gpu_records": 0, "dropped_host_events": 3,
        "out_of_window_events": 1, "gpu_ops_without_launch": 2, "gpu_status": "CUPTI 13.0",
    }
    write(f"{d}/full.summary.json", json.dumps(full, indent=2) + "\n")
    write(f"{d}/no_gpu.summary.json", json.dumps({
        "kinetrace_summary": 1, "trace": "host.json", "pid": 7, "rank": -1, "world_size": 0,
        "process_name": "host_threads", "window_ns": 1500000, "devices": [],
        "host_range_count": 42,
        "gpu_status": "no GPU activity: the CUDA driver could not be loaded"}, indent=2) + "\n")
    write(f"{d}/minimal.summary.json", '{"kinetrace_summary": 1}\n')


def trigger_requests(out):
    d = os.path.join(out, "trigger_request")
    lines = {
        "status": "status",
        "duration": "record duration_ns=10000000000",
        "duration_output": "record duration_ns=2000000000 output=%2Fdata%2Fslow%20step%25.json",
        "duration_start_at": "record duration_ns=500000000 output=/tmp/t.json "
                             "start_at_ns=1764000000000000000",
        "steps": "record steps=20 output=traces/",
        "steps_start_round_up": "record steps=3 start_step=500 round_up=100 output=/tmp/",
    }
    for name, line in lines.items():
        write(f"{d}/{name}.txt", line)


def kineto_configs(out):
    d = os.path.join(out, "kineto_config")
    configs = {
        "duration": gputrace_config("/tmp/trace.json"),
        "duration_start_time": gputrace_config("/tmp/run/x.pt.trace.json", duration_ms=2000,
                                               start_time_ms=1764000000123),
        "iterations": gputrace_config("/tmp/iter.json", iterations=20, roundup=500,
                                      record_shapes=True, with_stacks=True),
        "pftrace_all_flags": gputrace_config("/data/traces/t.pftrace", iterations=3,
                                             record_shapes=True, profile_memory=True,
                                             with_stacks=True, with_flops=True,
                                             with_modules=True),
        "hand_written": "# from a file\n\n  ACTIVITIES_LOG_FILE = /tmp/t.json   # where\n"
                        "ACTIVITIES_WARMUP_PERIOD_SECS=5\nACTIVITY_TYPES=kernel\n"
                        "ACTIVITIES_DURATION_SECS=2\nREQUEST_TRACE_ID=1234567\n",
    }
    for name, text in configs.items():
        write(f"{d}/{name}.txt", text)
    return configs


def datagram(type_, payload):
    """A dynolog datagram (ondemand/dynolog_ipc.h): the 40-byte header, then the payload."""
    return struct.pack("<Q32s", len(payload), type_.encode()) + payload


def poll(type_, job_id, pids):
    return struct.pack(f"<iiq{len(pids)}i", type_, len(pids), job_id, *pids)


def dynolog_datagrams(out, configs):
    d = os.path.join(out, "dynolog_ipc")
    write(f"{d}/reply_duration.bin", datagram("req", configs["duration"].encode()))
    write(f"{d}/reply_iterations.bin", datagram("req", configs["iterations"].encode()))
    write(f"{d}/reply_empty.bin", datagram("req", b""))
    write(f"{d}/poll_wants_activities.bin", datagram("req", poll(2, 0, [4242, 4241, 1])))
    write(f"{d}/poll_busy_slurm_job.bin", datagram("req", poll(0, 987654, [77, 1])))


def command_lines(out):
    d = os.path.join(out, "cli_options")
    commands = {
        "run": ["run", "--output", "traces/", "--activities", "kernel,memcpy,memset,sync",
                "--delay", "5s", "--duration", "2s", "--", "./engine", "--epochs", "1"],
        "run_schedule": ["run", "--schedule", "wait=1,warmup=1,active=3,repeat=2",
                         "--format", "pftrace", "--gpu-metrics", "default",
                         "--gpu-metrics-interval", "100us", "python", "train.py"],
        "run_on_demand": ["run", "--capture-range", "onDemand", "--dynolog", "--torch",
                          "--memory-mb", "512", "--", "python", "train.py"],
        "analyze": ["analyze", "traces/", "--html", "report.html", "--json", "report.json",
                    "--rank", "0", "--tiny-us", "5", "--memory-mb", "64"],
        "convert": ["convert", "--quiet", "trace.json", "trace.pftrace"],
        "merge": ["merge", "traces/rank0.json", "traces/rank1.json", "-o", "job.pftrace"],
        "summary": ["summary", "--top", "3", "kinetrace-traces/"],
        "trigger_duration": ["trigger", "--pid", "4242", "--duration", "10s", "--output",
                             "/data/slow-step.json"],
        "trigger_steps": ["trigger", "--job", "RUN_ID", "--steps", "20", "--start-step", "500",
                          "--round-up", "100", "--output", "traces/"],
        "help": ["help", "run"],
        "version": ["--version"],
    }
    for name, args in commands.items():
        write(f"{d}/{name}.args", "\0".join(args))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinetrace", required=True, help="the built kinetrace command")
    parser.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        json_dir = chrome_json(args.out, scratch)
        pftrace(args.out, scratch, os.path.abspath(args.kinetrace), json_dir)
    summaries(args.out)
    trigger_requests(args.out)
    configs = kineto_configs(args.out)
    dynolog_datagrams(args.out, configs)
    command_lines(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
