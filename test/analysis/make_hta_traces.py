#!/usr/bin/env python3
"""Writes small hand-made traces, in torch.profiler's layout, for hta_referee.py to run
kinetrace analyze and real HTA on: each holds the cases where the two could part ways.

    make_hta_traces.py OUT_DIR   -> OUT_DIR/one_stream.json, syncs.json, streams_nccl.json,
                                   after_steps.json, workload.json, long_queue.json

- one_stream.json: one stream of kernels, copies and memsets in three ProfilerSteps; host
  waits; queued operations whose gaps are below 30 us (1.3, 2.7, 29.4: HTA's kernel wait)
  and above (30.6, 120); a queued kernel whose launch call was still running when its gap
  opened; a kernel starting before the previous one ended; time before the first and
  after the last GPU operation.
- syncs.json: one stream with synchronisation records that carry the stream (Stream Sync
  reaching past the kernels it waited for, Stream Wait Event in a gap) and an Event Sync,
  no steps (so HTA keeps every record).
- streams_nccl.json: a compute stream, a copy stream (copies, memsets) and an NCCL stream
  (NCCL 2.19+'s ncclDevKernel_* and the older ncclKernel_*), overlapping one another, in two
  ProfilerSteps; a cooperative launch.
- after_steps.json: two ProfilerSteps and a kernel launched after the last one, which HTA
  leaves out.
- workload.json: three ProfilerSteps of a training loop as torch.profiler records it with
  record_function and with_modules: "## forward ##" (a module range, aten::linear ops
  launching the same three kernels each), "## backward ##" on the main thread with the
  backward pass's autograd:: ops on a thread of their own, "## optimizer ##"; the
  gpu_user_annotation spans of those that launched on their own thread, nested in the
  step's; copies of each kind with bytes and
  bandwidth (two device-to-device copies overlapping, a memset of no duration); for the kernel
  sequences, GPU time per annotation and copy bandwidth.
- long_queue.json: one thread launching 1,100 kernels faster than the GPU runs them, so the
  stream's queue passes 1,024 (HTA's max_queue_length) for a while.

Timestamps carry nanoseconds (three decimals of microseconds), as real traces do, so HTA's
rounding to whole microseconds shows.
"""
import json
import os
import sys

BASE_NS = 1_764_000_000_000_000_000
PID, TID, DEVICE = 4242, 4242, 0


class Trace:
    def __init__(self, rank=0):
        self.events = []
        self.correlation = 0
        self.rank = rank

    def host(self, name, ts, dur, cat="user_annotation", tid=TID):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid,
                            "ts": round(ts, 3), "dur": round(dur, 3), "args": {}})

    def launch(self, call, call_ts, call_dur, cat, name, start, dur, stream, tid=TID,
               args=None):
        """A launch call and the GPU operation it started, joined by a correlation id."""
        self.correlation += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": PID,
                            "tid": tid, "ts": round(call_ts, 3), "dur": round(call_dur, 3),
                            "args": {"correlation": self.correlation}})
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": DEVICE, "tid": stream,
                            "ts": round(start, 3), "dur": round(dur, 3),
                            "args": {"device": DEVICE, "stream": stream,
                                     "correlation": self.correlation, **(args or {})}})
        return start + dur

    def copy(self, call_ts, name, start, dur, stream, nbytes, tid=TID):
        """A copy or memset as torch.profiler writes it: its bytes and bandwidth in GB/s."""
        category = "gpu_memset" if name.startswith("Memset") else "gpu_memcpy"
        call = "cudaMemsetAsync" if category == "gpu_memset" else "cudaMemcpyAsync"
        bandwidth = nbytes / (dur * 1e3) if dur > 0 else 0.0
        return self.launch(call, call_ts, 2.0, category, name, start, dur, stream, tid,
                           {"bytes": nbytes, "memory bandwidth (GB/s)": bandwidth})

    def gpu_annotation(self, name, ts, dur, stream=7):
        """A record_function's span over the GPU work it launched, on the work's stream."""
        self.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": name,
                            "pid": DEVICE, "tid": stream, "ts": round(ts, 3),
                            "dur": round(dur, 3), "args": {"External id": 1}})

    def kernel(self, call_ts, start, dur, stream=7, name="gemm_kernel", call_dur=2.125,
               call="cudaLaunchKernel", tid=TID):
        return self.launch(call, call_ts, call_dur, "kernel", name, start, dur, stream, tid)

    def sync(self, name, ts, dur, stream):
        """A synchronisation record on the GPU's timeline, as CUPTI reports it."""
        self.correlation += 1
        self.events.append({"ph": "X", "cat": "cuda_sync", "name": name, "pid": DEVICE,
                            "tid": stream if stream >= 0 else 0, "ts": round(ts, 3),
                            "dur": round(dur, 3),
                            "args": {"device": DEVICE, "stream": stream,
                                     "correlation": self.correlation}})

    def write(self, path):
        document = {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS,
                    "distributedInfo": {"backend": "nccl", "rank": self.rank, "world_size": 1},
                    "traceEvents": self.events}
        with open(path, "w") as f:
            json.dump(document, f, indent=0)


