#!/usr/bin/env python3
"""Small PyTorch training loops on CUDA: the workloads of the overhead measurements
(bench/gpu/overhead.sh) and of the PyTorch proof (kinetrace's trace against
torch.profiler's, bench/gpu/torch_proof.sh).

    torch_train.py [--model transformer|resnet18] [--steps N] [--warmup W]
                   [--mode none|torch-cuda|torch-cpu-cuda] [--profiler-api] [--out DIR]
                   [--distributed] [--batch B] [--channels-last] [--nvtx-steps]
                   [--compile] [--profiler-steps] [--annotate] [--loader-ms MS]
                   [--sync-after-forward] [--vocab N]

  --model transformer    a 4-layer transformer encoder (d_model 256, batch 16 x 128 tokens)
                         + AdamW: launch-bound, about 285 kernel launches a step
  --model resnet18       ResNet-18 written out here (torchvision is not needed) on random
                         3x224x224 images, batch 32, SGD with momentum, cross-entropy:
                         convolution-heavy, the GPU busier
  --mode none            no profiler in the script (run it under `kinetrace run`, or bare)
  --mode torch-cuda      the measured steps inside torch.profiler, CUDA activity only
  --mode torch-cpu-cuda  the measured steps inside torch.profiler, CPU + CUDA activity
  --profiler-api         cudaProfilerStart() before the measured steps and cudaProfilerStop()
                         after them: `kinetrace run --capture-range=cudaProfilerApi` then
                         records exactly the steps torch.profiler records in the torch modes
  --out DIR              where the torch modes export their chrome trace (torch_trace.json)
  --distributed          a torchrun worker: reads RANK/WORLD_SIZE, joins a gloo group
                         (every rank may share one GPU), barrier at the end
  --nvtx-steps           each step (warm-up ones too, numbered from 0) is an NVTX range
                         "step K": the step marks of `kinetrace run --schedule` and
                         `kinetrace trigger --steps`. With --distributed the ranks also meet
                         at a barrier before each step, so they keep in step as a DDP job's
                         all-reduces keep them
  --batch B              batch size (default 16 for transformer, 32 for resnet18)
  --channels-last        resnet18 only: images and weights in channels-last memory format
  --compile              the model under torch.compile (Triton kernels; compiled during the
                         warm-up steps, which need to be at least 2)
  --profiler-steps       the torch modes call the profiler's step() after each measured step,
                         so the trace has a ProfilerStep#N range per step (as torch.profiler
                         users' traces with a schedule do)
  --annotate             each step's forward, backward and optimizer step inside a
                         record_function range ("## forward ##", ...): user annotations, and
                         their GPU spans in torch.profiler's traces
  --loader-ms MS         each step waits MS on the host for its batch, inside a range named as
                         PyTorch names a DataLoader's next() (a slow data loader)
  --sync-after-forward   each step reads its loss on the host after the forward pass
                         (loss.item(): the host waits for the GPU mid-step)
  --vocab N              transformer only: the vocabulary (default 8192), the size of the
                         output layer's GEMMs and of the loss's kernels

The last four make the one known change between two runs that `kinetrace diff` must name
(bench/gpu/analysis_traces.sh).

Every step copies its batch from pinned host memory and ends with torch.cuda.synchronize(),
so a step's wall time is its GPU time plus whatever the CPU could not hide. Prints one
parseable line on stdout:

    RESULT mode=none model=transformer rank=0 steps=50 median_step_ms=12.345
           mean_step_ms=12.400 min_step_ms=12.101 threads=main:99%,kinetrace-cupti:1%,python3:0%

threads: CPU use of the busiest threads over the measured steps (per cent of their wall
time; the main thread first, then the three busiest others, by Linux thread name).
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["transformer", "resnet18"], default="transformer")
    p.add_argument("--steps", type=int, default=50, help="measured steps")
    p.add_argument("--warmup", type=int, default=10, help="steps before the measured ones")
    p.add_argument("--mode", choices=["none", "torch-cuda", "torch-cpu-cuda"], default="none")
    p.add_argument("--profiler-api", action="store_true")
    p.add_argument("--out", default=".", help="directory for torch.profiler's trace")
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--nvtx-steps", action="store_true")
    p.add_argument("--batch", type=int, default=None, help="default: 16 (transformer), 32 (resnet18)")
    p.add_argument("--channels-last", action="store_true", help="resnet18 only")
    p.add_argument("--seq", type=int, default=128, help="transformer only")
    p.add_argument("--d-model", type=int, default=256, help="transformer only")
    p.add_argument("--layers", type=int, default=4, help="transformer only")
    p.add_argument("--heads", type=int, default=4, help="transformer only")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--profiler-steps", action="store_true")
    p.add_argument("--annotate", action="store_true")
    p.add_argument("--loader-ms", type=float, default=0.0)
    p.add_argument("--sync-after-forward", action="store_true")
    p.add_argument("--vocab", type=int, default=8192, help="transformer only")
    args = p.parse_args()
    if args.batch is None:
        args.batch = 16 if args.model == "transformer" else 32
    if args.steps <= 0 or args.warmup < 0 or args.batch <= 0:
        p.error("--steps and --batch must be positive, --warmup not negative")
    if args.channels_last and args.model != "resnet18":
        p.error("--channels-last applies to --model resnet18 only")
    if args.loader_ms < 0 or args.vocab <= 0:
        p.error("--loader-ms must not be negative, --vocab must be positive")
    if args.compile and args.warmup < 2:
        p.error("--compile needs --warmup 2 or more: the first steps compile")
    return args


def thread_cpu_seconds():
    """{tid: (name, user+system CPU seconds so far)} for every thread of this process."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # the thread exited meanwhile
        fields = stat[stat.rindex(")") + 2:].split()  # fields from the 3rd (state) on
        out[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / ticks)
    return out


