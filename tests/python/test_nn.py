"""kn.nn against NumPy references: convolution (1-D, 2-D; strides, padding,
dilation, groups, both layouts), its transpose, pooling, normalizations and
activations."""

import itertools
import math

import numpy as np
import pytest

import kiln as kn
from conftest import check


def out_size(n, k, s, d, lo, hi):
    return (n + lo + hi - (d * (k - 1) + 1)) // s + 1


def same_pairs(sizes, windows, strides):
    pairs = []
    for n, k, s in zip(sizes, windows, strides):
        out = -(-n // s)
        total = max((out - 1) * s + k - n, 0)
        pairs.append((total // 2, total - total // 2))
    return pairs


def np_conv(x, w, strides, pairs, dilation, groups):
    """Channels last: x [N, *S, C], w [*K, C/groups, O]."""
    nsp = x.ndim - 2
    xp = np.pad(x, [(0, 0)] + list(pairs) + [(0, 0)])
    ks = w.shape[:nsp]
    outs = [out_size(x.shape[1 + i], ks[i], strides[i], dilation[i], *pairs[i]) for i in range(nsp)]
    cin_g = w.shape[-2]
    o = w.shape[-1]
    o_g = o // groups
    y = np.zeros((x.shape[0], *outs, o), np.float64)
    for offs in itertools.product(*[range(k) for k in ks]):
        idx = tuple(slice(offs[i] * dilation[i], offs[i] * dilation[i] + strides[i] * (outs[i] - 1) + 1, strides[i])
                    for i in range(nsp))
        patch = xp[(slice(None),) + idx]
        for g in range(groups):
            y[..., g * o_g:(g + 1) * o_g] += patch[..., g * cin_g:(g + 1) * cin_g] @ w[offs][:, g * o_g:(g + 1) * o_g]
    return y


CONV_CASES = [
    # spatial, kernel, C, O, strides, padding, dilation, groups
    ((7,), (3,), 2, 4, (1,), "valid", (1,), 1),
    ((9,), (3,), 4, 6, (2,), "same", (1,), 2),
    ((6, 7), (3, 3), 3, 5, (1, 1), "valid", (1, 1), 1),
    ((6, 7), (3, 2), 3, 4, (2, 1), "same", (1, 1), 1),
    ((8, 8), (3, 3), 4, 4, (1, 1), [(1, 1), (2, 0)], (2, 1), 2),
    ((5, 5), (1, 1), 2, 3, (1, 1), "valid", (1, 1), 1),
    ((7, 6), (3, 3), 4, 8, (2, 2), [(1, 1), (1, 1)], (1, 1), 4),
]


def _pairs(padding, spatial, kernel, strides, dilation):
    if padding == "valid":
        return [(0, 0)] * len(spatial)
    if padding == "same":
        return same_pairs(spatial, [d * (k - 1) + 1 for k, d in zip(kernel, dilation)], strides)
    return padding


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_channels_last(case):
    spatial, kernel, c, o, strides, padding, dilation, groups = case
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, *spatial, c))
    w = rng.normal(size=(*kernel, c // groups, o))
    got = kn.nn.conv(kn.asarray(x), kn.asarray(w), strides=strides, padding=padding, dilation=dilation, groups=groups)
    want = np_conv(x, w, strides, _pairs(padding, spatial, kernel, strides, dilation), dilation, groups)
    check(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", CONV_CASES[:5])
def test_conv_channels_first(case):
    spatial, kernel, c, o, strides, padding, dilation, groups = case
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, *spatial, c)).astype(np.float32)
    w = rng.normal(size=(*kernel, c // groups, o)).astype(np.float32)
    want = np_conv(x.astype(np.float64), w.astype(np.float64), strides,
                   _pairs(padding, spatial, kernel, strides, dilation), dilation, groups)
    nsp = len(spatial)
    x_first = np.moveaxis(x, -1, 1).copy()
    w_first = np.moveaxis(np.moveaxis(w, -1, 0), -1, 1).copy()  # [O, C/g, *K]
    got = kn.nn.conv(kn.asarray(x_first), kn.asarray(w_first), strides=strides, padding=padding, dilation=dilation,
                     groups=groups, channels_last=False)
    check(got, np.moveaxis(want, -1, 1).astype(np.float32), rtol=1e-4, atol=1e-4)
    assert got.ndim == nsp + 2


def test_conv_transpose_is_the_adjoint_of_conv():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1, 7, 6, 3))
    w = rng.normal(size=(3, 3, 3, 4))
    y = rng.normal(size=(1, 3, 2, 4))
    conv_x = np.asarray(kn.nn.conv(kn.asarray(x), kn.asarray(w), strides=(2, 2), padding="valid"))
    assert conv_x.shape == y.shape
    xt = kn.nn.conv_transpose(kn.asarray(y), kn.asarray(w), (7, 6), strides=(2, 2), padding="valid")
    assert xt.shape == x.shape
    # <conv(x), y> == <x, conv_transpose(y)>
    np.testing.assert_allclose(np.sum(conv_x * y), np.sum(x * np.asarray(xt)), rtol=1e-10)


def np_pool(x, window, strides, pairs, kind):
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0)] + list(pairs) + [(0, 0)], constant_values=fill)
    nsp = x.ndim - 2
    outs = [(xp.shape[1 + i] - window[i]) // strides[i] + 1 for i in range(nsp)]
    parts = []
    for offs in itertools.product(*[range(k) for k in window]):
        idx = tuple(slice(offs[i], offs[i] + strides[i] * (outs[i] - 1) + 1, strides[i]) for i in range(nsp))
        parts.append(xp[(slice(None),) + idx])
    stack = np.stack(parts)
    return stack.max(0) if kind == "max" else stack.sum(0) / len(parts)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("window,strides,padding", [
    ((2, 2), None, "valid"),
    ((3, 3), (1, 1), "valid"),
    ((3, 2), (2, 1), "same"),
    ((2, 2), (2, 2), [(1, 0), (0, 1)]),
])
def test_pooling(kind, window, strides, padding):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 6, 7, 3))
    s = strides or window
    pairs = _pairs(padding, (6, 7), window, s, (1, 1))
    fn = kn.nn.max_pool if kind == "max" else kn.nn.avg_pool
    got = fn(kn.asarray(x), window, strides=strides, padding=padding)
    check(got, np_pool(x, window, s, pairs, kind), rtol=1e-12, atol=1e-12)


