"""An MLP trained on scikit-learn's handwritten digits (8x8 images, 1,797
samples) with a jitted Adam step whose parameters are donated.

    python3 examples/python/digits_mlp.py [--epochs 40]

It prints the loss as it trains, the test accuracy, how many times the step
compiled, and why it compiled the last time (the last batch is smaller).
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits

import kiln as kn


def init_params(key, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = kn.random.split(key)
        scale = np.sqrt(2.0 / fan_in)
        params.append({"w": kn.random.normal(sub, (fan_in, fan_out)) * scale, "b": kn.zeros(fan_out)})
    return params


def forward(params, x):
    for layer in params[:-1]:
        x = kn.nn.relu(x @ layer["w"] + layer["b"])
    last = params[-1]
    return x @ last["w"] + last["b"]


def loss_fn(params, x, y):
    logits = forward(params, x)
    log_probs = logits - kn.logsumexp(logits, axis=1, keepdims=True)
    return -kn.mean(kn.take_along_axis(log_probs, y[:, None], axis=1))


def adam_step(params, state, x, y, step, learning_rate=3e-3, beta1=0.9, beta2=0.999, eps=1e-8):
    loss, grads = kn.value_and_grad(loss_fn)(params, x, y)
    m = kn.tree_map(lambda m, g: beta1 * m + (1 - beta1) * g, state["m"], grads)
    v = kn.tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g, state["v"], grads)
    m_hat_scale = 1 / (1 - beta1**step)
    v_hat_scale = 1 / (1 - beta2**step)
    params = kn.tree_map(
        lambda p, m, v: p - learning_rate * (m * m_hat_scale) / (kn.sqrt(v * v_hat_scale) + eps), params, m, v
    )
    return params, {"m": m, "v": v}, loss


# The parameters and the optimizer state are donated: the step updates them in place.
train_step = kn.jit(adam_step, donate_argnums=(0, 1), name="adam_step")


def accuracy(params, x, y):
    predictions = np.asarray(kn.argmax(kn.jit(forward)(params, x), axis=1))
    return float(np.mean(predictions == y))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()

    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(images))
    test, train = order[:360], order[360:]
    x_train, y_train = images[train], labels[train]
    x_test, y_test = images[test], labels[test]
    print(f"digits: {len(x_train)} training and {len(x_test)} test images of {images.shape[1]} pixels")

    params = init_params(kn.random.key(0), [64, 128, 128, 10])
    state = {"m": kn.tree_map(kn.zeros_like, params), "v": kn.tree_map(kn.zeros_like, params)}
    rng = np.random.default_rng(1)
    step = 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        shuffled = rng.permutation(len(x_train))
        # The last batch of an epoch is smaller: its first step compiles once
        # more (explained below), and later epochs reuse that executable.
        for begin in range(0, len(shuffled), args.batch):
            batch = shuffled[begin : begin + args.batch]
            step += 1
            params, state, loss = train_step(params, state, x_train[batch], y_train[batch], float(step))
        if epoch % 10 == 0 or epoch == args.epochs - 1:
            print(f"epoch {epoch:3d}  loss {float(loss):.4f}")
    seconds = time.perf_counter() - start
    stats = train_step.stats()
    print(f"{step} steps in {seconds:.2f} s ({seconds / step * 1e3:.2f} ms per step)")
    print(f"test accuracy: {accuracy(params, x_test, y_test):.3f}")
    print(f"adam_step: {stats.calls} calls, {stats.compiles + stats.persistent_hits} executables "
          f"({stats.compiles} compiled, {stats.persistent_hits} from the persistent cache), {stats.traces} traces")
    print(f"why it compiled the last time: {train_step.last_miss_explanation()}")


if __name__ == "__main__":
    main()