def one_stream(path):
    t = Trace()
    t.host("main", 0.0, 5.5, cat="python_function")  # the window opens before any GPU work
    end = 60.417  # the time before the first operation: 60 us
    for step in range(3):
        step_start = end + 3.219
        # Host wait: the call comes after the stream went idle.
        call = end + 20.123
        end = t.kernel(call, call + 5.511, 40.707)
        # A queued burst: every call well before its kernel; gaps below and above 30 us.
        calls = end - 30.0
        for i, gap in enumerate((1.313, 2.707, 29.403, 30.611, 120.029)):
            end = t.kernel(calls + i * 0.5, end + gap, 10.333 + i, name=f"elementwise_{i}")
        # One that starts before the previous one ended, as torch.profiler's timestamps show.
        end = max(end, t.kernel(calls + 3.0, end - 0.613, 4.25, name="overlapping"))
        # A queued copy and memset.
        end = t.launch("cudaMemcpyAsync", end - 8.0, 3.0, "gpu_memcpy",
                       "Memcpy HtoD (Pageable -> Device)", end + 3.217, 12.501, 7)
        end = t.launch("cudaMemsetAsync", end + 40.001, 2.5, "gpu_memset", "Memset (Device)",
                       end + 45.333, 1.777, 7)
        # Queued, but its launch call was still running when the gap opened (lazy loading).
        call = end - 1.5
        end = t.kernel(call, end + 250.25, 22.2, call_dur=240.0, name="first_use_kernel")
        t.host(f"ProfilerStep#{step}", step_start, end + 2.0 - step_start)
    t.host("teardown", end + 30.0, 12.25, cat="python_function")  # after the last operation
    t.write(path)


def syncs(path):
    t = Trace()
    t.host("main", 0.0, 3.0, cat="python_function")
    end = 10.0
    for i in range(4):
        call = end + 15.125 + i
        end = t.kernel(call, call + 4.25, 80.375)
        # Two more, queued back to back (a gap of 2 us: kernel wait).
        end = t.kernel(end - 60.0, end + 2.003, 25.5, name="elementwise")
        # The host waits for the stream: the sync ends 9 us after the last kernel.
        t.sync("Stream Sync", end - 50.0, 59.125, 7)
    # A queued kernel that waits on an event recorded on another stream: the wait is on
    # the stream, in the gap.
    call = end - 40.0
    t.sync("Stream Wait Event", end + 5.0, 0.0, 7)
    end = t.kernel(call, end + 95.5, 33.25, name="after_event")
    t.sync("Event Sync", end + 1.0, 4.5, -1)
    t.host("teardown", end + 20.0, 2.0, cat="python_function")
    t.write(path)


def streams_nccl(path):
    t = Trace()
    compute_end, copy_end, comm_end = 20.0, 0.0, 0.0
    for step in range(2):
        step_start = compute_end + 1.0
        # Compute on stream 7: a host wait, then queued kernels.
        call = compute_end + 12.5
        compute_end = t.kernel(call, call + 6.125, 150.25)
        for i in range(4):
            compute_end = t.kernel(call + 3.0 + i, compute_end + 1.5 + i * 20, 60.625,
                                   name=f"layer_{i}")
        # Copies and a memset on stream 13, overlapping compute.
        copy_start = compute_end - 200.0
        copy_end = t.launch("cudaMemcpyAsync", copy_start - 5.0, 4.0, "gpu_memcpy",
                            "Memcpy DtoH (Device -> Pinned)", copy_start, 95.375, 13)
        copy_end = t.launch("cudaMemsetAsync", copy_start - 1.0, 2.0, "gpu_memset",
                            "Memset (Device)", copy_end + 12.0, 3.5, 13)
        # NCCL on stream 20: one kernel overlapping compute, one after it.
        comm_start = compute_end - 40.0
        comm_end = t.kernel(comm_start - 30.0, comm_start, 80.5, stream=20,
                            call="cudaLaunchKernelExC",
                            name="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, "
                                 "unsigned long, ncclWork*)")
        comm_end = t.kernel(comm_start - 10.0, comm_end + 25.0, 44.125, stream=20,
                            call="cudaLaunchKernelExC",
                            name="ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)")
        # A cooperative launch, which HTA's queue length does not count.
        compute_end = t.kernel(compute_end + 2.0, compute_end + 9.75, 20.5, stream=7,
                               call="cudaLaunchCooperativeKernel", name="cooperative")
        compute_end = max(compute_end, comm_end, copy_end)
        t.host(f"ProfilerStep#{step}", step_start, compute_end + 1.0 - step_start)
    t.write(path)


def after_steps(path):
    t = Trace()
    end = 100.0
    for step in range(2):
        step_start = end + 1.5
        for i in range(3):
            call = end + 5.25
            end = t.kernel(call, call + 4.125, 50.5 + i)
        t.host(f"ProfilerStep#{step}", step_start, end + 1.0 - step_start)
    # Launched after the last step: HTA, keeping what the steps launched, leaves it out. (HTA
    # compares the launch's start, shifted to the trace's first event, with the last step's
    # end, not shifted: so the launch must come later than the first event's time, 100 us.)
    t.kernel(end + 150.0, end + 155.5, 30.125, name="after_the_steps")
    t.write(path)


