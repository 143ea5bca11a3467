#!/usr/bin/env python3
"""Writes small hand-made traces, in torch.profiler's layout, for
hta_critical_path_referee.py to run `kinetrace analyze --critical-path` and real HTA's
critical path analysis on: each holds the cases where the two could part ways.

    make_critical_path_traces.py OUT_DIR   -> OUT_DIR/two_streams.json, gpu_bound.json,
                                             host_bound.json, no_steps.json, graph_launch.json
    make_critical_path_traces.py --large STEPS OUT.json   -> one trace of STEPS steps like
        two_streams.json's, each of about 3,000 events (for timing the analysis)

- two_streams.json: three ProfilerSteps. The main thread's framework operators (cpu_op,
  nested: aten::linear > aten::mm > cudaLaunchKernel) launch kernels on stream 7, inside a
  data loader's range and "## forward ##"; a host gap between operators; a kernel queued
  behind a running one; cudaEventRecord on stream 7 and cudaStreamWaitEvent on stream 20
  (its Stream Wait Event naming the record and the stream), then a kernel on stream 20 that
  waits for stream 7's; the backward pass on a thread of its own ("autograd::engine::..."),
  which HTA walks as part of the forward thread; a copy and cudaStreamSynchronize (Stream
  Sync), cudaDeviceSynchronize (Context Sync), cudaEventSynchronize (Event Sync).
- gpu_bound.json: two steps whose kernels run long after the host launched them, the host
  waiting in cudaStreamSynchronize at the end.
- host_bound.json: two steps of short kernels between long host operators and gaps.
- no_steps.json: no step ranges (the whole trace is the window), a cudaMemcpy (blocking,
  with no sync record) and a kernel launched by cudaLaunchCooperativeKernel (a launch HTA's
  queue does not count).
- graph_launch.json: two steps, each launching a kernel, then replaying a CUDA graph of
  three kernels by one cudaGraphLaunch (its kernels share its correlation id, as kinetrace
  writes them), then a stream sync. HTA keeps one of a call's operations (its last), so its path is shorter.
- graphs_only.json: the same without the kernel launched on its own: every GPU operation comes
  from cudaGraphLaunch, where HTA's critical path finds no launch-queue series and stops; the
  referee compares both on a copy with the graph launches read as kernel launches.

Timestamps carry nanoseconds (three decimals of microseconds), as real traces do.
"""
import json
import os
import sys

BASE_NS = 1_764_000_000_000_000_000
PID, MAIN, BACKWARD, DEVICE = 4242, 4242, 4250, 0


class Trace:
    def __init__(self):
        self.events = []
        self.correlation = 0

    def host(self, name, ts, dur, cat="cpu_op", tid=MAIN, args=None):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid,
                            "ts": round(ts, 3), "dur": round(dur, 3), "args": args or {}})

    def call(self, name, ts, dur, tid=MAIN):
        self.correlation += 1
        self.host(name, ts, dur, cat="cuda_runtime", tid=tid,
                  args={"correlation": self.correlation})
        return self.correlation

    def gpu(self, cat, name, start, dur, stream, correlation, extra=None):
        args = {"device": DEVICE, "stream": stream, "correlation": correlation}
        args.update(extra or {})
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": DEVICE,
                            "tid": stream if stream >= 0 else 0, "ts": round(start, 3),
                            "dur": round(dur, 3), "args": args})

    def launch(self, call_ts, call_dur, name, start, dur, stream=7, tid=MAIN, cat="kernel",
               call="cudaLaunchKernel"):
        correlation = self.call(call, call_ts, call_dur, tid)
        self.gpu(cat, name, start, dur, stream, correlation)
        return start + dur

    def sync(self, call, call_ts, call_dur, name, start, dur, stream, extra=None, tid=MAIN):
        correlation = self.call(call, call_ts, call_dur, tid)
        self.gpu("cuda_sync", name, start, dur, stream, correlation, extra)
        return correlation

    def write(self, path):
        document = {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS,
                    "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
                    "traceEvents": self.events}
        with open(path, "w") as f:
            json.dump(document, f, indent=0)


def training_step(t, k, s, step_range=True):
    """One step from s (us); returns its end."""
    if step_range:
        t.host(f"ProfilerStep#{k}", s, 385.25 + 10 * k, cat="user_annotation")
    # Data loading: a gap inside the loader's range, then collation.
    t.host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", s + 1.0, 39.5,
           cat="user_annotation")
    t.host("aten::stack", s + 30.125, 8.0)
    t.host("## forward ##", s + 41.0, 159.0, cat="user_annotation")
    t.host("aten::linear", s + 45.0, 35.0)
    t.host("aten::mm", s + 50.0, 20.0)
    t.launch(s + 55.0, 5.125, "gemm_fwd", s + 62.0, 88.0 + 5 * k)  # the queue empty: a launch
    # A host gap, then a kernel queued behind the running one.
    t.host("aten::relu", s + 90.0, 10.0)
    relu_end = t.launch(s + 92.0, 4.0, "relu_kernel", s + 151.0 + 5 * k, 9.0)
    # An event recorded on stream 7 after relu, waited on by stream 20.
    record = t.call("cudaEventRecord", s + 102.0, 2.0)
    t.sync("cudaStreamWaitEvent", s + 105.0, 2.0, "Stream Wait Event", s + 108.0, 0.5, 20,
           {"wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": record})
    t.host("aten::add", s + 110.0, 10.0)
    side_end = t.launch(s + 112.0, 4.0, "side_add", relu_end + 2.25, 8.0, stream=20)
    # The backward pass on its own thread.
    t.host("autograd::engine::evaluate_function: MmBackward0", s + 210.0, 50.0, tid=BACKWARD)
    t.host("aten::mm", s + 215.0, 25.0, tid=BACKWARD)
    t.launch(s + 220.0, 4.0, "gemm_bwd", s + 226.0, 74.0, tid=BACKWARD)
    # loss.item(): a copy and a stream sync.
    t.host("aten::item", s + 304.0, 16.0)
    t.launch(s + 305.0, 3.0, "Memcpy DtoH (Device -> Pageable)", s + 309.0, 3.125,
             cat="gpu_memcpy", call="cudaMemcpyAsync")
    t.sync("cudaStreamSynchronize", s + 309.0, 9.0, "Stream Sync", s + 309.0, 4.0, 7)
    # The optimizer, then a device sync and an event sync.
    t.host("Optimizer.step#SGD.step", s + 320.0, 60.0, cat="user_annotation")
    t.host("aten::_foreach_add_", s + 325.0, 15.0)
    t.launch(s + 330.0, 3.0, "foreach_add_kernel", s + 335.0, 10.0)
    t.sync("cudaDeviceSynchronize", s + 350.0, 10.0, "Context Sync", s + 346.0, 9.0, -1)
    record = t.call("cudaEventRecord", s + 362.0, 1.0)
    t.sync("cudaEventSynchronize", s + 365.0, 5.0, "Event Sync", s + 366.0, 1.0, -1,
           {"wait_on_stream": 20, "wait_on_cuda_event_record_corr_id": record})
    del side_end
    return s + 385.25 + 10 * k