def thread_cpu_summary(before, after, wall_s):
    """'main:98%,name:12%,...': the main thread and the three busiest others."""
    used = {tid: (name, seconds - before.get(tid, (name, 0.0))[1]) for tid, (name, seconds) in after.items()}
    main = used.pop(os.getpid(), ("main", 0.0))
    busiest = sorted(used.values(), key=lambda entry: -entry[1])[:3]
    return ",".join(f"{name.replace(',', '_').replace(' ', '_')}:{100.0 * seconds / wall_s:.0f}%"
                    for name, seconds in [("main", main[1])] + busiest)


class Transformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        vocab = args.vocab
        self.embed = nn.Embedding(vocab, args.d_model)
        layer = nn.TransformerEncoderLayer(args.d_model, args.heads, dim_feedforward=4 * args.d_model,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False)
        self.head = nn.Linear(args.d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a shortcut (1x1 convolution when the shape
    changes), as in He et al. 2015 and torchvision's resnet18."""

    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = None
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(outputs))

    def forward(self, x):
        identity = x if self.shortcut is None else self.shortcut(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1))
        blocks, inputs = [], 64
        for outputs, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            blocks += [BasicBlock(inputs, outputs, stride), BasicBlock(outputs, outputs, 1)]
            inputs = outputs
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, images):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(images))), 1))


def build(args, device):
    """(model, optimizer, host batches, step input function) for --model."""
    generator = torch.Generator().manual_seed(args.seed)
    if args.model == "transformer":
        model = Transformer(args).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        # Fixed data on the host, copied each step: the trace has host-to-device copies to count.
        batches = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=generator).pin_memory()
                   for _ in range(4)]

        def inputs(i):
            data = batches[i % len(batches)].to(device, non_blocking=True)
            return data[:, :-1], data[:, 1:].reshape(-1)

        def logits(model_output):
            return model_output.reshape(-1, model_output.shape[-1])
    else:
        model = ResNet18().to(device)
        memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
        model = model.to(memory_format=memory_format)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        images = [torch.randn(args.batch, 3, 224, 224, generator=generator).pin_memory() for _ in range(2)]
        labels = [torch.randint(0, 1000, (args.batch,), generator=generator).pin_memory() for _ in range(2)]

        def inputs(i):
            x = images[i % len(images)].to(device, non_blocking=True).contiguous(memory_format=memory_format)
            return x, labels[i % len(labels)].to(device, non_blocking=True)

        def logits(model_output):
            return model_output
    return model, optimizer, inputs, logits


def training_step(args, device):
    """step(i): one training step on batch i, ending with torch.cuda.synchronize()."""
    model, optimizer, inputs, logits = build(args, device)
    if args.compile:
        model = torch.compile(model)
    loss_fn = nn.CrossEntropyLoss()
    from contextlib import nullcontext
    from torch.profiler import record_function

    def annotated(name):
        return record_function(f"## {name} ##") if args.annotate else nullcontext()

    def step(i):
        if args.loader_ms > 0:
            with record_function("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"):
                time.sleep(args.loader_ms / 1000.0)
        x, targets = inputs(i)
        optimizer.zero_grad(set_to_none=True)
        with annotated("forward"):
            loss = loss_fn(logits(model(x)), targets)
        if args.sync_after_forward:
            loss.item()
        with annotated("backward"):
            loss.backward()
        with annotated("optimizer"):
            optimizer.step()
        torch.cuda.synchronize()

    return step


def marked_steps(step, lockstep):
    """`step`, each call inside an NVTX range "step K"; with `lockstep`, after a barrier."""
    def marked(i):
        if lockstep:
            import torch.distributed as dist
            dist.barrier()
        torch.cuda.nvtx.range_push(f"step {i}")
        try:
            step(i)
        finally:
            torch.cuda.nvtx.range_pop()
    return marked


def main():
    args = parse_args()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.distributed:
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(args.seed)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)

    step = training_step(args, device)
    if args.nvtx_steps:
        step = marked_steps(step, args.distributed)

    for i in range(args.warmup):
        step(i)

    profiler = None
    if args.mode != "none":
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CUDA]
        if args.mode == "torch-cpu-cuda":
            activities.insert(0, ProfilerActivity.CPU)
        # Steps are recorded (ProfilerStep#N) only under a schedule; one cycle of every
        # measured step, not repeated, so leaving the profiler starts no empty second cycle.
        schedule = (torch.profiler.schedule(wait=0, warmup=0, active=args.steps, repeat=1)
                    if args.profiler_steps else None)
        profiler = profile(activities=activities, schedule=schedule)
        profiler.__enter__()
    if args.profiler_api:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()

    times = []
    cpu_before, wall_before = thread_cpu_seconds(), time.perf_counter()
    for i in range(args.steps):
        start = time.perf_counter()
        step(args.warmup + i)
        times.append((time.perf_counter() - start) * 1000.0)
        if profiler is not None and args.profiler_steps:
            profiler.step()
    threads = thread_cpu_summary(cpu_before, thread_cpu_seconds(), time.perf_counter() - wall_before)

    if args.profiler_api:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    if profiler is not None:
        profiler.__exit__(None, None, None)
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "torch_trace.json" if world == 1 else f"torch_trace_rank{rank}.json")
        profiler.export_chrome_trace(path)
        print(f"torch trace: {path}", file=sys.stderr)

    if args.distributed:
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()

    print(f"RESULT mode={args.mode} model={args.model} rank={rank} steps={args.steps} "
          f"median_step_ms={statistics.median(times):.4f} mean_step_ms={statistics.mean(times):.4f} "
          f"min_step_ms={min(times):.4f} threads={threads}", flush=True)


if __name__ == "__main__":
    main()
