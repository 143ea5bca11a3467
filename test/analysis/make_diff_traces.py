#!/usr/bin/env python3
"""Writes pairs of small hand-made traces, in torch.profiler's layout, of one training loop
changed in one known way each, for `kinetrace diff` and HTA's TraceDiff to compare
(hta_diff_referee.py):

    make_diff_traces.py OUT_DIR   -> OUT_DIR/base.json, base_again.json, loader.json,
                                    vocab.json, sync.json, renumbered.json, no_steps.json,
                                    lagging.json

- base.json: six ProfilerSteps (#1-#6) of a loop: a data-loader annotation, "## forward ##"
  (aten::linear operators, each launching a GEMM and an elementwise kernel), the output layer
  and the loss, "## backward ##", "## optimizer ##", a cudaStreamSynchronize at the step's
  end; a kernel launched before the first step, one whose launch call the trace lacks, a
  memset and a copy.
- base_again.json: the same program, run again: every duration jittered by up to 1%.
- loader.json: the data loader takes 20 ms more a step.
- vocab.json: the output layer's GEMM and the loss kernels take a third of their time.
- sync.json: a host sync after forward (aten::item: a DtoH copy and cudaStreamSynchronize).
- renumbered.json: base's steps numbered #21-#26 (no number in common with base).
- no_steps.json: base without ProfilerStep ranges.
- lagging.json: steps #3-#8 (four in common with base) without the sync at their end: the
  GPU falls behind the host, and a step's kernels run during the steps after it.

Timestamps carry nanoseconds (three decimals of microseconds), as real traces do.
"""
import json
import os
import random
import sys

BASE_NS = 1_764_000_000_000_000_000
PID, TID, DEVICE, STREAM = 4242, 4242, 0, 7


class Loop:
    """A host thread launching onto one stream: the host's clock and the stream's."""

    def __init__(self, jitter=0.0, seed=1):
        self.events = []
        self.correlation = 0
        self.host = 50.0
        self.gpu = 0.0
        self.random = random.Random(seed)
        self.jitter = jitter

    def scaled(self, dur):
        return dur * (1 + self.random.uniform(-self.jitter, self.jitter))

    def range(self, name, ts, dur, cat="user_annotation"):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID,
                            "ts": round(ts, 3), "dur": round(dur, 3), "args": {}})

    def launch(self, name, dur, cat="kernel", call="cudaLaunchKernel", with_call=True):
        self.correlation += 1
        call_dur = self.scaled(4.25)
        if with_call:
            self.events.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": PID,
                                "tid": TID, "ts": round(self.host, 3),
                                "dur": round(call_dur, 3),
                                "args": {"correlation": self.correlation}})
        start = max(self.gpu + 1.5, self.host + 6.125)
        dur = self.scaled(dur)
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": DEVICE, "tid": STREAM,
                            "ts": round(start, 3), "dur": round(dur, 3),
                            "args": {"device": DEVICE, "stream": STREAM,
                                     "correlation": self.correlation}})
        self.gpu = start + dur
        self.host += call_dur + 1.75

    def op(self, name, kernels):
        """A cpu_op that launches `kernels` [(name, dur)]."""
        start = self.host
        self.host += 3.5
        for kernel, dur in kernels:
            self.launch(kernel, dur)
        self.host += 2.0
        self.range(name, start, self.host - start, cat="cpu_op")

    def sync(self):
        """cudaStreamSynchronize: the host waits for the stream; its record on the stream."""
        self.correlation += 1
        start = self.host
        end = max(self.host, self.gpu) + 3.0
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize",
                            "pid": PID, "tid": TID, "ts": round(start, 3),
                            "dur": round(end - start, 3), "args": {"correlation": self.correlation}})
        self.events.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": DEVICE,
                            "tid": STREAM, "ts": round(start, 3), "dur": round(end - start, 3),
                            "args": {"device": DEVICE, "stream": STREAM,
                                     "correlation": self.correlation}})
        self.host = end

    def annotated(self, name, body):
        start = self.host
        self.host += 1.0
        body()
        self.host += 1.0
        self.range(name, start, self.host - start)

    def write(self, path):
        document = {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS,
                    "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
                    "traceEvents": self.events}
        with open(path, "w") as f:
            json.dump(document, f, indent=0)


def program(path, loader_us=1000.0, vocab_scale=1.0, sync_after_forward=False, first_step=1,
            steps=True, jitter=0.0, seed=1, sync_at_end=True):
    t = Loop(jitter, seed)
    t.launch("warmup_fill", 12.5, cat="gpu_memset", call="cudaMemsetAsync")  # before step 1
    for number in range(first_step, first_step + 6):
        step_start = t.host
        t.host += t.scaled(loader_us)
        t.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", step_start,
                t.host - step_start)
        t.launch("Memcpy HtoD (Pageable -> Device)", 40.0, cat="gpu_memcpy",
                 call="cudaMemcpyAsync")

        def forward():
            for layer in range(4):
                t.op("aten::linear", [(f"gemm_layer_{layer}", 300.0), ("elementwise_relu", 40.0)])
            t.op("aten::linear", [("output_gemm", 900.0 * vocab_scale)])
            t.op("aten::cross_entropy_loss", [("log_softmax_kernel", 200.0 * vocab_scale),
                                              ("nll_loss_kernel", 60.0 * vocab_scale)])

        t.annotated("## forward ##", forward)
        if sync_after_forward:
            start = t.host
            t.host += 2.0
            inner = t.host
            t.launch("Memcpy DtoH (Device -> Pageable)", 2.5, cat="gpu_memcpy",
                     call="cudaMemcpyAsync")
            t.sync()
            t.range("aten::_local_scalar_dense", inner, t.host - inner, cat="cpu_op")
            t.host += 1.0
            t.range("aten::item", start, t.host - start, cat="cpu_op")

        def backward():
            for layer in reversed(range(5)):
                t.op("autograd::engine::evaluate_function: AddmmBackward0",
                     [(f"gemm_grad_{layer}", 550.0 if layer < 4 else 1700.0 * vocab_scale)])

        t.annotated("## backward ##", backward)
        t.annotated("## optimizer ##",
                    lambda: t.op("Optimizer.step#SGD.step", [("multi_tensor_apply", 120.0)]))
        if number == first_step + 2:
            t.launch("orphan_kernel", 8.0, with_call=False)  # its call is not in the trace
        if sync_at_end:
            t.sync()
        t.host += 2.0
        if steps:
            t.range(f"ProfilerStep#{number}", step_start, t.host - step_start)
        t.host += 0.5
    t.write(path)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    program(os.path.join(out, "base.json"))
    program(os.path.join(out, "base_again.json"), jitter=0.01, seed=7)
    program(os.path.join(out, "loader.json"), loader_us=21000.0)
    program(os.path.join(out, "vocab.json"), vocab_scale=1 / 3)
    program(os.path.join(out, "sync.json"), sync_after_forward=True)
    program(os.path.join(out, "renumbered.json"), first_step=21)
    program(os.path.join(out, "no_steps.json"), steps=False)
    program(os.path.join(out, "lagging.json"), first_step=3, sync_at_end=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