def two_streams(path):
    t = Trace()
    t.host("main", 0.0, 4.0, cat="python_function")
    s = 10.0
    for k in range(3):
        s = training_step(t, k, s) + 7.5
    t.write(path)


def gpu_bound(path):
    t = Trace()
    s = 5.0
    for k in range(2):
        t.host(f"ProfilerStep#{k}", s, 1410.0, cat="user_annotation")
        end = s + 20.0
        for i in range(6):
            t.host("aten::conv2d", s + 10.0 + 12 * i, 8.0)
            end = t.launch(s + 12.0 + 12 * i, 4.0, f"conv_kernel_{i}",
                           max(end + 1.5, s + 20 + 12 * i), 200.0 + 10 * i)
        t.host("aten::item", s + 100.0, 1300.0)
        t.launch(s + 101.0, 3.0, "Memcpy DtoH (Device -> Pageable)", end + 2.0, 3.5,
                 cat="gpu_memcpy", call="cudaMemcpyAsync")
        t.sync("cudaStreamSynchronize", s + 105.0, end + 12.0 - s - 105.0, "Stream Sync",
               end + 2.0, 6.0, 7)
        s += 1420.0
    t.write(path)


def host_bound(path):
    t = Trace()
    s = 3.0
    for k in range(2):
        t.host(f"ProfilerStep#{k}", s, 900.0, cat="user_annotation")
        for i in range(4):
            at = s + 10.0 + 200 * i
            t.host("aten::index", at, 120.0)
            t.launch(at + 100.0, 4.0, "index_kernel", at + 106.0, 6.0)
            # a gap of 80 us between operators: Python
        s += 910.0
    t.write(path)


def no_steps(path):
    t = Trace()
    t.host("aten::copy_", 10.0, 60.0)
    correlation = t.call("cudaMemcpy", 12.0, 55.0)
    t.gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 20.0, 40.0, 7, correlation)
    t.host("aten::mm", 80.0, 10.0)
    t.launch(82.0, 5.0, "gemm_kernel", 90.0, 50.0)
    t.host("cooperative_op", 95.0, 10.0)
    t.launch(96.0, 5.0, "cooperative", 142.0, 30.0, call="cudaLaunchCooperativeKernel")
    t.host("aten::sum", 110.0, 70.0)
    t.sync("cudaStreamSynchronize", 112.0, 66.0, "Stream Sync", 150.0, 25.0, 7)
    t.write(path)


def large(path, steps):
    """Steps like two_streams.json's, each repeating its forward and backward 100 times."""
    t = Trace()
    s = 10.0
    for k in range(steps):
        start = s
        for _ in range(100):
            s = training_step(t, k % 3, s, step_range=False) + 7.5
        t.host(f"ProfilerStep#{k}", start - 1.0, s - start, cat="user_annotation")
    t.write(path)


def graph_launch(path, prologue=True):
    t = Trace()
    s = 2.0
    for k, length in enumerate((100.0, 110.0, 800.0)):
        start = s + 30.0
        end = start + 3 * length + 3.0
        t.host(f"ProfilerStep#{k}", s, end + 20.0 - s, cat="user_annotation")
        t.host("replay", s + 5.0, 20.0, cat="cpu_op")
        if prologue:
            t.launch(s + 6.0, 2.0, "prologue", s + 9.0, 15.0)
        correlation = t.call("cudaGraphLaunch", s + 10.0, 8.0)
        for i in range(3):
            t.gpu("kernel", f"graph_kernel_{i}", start, length, 7, correlation)
            start += length + 1.5
        t.sync("cudaStreamSynchronize", s + 30.0, end + 5.0 - s - 30.0, "Stream Sync",
               end - 10.0, 12.0, 7)
        s = end + 30.0
    t.write(path)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--large":
        large(sys.argv[3], int(sys.argv[2]))
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    two_streams(os.path.join(out, "two_streams.json"))
    gpu_bound(os.path.join(out, "gpu_bound.json"))
    host_bound(os.path.join(out, "host_bound.json"))
    no_steps(os.path.join(out, "no_steps.json"))
    graph_launch(os.path.join(out, "graph_launch.json"))
    graph_launch(os.path.join(out, "graphs_only.json"), prologue=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
