"""Reductions, statistics and cumulative operations against NumPy: axes
(int, tuple, negative, None), keepdims, result dtypes, empty inputs."""

import numpy as np
import pytest

import kiln as kn
from conftest import FLOATS, INTEGERS, NUMERIC, check, kd, sample


def find(name):
    """kiln's function `name`, top level first, then kn.nn (softmax & co)."""
    fn = getattr(kn, name, None)
    if fn is None:
        fn = getattr(kn.nn, name, None)
    assert fn is not None, f"kiln exposes no {name} (kn.{name} or kn.nn.{name})"
    return fn


AXES = [None, 0, 1, -1, (0, 2), (-1, -2), (0, 1, 2)]

# The accumulating dtype of sum, prod and cumulative sums: small integers
# accumulate in the default integer (JAX's, and the standard's).
SUM_DTYPE = {
    "bool": "int32", "int8": "int32", "int16": "int32", "int32": "int32", "int64": "int64",
    "uint8": "uint32", "uint16": "uint32", "uint32": "uint32", "uint64": "uint64",
    "float16": "float16", "float32": "float32", "float64": "float64",
}


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_axes_and_keepdims(axis, keepdims):
    a = sample((2, 3, 4), "float32")
    check(kn.sum(kn.asarray(a), axis=axis, keepdims=keepdims), np.sum(a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", ["bool"] + NUMERIC)
def test_sum_dtype(name):
    a = sample((3, 5), name, low=0 if name != "bool" else None, high=9 if name != "bool" else None)
    want = SUM_DTYPE[name]
    check(kn.sum(kn.asarray(a)), np.sum(a.astype(np.float64)).astype(want), dtype=want)
    check(kn.sum(kn.asarray(a), axis=1), np.sum(a.astype(np.float64), axis=1).astype(want), dtype=want)


@pytest.mark.parametrize("name", ["bool", "int8", "int32", "uint8", "float16", "float32", "float64"])
def test_prod_dtype(name):
    a = sample((2, 4), name, low=1 if name != "bool" else None, high=3 if name != "bool" else None)
    want = SUM_DTYPE[name]
    check(kn.prod(kn.asarray(a), axis=-1), np.prod(a.astype(np.float64), axis=-1).astype(want), dtype=want)


def test_sum_with_dtype_argument():
    a = sample((10,), "int8", low=100, high=120)
    check(kn.sum(kn.asarray(a), dtype=kn.int64), np.sum(a, dtype=np.int64), dtype="int64")
    f = sample((10,), "float32")
    check(kn.sum(kn.asarray(f), dtype=kn.float64), np.sum(f, dtype=np.float64), dtype="float64")
    check(kn.prod(kn.asarray(f), dtype=kn.float64), np.prod(f, dtype=np.float64), dtype="float64")


def test_float16_sum_accumulates_beyond_float16():
    a = np.full(4096, 1.0, np.float16)
    # 4096 ones summed in f16 steps would stop at 2048.
    check(kn.sum(kn.asarray(a)), np.float16(4096), dtype="float16")


@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("name", NUMERIC)
def test_max_min(fn, name):
    a = sample((3, 4, 2), name)
    x = kn.asarray(a)
    ref = getattr(np, fn)
    check(getattr(kn, fn)(x), ref(a), dtype=name)
    check(getattr(kn, fn)(x, axis=1), ref(a, axis=1), dtype=name)
    check(getattr(kn, fn)(x, axis=(0, 2), keepdims=True), ref(a, axis=(0, 2), keepdims=True), dtype=name)


def test_max_min_propagate_nan():
    a = np.array([[1.0, np.nan, 3.0], [0.0, 1.0, 2.0]], np.float32)
    check(kn.max(kn.asarray(a), axis=1), np.max(a, axis=1))
    check(kn.min(kn.asarray(a), axis=1), np.min(a, axis=1))


def test_max_of_nothing_is_an_error():
    with pytest.raises((ValueError, kn.Error)):
        kn.max(kn.zeros((0,)))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_mean(axis, name):
    a = sample((4, 6), name)
    check(kn.mean(kn.asarray(a), axis=axis), np.mean(a.astype(np.float64), axis=axis).astype(name), dtype=name)


def test_mean_of_integers_is_float32():
    a = np.arange(10, dtype=np.int32).reshape(2, 5)
    check(kn.mean(kn.asarray(a), axis=1), np.mean(a, axis=1).astype(np.float32), dtype="float32")
    check(kn.mean(kn.asarray(a), keepdims=True), np.mean(a, keepdims=True).astype(np.float32), dtype="float32")


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_std(correction, axis):
    a = sample((5, 7), "float64", 3)
    x = kn.asarray(a)
    check(kn.var(x, axis=axis, correction=correction), np.var(a, axis=axis, ddof=correction))
    check(kn.std(x, axis=axis, correction=correction), np.std(a, axis=axis, ddof=correction))
    check(kn.std(x, axis=axis, correction=correction, keepdims=True),
          np.std(a, axis=axis, ddof=correction, keepdims=True))


def test_var_of_integers_is_float32():
    a = np.arange(12, dtype=np.int32)
    check(kn.var(kn.asarray(a)), np.var(a).astype(np.float32), dtype="float32")


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("name", ["int8", "int32", "uint8", "int64", "float16", "float32", "float64"])
def test_argmax_argmin(fn, name):
    a = sample((4, 5, 3), name, 7)
    x = kn.asarray(a)
    ref = getattr(np, fn)
    for axis in (None, 0, 1, -1):
        got = getattr(kn, fn)(x, axis=axis)
        assert got.dtype in (kn.int32, kn.int64)
        np.testing.assert_array_equal(np.asarray(got), ref(a, axis=axis))
        assert got.shape == np.shape(ref(a, axis=axis))
    got = getattr(kn, fn)(x, axis=1, keepdims=True)
    np.testing.assert_array_equal(np.asarray(got), ref(a, axis=1)[:, None, :])


def test_argmax_first_of_ties_and_nan():
    a = np.array([1.0, 3.0, 3.0, 0.0], np.float32)
    assert int(kn.argmax(kn.asarray(a))) == 1
    n = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    assert int(kn.argmax(kn.asarray(n))) == int(np.argmax(n)) == 1
    assert int(kn.argmin(kn.asarray(n))) == int(np.argmin(n)) == 1


@pytest.mark.parametrize("fn", ["all", "any"])
@pytest.mark.parametrize("name", ["bool", "int32", "float32"])
def test_all_any(fn, name):
    a = sample((3, 4), name, 2)
    if name != "bool":
        a[0, :] = 0
    x = kn.asarray(a)
    ref = getattr(np, fn)
    for axis in (None, 0, 1, (0, 1)):
        check(getattr(kn, fn)(x, axis=axis), ref(a, axis=axis), dtype="bool")
    check(getattr(kn, fn)(x, axis=1, keepdims=True), ref(a, axis=1, keepdims=True), dtype="bool")


def test_all_any_of_nothing_and_nan():
    assert bool(kn.all(kn.zeros((0,)))) is True
    assert bool(kn.any(kn.zeros((0,)))) is False
    assert bool(kn.all(kn.asarray(np.array([np.nan], np.float32)))) is True


def test_cumulative_sum():
    a = sample((3, 4), "int32", 1)
    x = kn.asarray(a)
    check(kn.cumulative_sum(x, axis=1), np.cumsum(a, axis=1), dtype="int32")
    check(kn.cumulative_sum(x, axis=0), np.cumsum(a, axis=0), dtype="int32")
    v = a[0]
    check(kn.cumulative_sum(kn.asarray(v)), np.cumsum(v), dtype="int32")
    check(kn.cumulative_sum(kn.asarray(v), include_initial=True), np.concatenate([[0], np.cumsum(v)]).astype(np.int32))
    check(kn.cumulative_sum(kn.asarray(v), dtype=kn.float64), np.cumsum(v, dtype=np.float64))


def test_cumsum_numpy_name():
    a = sample((3, 4), "float32", 1)
    check(kn.cumsum(kn.asarray(a)), np.cumsum(a))  # flattened without an axis, as NumPy
    check(kn.cumsum(kn.asarray(a), axis=-1), np.cumsum(a, axis=-1))


@pytest.mark.parametrize("name", ["bool", "int8", "uint8", "int64", "float32"])
def test_cumsum_dtype(name):
    a = sample((6,), name, low=0 if name != "bool" else None, high=9 if name != "bool" else None)
    want = SUM_DTYPE[name]
    check(kn.cumulative_sum(kn.asarray(a)), np.cumsum(a.astype(np.float64)).astype(want), dtype=want)


def test_cumprod():
    a = sample((3, 4), "float64", 1)
    check(kn.cumprod(kn.asarray(a), axis=1), np.cumprod(a, axis=1))
    check(kn.cumprod(kn.asarray(a)), np.cumprod(a))


def test_cummax_cummin():
    a = np.array([[1.0, 3.0, 2.0, np.nan, 5.0], [4.0, 1.0, 6.0, 0.0, 2.0]], np.float32)
    check(kn.cummax(kn.asarray(a), axis=1), np.maximum.accumulate(a, axis=1))
    check(kn.cummin(kn.asarray(a), axis=1), np.minimum.accumulate(a, axis=1))


def test_count_nonzero():
    a = np.array([[0, 1, 2], [0, 0, 3]], np.int32)
    assert int(kn.count_nonzero(kn.asarray(a))) == 3
    np.testing.assert_array_equal(np.asarray(kn.count_nonzero(kn.asarray(a), axis=0)), [0, 1, 2])


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_median_and_quantile(axis):
    a = sample((5, 6), "float64", 4)
    x = kn.asarray(a)
    check(kn.median(x, axis=axis), np.median(a, axis=axis))
    check(kn.quantile(x, 0.3, axis=axis), np.quantile(a, 0.3, axis=axis))
    check(kn.quantile(x, [0.1, 0.5, 0.9], axis=axis), np.quantile(a, [0.1, 0.5, 0.9], axis=axis))


def test_median_of_integers_is_float32():
    a = np.array([3, 1, 4, 1, 5, 9], np.int32)
    check(kn.median(kn.asarray(a)), np.float32(np.median(a)), dtype="float32")


def test_logsumexp_softmax_log_softmax():
    a = sample((3, 5), "float64", 2) * 30  # large values: no overflow
    x = kn.asarray(a)
    m = a.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(a - m).sum(axis=-1, keepdims=True)))
    check(find("logsumexp")(x, axis=-1), lse[:, 0])
    check(find("softmax")(x, axis=-1), np.exp(a - lse))
    check(find("log_softmax")(x, axis=-1), a - lse)
    check(find("softmax")(x, axis=0), np.exp(a - a.max(0)) / np.exp(a - a.max(0)).sum(0))