def workload(path):
    t = Trace()
    backward_tid = TID + 1
    gpu = 50.0  # where stream 7 is free
    host = 10.0
    for step in range(3):
        step_start = host
        step_gpu = gpu + 3.0
        # Input to the GPU: a pageable copy, slow for its size.
        gpu = t.copy(host + 1.0, "Memcpy HtoD (Pageable -> Device)", gpu + 6.25, 40.5 + step, 7,
                     1 << 20)
        # Forward: a module's range, two linear layers launching gemm, bias, relu each; a
        # third layer launching two kernels only.
        forward = host + 8.0
        t.host("## forward ##", forward, 150.0)
        t.host("nn.Module: MLP_0", forward + 1.0, 140.0, cat="python_function")
        forward_gpu = None
        for layer in range(3):
            op = forward + 3.0 + 45.0 * layer
            t.host("aten::linear", op, 40.0, cat="cpu_op")
            t.host("aten::addmm", op + 1.0, 35.0, cat="cpu_op")
            kernels = ("gemm", "bias", "relu") if layer < 2 else ("gemm", "bias")
            for i, name in enumerate(kernels):
                call = op + 2.0 + 6.0 * i
                start = max(gpu + 1.5 + 0.125 * i, call + 4.0)
                forward_gpu = forward_gpu or start
                gpu = t.kernel(call, start, 7.5 + i, name=name, call_dur=3.25)
        t.gpu_annotation("## forward ##", forward_gpu, gpu - forward_gpu)
        # Backward: annotated on the main thread, run by the autograd thread.
        backward = forward + 160.0
        t.host("## backward ##", backward, 120.0)
        node = backward + 4.0
        t.host("autograd::engine::evaluate_function: AddmmBackward0", node, 100.0,
               cat="cpu_op", tid=backward_tid)
        t.host("aten::mm", node + 2.0, 80.0, cat="cpu_op", tid=backward_tid)
        backward_gpu = None
        for i, name in enumerate(("gemm_bwd", "gemm_bwd_b", "reduce_bwd")):
            call = node + 4.0 + 9.0 * i
            start = max(gpu + 2.25, call + 5.0)
            backward_gpu = backward_gpu or start
            gpu = t.kernel(call, start, 11.0 + i, name=name, call_dur=4.0, tid=backward_tid)
        # No span for "## backward ##": its launches are the autograd thread's, not inside the
        # range on the main thread.
        # Device-to-device copies on stream 13, two overlapping, and a memset of no duration.
        copies = backward + 20.0
        t.copy(copies, "Memcpy DtoD (Device -> Device)", backward_gpu + 1.0, 30.0, 13, 8 << 20)
        t.copy(copies + 3.0, "Memcpy DtoD (Device -> Device)", backward_gpu + 11.5, 25.25, 13,
               2 << 20)
        t.copy(copies + 6.0, "Memset (Device)", backward_gpu + 45.0, 0.0, 13, 4096)
        # Optimizer: four kernels, outside the forward and backward spans.
        optimizer = backward + 130.0
        t.host("## optimizer ##", optimizer, 60.0)
        optimizer_gpu = None
        for i in range(4):
            call = optimizer + 2.0 + 5.0 * i
            start = max(gpu + 1.0, call + 3.5)
            optimizer_gpu = optimizer_gpu or start
            gpu = t.kernel(call, start, 6.0, name=f"adam_{i % 2}", call_dur=2.5)
        t.gpu_annotation("## optimizer ##", optimizer_gpu, gpu - optimizer_gpu)
        # The loss back to the host, inside the step but outside every other annotation.
        gpu = t.copy(optimizer + 40.0, "Memcpy DtoH (Device -> Pageable)", gpu + 4.0, 3.75, 7,
                     4)
        host = max(optimizer + 70.0, gpu + 5.0)
        t.host(f"ProfilerStep#{step}", step_start, host - step_start)
        t.gpu_annotation(f"ProfilerStep#{step}", step_gpu, gpu - step_gpu)
        host += 4.0
    t.write(path)


def long_queue(path):
    t = Trace()
    gpu = 20.0
    for i in range(1100):
        call = 10.0 + 0.5 * i
        gpu = t.kernel(call, max(gpu + 0.25, call + 3.0), 20.125, name="step_kernel",
                       call_dur=0.375)
    t.host("ProfilerStep#0", 5.0, gpu + 10.0)
    t.write(path)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    one_stream(os.path.join(out, "one_stream.json"))
    syncs(os.path.join(out, "syncs.json"))
    streams_nccl(os.path.join(out, "streams_nccl.json"))
    after_steps(os.path.join(out, "after_steps.json"))
    workload(os.path.join(out, "workload.json"))
    long_queue(os.path.join(out, "long_queue.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
