"""kiln from Python, side by side with PyTorch, NumPy and the same calls in
C++ (bench_python_reference), in one run. Not a test: run by
scripts/bench.sh bench_python.

Rows (min and median over repetitions; each ratio is kiln / peer):
  eager x + 1 on f32[8]: kiln vs torch.Tensor.__add__ (goal <= 0.5), NumPy shown
  np.asarray(kiln array) and kn.asarray(NumPy array) of 2^24 f32, no copy (goal <= 5 us), a copy shown
  W1 chain (tanh(0.7x + 0.3) * sigmoid(x) - 0.5x^2) eager at 2^20, 2^24, and
  the MLP's forward pass (784-512-512-10, batch 256) eager: Python vs C++ (goal <= 1.1)
  kn.jit hits: x + 1 against kiln::jit's, and a 1,000-operation function that
  reads a captured array and number (goal <= 50 us), beside the same call re-run
  the MLP training step (Adam, donated parameters): Python vs C++, each the min
  over KILN_BENCH_PROCESSES (3) fresh processes (goal <= 1.05), and kn.jit vs
  PyTorch eager in this process (goal <= 0.7)
  per-example gradients: kn.jit(kn.vmap(kn.grad(f))) vs a loop of kn.jit(kn.grad(f)) (goal >= 10x)
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


# The same executable runs at different speeds in different processes on
# this machine (7.3-11.8 ms for the MLP step from Python, 6.7-9.8 ms from
# C++; huge-page backing is a likely cause): the Python-vs-C++ MLP step row
# takes each side's min over PROCESSES fresh processes, and the median of
# their medians.
PROCESSES = int(os.environ.get("KILN_BENCH_PROCESSES", "3"))


def combine(samples):
    return min(s[0] for s in samples), statistics.median(s[1] for s in samples)


def reference_times(binary):
    runs = {}
    for _ in range(PROCESSES):
        output = subprocess.run([binary, str(REPEATS)], check=True, capture_output=True, text=True).stdout
        for line in output.splitlines():
            name, low, middle = line.split()
            scale = 1 if name.endswith("_nodes") else 1e-6
            runs.setdefault(name, []).append((float(low) * scale, float(middle) * scale))
    # Rows against this one process use the first reference process's times;
    # rows against PROCESSES Python processes (the MLP step) combine them all.
    return {name: samples[0] for name, samples in runs.items()}, {
        name: combine(samples) for name, samples in runs.items()}


def python_step_times():
    """The Python MLP step timed in PROCESSES fresh processes, as the C++ one is."""
    samples = []
    for _ in range(PROCESSES):
        output = subprocess.run([sys.executable, __file__, "--mlp-step"], check=True, capture_output=True, text=True)
        low, middle = output.stdout.split()
        samples.append((float(low), float(middle)))
    return combine(samples)


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


def mlp_step():
    """The demo's MLP step (784-512-512-10, batch 256, Adam), jitted with
    donated parameters: (a call of it, its graph's node count)."""
    keys = kn.random.split(kn.random.key(0), 3)

    def dense(key, fan_in, fan_out):
        return kn.random.normal(key, (fan_in, fan_out)) * float(np.sqrt(2.0 / fan_in))

    params = {
        "w1": dense(keys[0], 784, 512), "b1": kn.zeros((512,)),
        "w2": dense(keys[1], 512, 512), "b2": kn.zeros((512,)),
        "w3": dense(keys[2], 512, 10), "b3": kn.zeros((10,)),
    }
    state = {"mean": kn.tree_map(kn.zeros_like, params), "variance": kn.tree_map(kn.zeros_like, params),
             "step": kn.asarray(0.0, dtype=kn.float32)}
    batch = kn.random.normal(kn.random.key(2), (256, 784))
    labels = kn.random.randint(kn.random.key(3), (256,), 0, 10)
    beta1, beta2, learning_rate, epsilon = 0.9, 0.999, 1e-3, 1e-8

    def loss(p, x, y):
        h = kn.nn.relu(x @ p["w1"] + p["b1"])
        h = kn.nn.relu(h @ p["w2"] + p["b2"])
        log_probabilities = kn.nn.log_softmax(h @ p["w3"] + p["b3"])
        return -kn.mean(kn.sum(kn.nn.one_hot(y, 10) * log_probabilities, axis=-1))

    def train_step(p, s, x, y):
        value, grads = kn.value_and_grad(loss)(p, x, y)
        t = s["step"] + 1.0
        mean = kn.tree_map(lambda m, g: beta1 * m + (1 - beta1) * g, s["mean"], grads)
        variance = kn.tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g, s["variance"], grads)
        step_size = learning_rate / (1.0 - kn.exp(t * float(np.log(beta1))))
        scale = 1.0 / kn.sqrt(1.0 - kn.exp(t * float(np.log(beta2))))
        updated = kn.tree_map(lambda w, m, v: w - step_size * m / (kn.sqrt(v) * scale + epsilon), p, mean, variance)
        return updated, {"mean": mean, "variance": variance, "step": t}, value

    step = kn.jit(train_step, donate_argnums=(0, 1))
    carried = [params, state]

    def kiln_step():
        carried[0], carried[1], _ = step(carried[0], carried[1], batch, labels)

    return kiln_step, step.lower(carried[0], carried[1], batch, labels).num_nodes


