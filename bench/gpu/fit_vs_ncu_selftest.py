#!/usr/bin/env python3
"""Checks fit_vs_ncu.py on hand-made inputs: ncu's CSV (its own lines before the table, a
units row, names with parameter lists) is averaged per kernel name; kinetrace's figures come
from the fit for short kernels, from the averages for long ones, and none for unresolved ones;
a name off by more than the tolerance fails the run, one within it or unresolved does not."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "fit_vs_ncu.py")

NCU = '''==PROF== Connected to process 123
==PROF== Profiling "gemm" - 0: 0%....50%....100% - 8 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__throughput.avg.pct_of_peak_sustained_elapsed","sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed","sm__throughput.avg.pct_of_peak_sustained_elapsed"
"","","","","","","","","","","","%","%","%"
"0","123","python","h","void gemm<float>(int, float*)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","10.0","20.0","28.0"
"1","123","python","h","void gemm<float>(int, float*)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","12.0","22.0","30.0"
"2","123","python","h","relu_kernel(float*)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","70.0","0.0","15.0"
"3","123","python","h","long_conv(float*)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","40.0","60.0","80.0"
"4","123","python","h","twin_kernel(float*)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","40.0","0.0","50.0"
'''


def kernel(name, share, fit=None, averages=None):
    row = {"name": name, "kind": "compute", "share": share}
    if fit is not None:
        row["metric_fit"] = fit
    if averages is not None:
        row["gpu_bound"] = {"averages": averages}
    return row


def analysis(gemm_sm):
    fitted = {"SM throughput (%)": gemm_sm, "DRAM throughput (%)": 11.5,
              "Tensor pipe active (%)": 21.0}
    return {"ranks": [{"kernels": [
        kernel("void gemm<float>(int, float*)", 0.5,
               fit={"shorter_than_sample": True, "resolved": True, "values": fitted},
               averages={"SM throughput (%)": 9.0}),  # diluted: not what is compared
        kernel("long_conv(float*)", 0.2, averages={"SM throughput (%)": 78.0,
                                                   "DRAM throughput (%)": 41.0,
                                                   "Tensor pipe active (%)": 61.0}),
        kernel("twin_kernel(float*)", 0.15,
               fit={"shorter_than_sample": True, "resolved": False, "values": {}}),
        kernel("beyond_the_share(float*)", 0.15, averages={"SM throughput (%)": 1.0}),
    ]}]}


def run(gemm_sm, directory):
    with open(os.path.join(directory, "ncu.csv"), "w") as f:
        f.write(NCU)
    with open(os.path.join(directory, "analyze.json"), "w") as f:
        json.dump(analysis(gemm_sm), f)
    return subprocess.run([sys.executable, SCRIPT, os.path.join(directory, "analyze.json"),
                           os.path.join(directory, "ncu.csv")], capture_output=True, text=True)


def main():
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        good = run(30.0, d)
        check(good.returncode == 0, f"agreeing figures pass (rc {good.returncode}):\n{good.stdout}{good.stderr}")
        check("29.0 / 30.0 / +1.0" in good.stdout, f"gemm's SM: ncu's mean 29 against the fit's 30:\n{good.stdout}")
        check("| fitted |" in good.stdout and "| averages |" in good.stdout, "each name says where its figures come from")
        check("unresolved (no number given)" in good.stdout, "an unresolved name is said, not failed")
        check("beyond_the_share" not in good.stdout, "names past the share are not compared")
        check("85.0% of kernel time" in good.stdout, f"the share covered is said:\n{good.stdout}")
        bad = run(45.0, d)
        check(bad.returncode == 1, f"a name 16 points off fails (rc {bad.returncode})")
        check("OFF by 16.0" in bad.stdout, f"and says by how much:\n{bad.stdout}")
        trace = os.path.join(d, "trace.json")
        with open(trace, "w") as f:
            json.dump({"traceEvents": [
                {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1000, "dur": 5},
                {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 1400, "dur": 5},
                {"ph": "C", "cat": "gpu_metric", "name": "SM throughput", "pid": 0, "tid": 9,
                 "ts": 1500, "args": {"%": 3.0}},
                {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 1600, "dur": 5}]}, f)
        gap = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "analyze.json"),
                              os.path.join(d, "ncu.csv"), "--trace", trace],
                             capture_output=True, text=True)
        check("the first metric sample 0.5 ms after the first kernel; 2 of 3 kernels ran before it"
              in gap.stdout, f"the start-up gap is said:\n{gap.stdout}{gap.stderr}")
        with open(os.path.join(d, "ncu.csv"), "w") as f:
            f.write("not a table\n")
        broken = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "analyze.json"),
                                 os.path.join(d, "ncu.csv")], capture_output=True, text=True)
        check(broken.returncode == 2, "an unreadable ncu file exits 2")
    # A name's mean is weighted by its kernels' durations where ncu measured them (the fit's
    # value is time-weighted): 10 us at 20% and 30 us at 60% make 50%, not 40%.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "timed.csv")
        with open(path, "w") as f:
            f.write('"ID","Kernel Name","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed"\n'
                    '"","","usecond","%"\n'
                    '"0","k(int)","10","20"\n"1","k(int)","30","60"\n')
        sys.path.insert(0, HERE)
        import fit_vs_ncu
        weighted = fit_vs_ncu.read_ncu(path)["k"]["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
        check(abs(weighted - 50) < 1e-9, f"duration-weighted mean 50, not {weighted}")
        # ncu's and CUPTI's spellings of one kernel meet.
        cupti = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
                 "float, float, at::native::(anonymous namespace)::threshold_kernel_impl<float>("
                 "at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}>, "
                 "std::array<char*, 3ul> >(int, float, float)")
        ncu = ("void at::vectorized_elementwise_kernel<4, at::BinaryFunctor<float, float, float, "
               "void at::<unnamed>::threshold_kernel_impl<float>(at::TensorIteratorBase &, T1, "
               "T1)::[lambda(float, float) (instance 1)]>, std::array<char *, 3>>(int, T2, T3)")
        check(fit_vs_ncu.comparable_name(cupti) == fit_vs_ncu.comparable_name(ncu),
              f"{fit_vs_ncu.comparable_name(cupti)!r} != {fit_vs_ncu.comparable_name(ncu)!r}")
        transform = ("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, "
                     "true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>)")
        check(fit_vs_ncu.comparable_name(transform) == fit_vs_ncu.comparable_name(
            "void engines_precompiled::nchwToNhwcKernel<float, float, float, 0, 1, 2>(T)"),
            "bools, enum casts and left-out scopes")
    # Names in an anonymous namespace keep their own key (not all cut at "(anonymous").
    softmax = "void at::native::(anonymous namespace)::softmax<float>(float*, int)"
    check(fit_vs_ncu.base_name(softmax) == softmax[:softmax.rindex("(")],
          f"the parameter list is the last one: {fit_vs_ncu.base_name(softmax)!r}")
    check(fit_vs_ncu.function_name(softmax) == "softmax",
          f"the function's own name: {fit_vs_ncu.function_name(softmax)!r}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"fit_vs_ncu selftest: {'passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