def test_reductions_of_empty_axes():
    a = np.zeros((0, 3), np.float32)
    x = kn.asarray(a)
    check(kn.sum(x, axis=0), np.zeros(3, np.float32))
    check(kn.prod(x, axis=0), np.ones(3, np.float32))
    check(kn.sum(x, axis=1), np.zeros(0, np.float32))


def test_isclose_allclose_array_equal():
    a = np.array([1.0, 2.0, np.nan, np.inf], np.float32)
    b = np.array([1.0 + 1e-7, 2.1, np.nan, np.inf], np.float32)
    x, y = kn.asarray(a), kn.asarray(b)
    check(kn.isclose(x, y), np.isclose(a, b))
    check(kn.isclose(x, y, equal_nan=True), np.isclose(a, b, equal_nan=True))
    assert bool(kn.allclose(x, x, equal_nan=True)) is True
    assert bool(kn.allclose(x, y)) is False
    assert bool(kn.array_equal(x, x)) is False  # NaN != NaN
    assert bool(kn.array_equal(x, x, equal_nan=True)) is True
    assert bool(kn.array_equal(x, kn.asarray(a[:2]))) is False


@pytest.mark.parametrize("name", ["int32", "float32"])
def test_trace_and_diagonal(name):
    a = sample((4, 4), name, 5)
    x = kn.asarray(a)
    check(kn.trace(x), np.trace(a).astype(name), dtype=name)
    check(kn.trace(x, offset=1), np.trace(a, offset=1).astype(name), dtype=name)
    check(kn.diagonal(x), np.diagonal(a))
    check(kn.diagonal(x, offset=-1), np.diagonal(a, offset=-1))
