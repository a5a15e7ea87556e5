"""kn.distributed under `mpirun -np N python3 data_parallel.py`: the
collectives eager and inside kn.jit against NumPy, and a data-parallel
training step whose parameters stay identical on every rank. Exits non-zero
on the first mismatch (ctest runs it with 2 ranks)."""

import sys

import numpy as np

import kiln as kn


def expect(condition, what):
    if not condition:
        print(f"rank {kn.distributed.rank()}: {what}", file=sys.stderr, flush=True)
        sys.exit(1)


def main():
    kn.distributed.init()
    rank, size = kn.distributed.rank(), kn.distributed.world_size()
    expect(size >= 2, f"expected at least 2 ranks, got {size}")
    mine = np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * rank
    every = [np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * r for r in range(size)]
    x = kn.asarray(mine)

    def collectives(v):
        return {
            "sum": kn.distributed.all_reduce(v),
            "mean": kn.distributed.all_reduce(v, "mean"),
            "max": kn.distributed.all_reduce(v, "max"),
            "gather": kn.distributed.all_gather(v, axis=0),
            "broadcast": kn.distributed.broadcast(v, root=1),
        }

    for label, results in (("eager", collectives(x)), ("jit", kn.jit(collectives)(x))):
        np.testing.assert_allclose(np.asarray(results["sum"]), sum(every))
        np.testing.assert_allclose(np.asarray(results["mean"]), sum(every) / size)
        np.testing.assert_allclose(np.asarray(results["max"]), every[-1])
        np.testing.assert_allclose(np.asarray(results["gather"]), np.concatenate(every, axis=0))
        np.testing.assert_allclose(np.asarray(results["broadcast"]), every[1])
        print(f"rank {rank}: collectives {label} ok", flush=True)

    # Data-parallel least squares: each rank its own shard, gradients averaged
    # inside the jitted step; the parameters must stay the same on every rank.
    rng = np.random.default_rng(rank)
    features = rng.standard_normal((64, 4)).astype(np.float32)
    targets = features @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)

    def loss(w, xs, ys):
        return kn.mean((xs @ w - ys) ** 2)

    @kn.jit
    def step(w, xs, ys):
        grads = kn.distributed.average_gradients(kn.grad(loss)(w, xs, ys))
        return w - 0.1 * grads

    w = kn.zeros(4)
    for _ in range(200):
        w = step(w, kn.asarray(features), kn.asarray(targets))
    spread = np.asarray(kn.distributed.all_reduce(w, "max") - kn.distributed.all_reduce(w, "min"))
    expect(np.all(spread == 0), f"parameters differ between ranks by {spread}")
    np.testing.assert_allclose(np.asarray(w), [1.0, -2.0, 0.5, 3.0], atol=1e-3)
    expect(step.stats().compiles + step.stats().persistent_hits == 1, f"step compiled {step.stats()}")
    print(f"rank {rank}: data-parallel training ok, w = {np.asarray(w)}", flush=True)


if __name__ == "__main__":
    main()