def mlp_training_step(reference):
    """The MLP step against the same step jitted in C++ and PyTorch eager."""
    kiln_step, nodes = mlp_step()
    row("MLP training step, Python vs C++ (both jitted; %d vs %d nodes; min of %d processes each)"
        % (nodes, reference["mlp_train_step_nodes"][0], PROCESSES), python_step_times(), "C++",
        reference["mlp_train_step"], "<= 1.05")
    kiln_time = measure(kiln_step, 5)
    learning_rate = 1e-3
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    torch_batch = torch.randn(256, 784)
    torch_labels = torch.randint(0, 10, (256,))

    def torch_step():
        optimizer.zero_grad()
        value = torch.nn.functional.cross_entropy(model(torch_batch), torch_labels)
        value.backward()
        optimizer.step()

    row("MLP training step, kn.jit vs PyTorch eager", kiln_time, "torch", measure(torch_step, 5), "<= 0.7")


def jit_hits(reference):
    """What a hit costs: the function is not run again when its guards hold."""
    x = kn.ones((8,))
    add_one = kn.jit(lambda v: v + 1)
    row("kn.jit(x + 1) hit on f32[8], Python vs C++ kiln::jit", measure(lambda: add_one(x), 20000), "C++",
        reference["jit_add_f32[8]"])
    weights = kn.ones((8,))
    decay = 0.5

    def thousand_operations(v):
        for _ in range(500):
            v = v * decay + weights  # a captured number and a captured array
        return v

    jitted = kn.jit(thousand_operations)
    row("hit on 1,000 traced ops reading a captured array and number", measure(lambda: jitted(x), 200),
        goal="<= 50 us")
    assert jitted.stats().traces == 1, "the guards failed: every call re-ran the function"
    retraced = kn.jit(thousand_operations)
    retraced._guards = _AlwaysUnguarded()
    row("  beside it: the same call re-running the function (no guards)", measure(lambda: retraced(x), 20))


class _AlwaysUnguarded(dict):
    def get(self, key, default=None):
        return ()  # every signature unguarded: each call traces

    def __setitem__(self, key, value):
        pass


def per_example_gradients():
    """kn.jit(kn.vmap(kn.grad(f))) against a Python loop of kn.jit(kn.grad(f))."""
    keys = kn.random.split(kn.random.key(5), 2)
    params = {"w1": kn.random.normal(keys[0], (64, 128)) * 0.1, "w2": kn.random.normal(keys[1], (128, 10)) * 0.1}
    xs = kn.random.normal(kn.random.key(6), (256, 64))
    ys = kn.random.randint(kn.random.key(7), (256,), 0, 10)

    def loss(p, x, y):
        log_probabilities = kn.nn.log_softmax(kn.tanh(x @ p["w1"]) @ p["w2"])
        return -kn.sum(kn.nn.one_hot(y, 10) * log_probabilities)

    batched = kn.jit(kn.vmap(kn.grad(loss), in_axes=(None, 0, 0)))
    single = kn.jit(kn.grad(loss))
    rows = [(xs[i], ys[i]) for i in range(256)]
    vmapped = measure(lambda: batched(params, xs, ys), 5)
    looped = measure(lambda: [single(params, x, y) for x, y in rows], 1)
    print("%-58s vmap %9.1f us | loop %9.1f us | speedup %.1fx (median %.1fx) | goal >= 10x"
          % ("per-example gradients, 256 examples", vmapped[0] * 1e6, looped[0] * 1e6, looped[0] / vmapped[0],
             looped[1] / vmapped[1]), flush=True)


def main():
    # PyTorch shares OpenBLAS with kiln and sets its thread count (here to one
    # per physical core): both get kiln's count, so that every ratio compares
    # the same threads and kiln's matrix products are not slowed by torch's setting.
    threads = int(os.environ.get("KILN_THREADS", os.cpu_count()))
    torch.set_num_threads(threads)
    print("threads: kiln %d, torch %d (OpenBLAS shared)" % (threads, torch.get_num_threads()))
    small_add()
    interop()
    per_example_gradients()
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    if binary:
        reference, over_processes = reference_times(binary)
        eager_chains(reference)
        jit_hits(reference)
        mlp_training_step(over_processes)
    else:
        print("(no bench_python_reference given: the Python-vs-C++ rows are skipped)")


if __name__ == "__main__":
    if sys.argv[1:] == ["--mlp-step"]:
        low, middle = measure(mlp_step()[0], 5)
        print(low, middle)
    else:
        main()