def test_pooling_channels_first():
    x = np.random.default_rng(5).normal(size=(1, 2, 4, 4))
    got = kn.nn.max_pool(kn.asarray(x), (2, 2), channels_last=False)
    want = np.moveaxis(np_pool(np.moveaxis(x, 1, -1), (2, 2), (2, 2), [(0, 0), (0, 0)], "max"), -1, 1)
    check(got, want)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_layer_norm_and_rms_norm(axis):
    x = np.random.default_rng(6).normal(size=(3, 4, 5)) * 3 + 1
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, keepdims=True)
    check(kn.nn.layer_norm(kn.asarray(x), axis=axis), (x - mean) / np.sqrt(var + 1e-5))
    check(kn.nn.layer_norm(kn.asarray(x), axis=axis, eps=0.1), (x - mean) / np.sqrt(var + 0.1))
    check(kn.nn.rms_norm(kn.asarray(x), axis=axis), x / np.sqrt((x * x).mean(axis=axis, keepdims=True) + 1e-6))


def test_activations():
    x = np.linspace(-30, 30, 61)
    erf = np.vectorize(math.erf)
    phi = 0.5 * (1 + erf(x / np.sqrt(2)))
    check(kn.nn.gelu(kn.asarray(x)), x * phi)
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    check(kn.nn.gelu(kn.asarray(x), approximate=True), tanh_form)
    sig = 1 / (1 + np.exp(-x))
    check(kn.nn.silu(kn.asarray(x)), x * sig)
    check(kn.nn.softplus(kn.asarray(x)), np.logaddexp(0, x))
    check(kn.nn.log_sigmoid(kn.asarray(x)), -np.logaddexp(0, -x))
    check(kn.nn.sigmoid(kn.asarray(x)), sig)
    check(kn.nn.relu(kn.asarray(x)), np.maximum(x, 0))


def test_activations_do_not_overflow_in_float32():
    x = np.array([-200.0, -50.0, 0.0, 50.0, 200.0], np.float32)
    got = np.asarray(kn.nn.softplus(kn.asarray(x)))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, np.logaddexp(0, x.astype(np.float64)), rtol=1e-5, atol=1e-30)
    got = np.asarray(kn.nn.log_sigmoid(kn.asarray(x)))
    np.testing.assert_allclose(got, -np.logaddexp(0, -x.astype(np.float64)), rtol=1e-5, atol=1e-30)


def test_softmax_in_nn():
    x = np.random.default_rng(7).normal(size=(3, 4)) * 50
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    check(kn.nn.softmax(kn.asarray(x)), e / e.sum(axis=-1, keepdims=True))
    check(kn.nn.log_softmax(kn.asarray(x)), np.log(e / e.sum(axis=-1, keepdims=True)))
    check(kn.nn.logsumexp(kn.asarray(x), axis=-1),
          x.max(axis=-1) + np.log(e.sum(axis=-1)))


def test_one_hot_in_nn():
    idx = np.array([[0, 3], [2, 1]])
    check(kn.nn.one_hot(kn.asarray(idx), 4), np.eye(4, dtype=np.float32)[idx])
    check(kn.nn.one_hot(kn.asarray(idx), 4, dtype=kn.int32), np.eye(4, dtype=np.int32)[idx])


def test_reduce_window():
    x = np.arange(16, dtype=np.float64).reshape(4, 4)
    got = kn.nn.reduce_window(kn.asarray(x), "sum", (2, 2), strides=(2, 2))
    check(got, x.reshape(2, 2, 2, 2).sum(axis=(1, 3)))


def test_conv_with_mismatched_channels_is_an_error():
    with pytest.raises((ValueError, kn.Error)):
        kn.nn.conv(kn.zeros((1, 5, 5, 3)), kn.zeros((3, 3, 4, 2)))
