"""kiln from Python, side by side with PyTorch, NumPy and the same calls in
C++ (bench_python_reference), in one run. Not a test: run by
scripts/bench.sh bench_python.

Rows (min and median over repetitions; each ratio is kiln / peer):
  eager x + 1 on f32[8]: kiln vs torch.Tensor.__add__ (goal <= 0.5), NumPy shown
  np.asarray(kiln array) and kn.asarray(NumPy array) of 2^24 f32, no copy (goal <= 5 us), a copy shown
  W1 chain (tanh(0.7x + 0.3) * sigmoid(x) - 0.5x^2) eager at 2^20, 2^24, and
  the MLP's forward pass (784-512-512-10, batch 256) eager: Python vs C++ (goal <= 1.1)
"""

import os
import statistics
import subprocess
import sys
import timeit

import numpy as np
import torch

import kiln as kn

REPEATS = int(os.environ.get("KILN_BENCH_REPEATS", "7"))


def measure(call, number):
    """Per-call seconds: min and median over REPEATS runs of `number` calls."""
    call()
    times = [t / number for t in timeit.repeat(call, number=number, repeat=REPEATS)]
    return min(times), statistics.median(times)


def row(label, kiln_time, peer_label=None, peer_time=None, goal=None):
    text = "%-58s kiln %9.3f us (median %9.3f)" % (label, kiln_time[0] * 1e6, kiln_time[1] * 1e6)
    if peer_time is not None:
        text += " | %s %9.3f us (median %9.3f) | ratio %.2f (median %.2f)" % (
            peer_label, peer_time[0] * 1e6, peer_time[1] * 1e6, kiln_time[0] / peer_time[0], kiln_time[1] / peer_time[1])
    if goal is not None:
        text += " | goal %s" % goal
    print(text, flush=True)


def small_add():
    x = kn.ones((8,))
    t = torch.ones(8)
    a = np.ones(8, dtype=np.float32)
    kiln_time = measure(lambda: x + 1, 20000)
    torch_time = measure(lambda: t + 1, 20000)
    numpy_time = measure(lambda: a + 1, 20000)
    row("eager x + 1, f32[8] vs torch", kiln_time, "torch", torch_time, "<= 0.5")
    row("eager x + 1, f32[8] vs NumPy", kiln_time, "numpy", numpy_time)


def interop():
    n = 1 << 24
    host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    x = kn.asarray(host, copy=True)
    row("np.asarray(x), 2^24 f32, shares the buffer", measure(lambda: np.asarray(x), 1000), goal="<= 5 us")
    row("kn.asarray(np_array), 2^24 f32, shares the buffer", measure(lambda: kn.asarray(host), 1000), goal="<= 5 us")
    row("  beside it: a copy, np.array(np_array)", measure(lambda: np.array(host), 5))
    row("  beside it: a copy, kn.asarray(np_array, copy=True)", measure(lambda: kn.asarray(host, copy=True), 5))


def reference_times(binary):
    output = subprocess.run([binary, str(REPEATS)], check=True, capture_output=True, text=True).stdout
    times = {}
    for line in output.splitlines():
        name, low, middle = line.split()
        times[name] = (float(low) * 1e-6, float(middle) * 1e-6)
    return times


def eager_chains(reference):
    for n, name in ((1 << 20, "w1_2^20"), (1 << 24, "w1_2^24")):
        x = kn.random.normal(kn.random.key(1), (n,))
        python_time = measure(lambda: kn.tanh(0.7 * x + 0.3) * kn.sigmoid(x) - 0.5 * x * x, 5)
        row("W1 %s eager, Python vs C++" % name[3:], python_time, "C++", reference[name], "<= 1.1")
    keys = kn.random.split(kn.random.key(0), 3)

    def dense(key, fan_in, fan_out):
        return kn.random.normal(key, (fan_in, fan_out)) * float(np.sqrt(2.0 / fan_in))

    w1, w2, w3 = dense(keys[0], 784, 512), dense(keys[1], 512, 512), dense(keys[2], 512, 10)
    b1, b2, b3 = kn.zeros((512,)), kn.zeros((512,)), kn.zeros((10,))
    batch = kn.random.normal(kn.random.key(2), (256, 784))

    def forward():
        h = kn.relu(batch @ w1 + b1)
        h = kn.relu(h @ w2 + b2)
        return h @ w3 + b3

    row("MLP forward eager, Python vs C++", measure(forward, 20), "C++", reference["mlp_forward"], "<= 1.1")
    row("x + 1 on f32[8] in C++ (the floor under Python's row)", reference["add_f32[8]"])


def main():
    print("threads: kiln %s, torch %d" % (os.environ.get("KILN_THREADS", "default"), torch.get_num_threads()))
    small_add()
    interop()
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    if binary:
        eager_chains(reference_times(binary))
    else:
        print("(no bench_python_reference given: the Python-vs-C++ rows are skipped)")


if __name__ == "__main__":
    main()
