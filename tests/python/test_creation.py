"""Creation functions against NumPy, with kiln's defaults (int32, float32)
and the dtype= keyword."""

import numpy as np
import pytest

import kiln as kn
from conftest import ALL_NP, NUMERIC, check, kd, npd


# ---- asarray / array from Python objects -------------------------------------------------


@pytest.mark.parametrize("obj,want", [
    (1, "int32"),
    (1.5, "float32"),
    (True, "bool"),
    ([1, 2, 3], "int32"),
    ([1.0, 2, 3], "float32"),
    ([[True, False]], "bool"),
    ([[1, 2], [3, 4]], "int32"),
    ([], "float32"),
    ([[], []], "float32"),
    ((1, 2.5), "float32"),
])
def test_asarray_defaults(obj, want):
    x = kn.asarray(obj)
    check(x, np.array(obj, dtype=want), dtype=want)


@pytest.mark.parametrize("name", ALL_NP)
def test_asarray_dtype_keyword(name):
    x = kn.asarray([0, 1, 2], dtype=kd(name))
    check(x, np.array([0, 1, 2], dtype=name), dtype=name)


def test_asarray_of_large_python_ints():
    check(kn.asarray(2**40), np.array(2**40, np.int64), dtype="int64")
    check(kn.asarray([1, 2**40]), np.array([1, 2**40], np.int64), dtype="int64")


def test_asarray_of_nested_kiln_arrays():
    a = kn.asarray([1.0, 2.0])
    check(kn.asarray([a, a]), np.array([[1.0, 2.0], [1.0, 2.0]], np.float32))
    assert kn.asarray(a) is a or bool(kn.all(kn.asarray(a) == a))


def test_asarray_of_numpy_scalars_keeps_their_dtype():
    check(kn.asarray(np.float64(1.5)), np.float64(1.5), dtype="float64")
    check(kn.asarray(np.uint16(7)), np.uint16(7), dtype="uint16")
    check(kn.asarray(np.int64(3)), np.int64(3), dtype="int64")
    check(kn.asarray(np.float32(2.0)), np.float32(2.0), dtype="float32")
    check(kn.asarray(np.bool_(True)), np.bool_(True), dtype="bool")


def test_array_function():
    check(kn.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
    check(kn.array([1, 2], dtype=kn.float64), np.array([1.0, 2.0]))


def test_asarray_of_bfloat16():
    x = kn.asarray([1.0, 2.5, -3.0], dtype=kn.bfloat16)
    assert x.dtype == kn.bfloat16
    check(x.astype(kn.float32), np.array([1.0, 2.5, -3.0], np.float32))


# ---- Filled arrays -------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 4), 5])
def test_zeros_ones_empty(fn, shape):
    x = getattr(kn, fn)(shape)
    want_shape = (shape,) if isinstance(shape, int) else shape
    assert x.shape == want_shape
    assert x.dtype == kn.float32
    if fn != "empty":
        check(x, getattr(np, fn)(want_shape, np.float32))


@pytest.mark.parametrize("name", ALL_NP)
def test_zeros_ones_dtype(name):
    check(kn.zeros((2, 2), dtype=kd(name)), np.zeros((2, 2), name), dtype=name)
    check(kn.ones((3,), dtype=kd(name)), np.ones((3,), name), dtype=name)


@pytest.mark.parametrize("value,want", [(7, "int32"), (2.5, "float32"), (True, "bool")])
def test_full_default_dtype_follows_the_value(value, want):
    check(kn.full((2, 3), value), np.full((2, 3), value, dtype=want), dtype=want)


def test_full_with_dtype():
    check(kn.full((2,), 3, dtype=kn.float64), np.full((2,), 3.0))
    check(kn.full((2,), 1.9, dtype=kn.int16), np.full((2,), 1, np.int16), dtype="int16")
    check(kn.full((), 5, dtype=kn.uint8), np.uint8(5), dtype="uint8")


@pytest.mark.parametrize("name", ["int8", "uint16", "float16", "float64", "bool"])
def test_like_functions(name):
    base = kn.asarray(np.arange(6).reshape(2, 3).astype(name))
    check(kn.zeros_like(base), np.zeros((2, 3), name), dtype=name)
    check(kn.ones_like(base), np.ones((2, 3), name), dtype=name)
    check(kn.full_like(base, 1), np.full((2, 3), 1, name), dtype=name)
    e = kn.empty_like(base)
    assert e.shape == (2, 3) and e.dtype == kd(name)
    check(kn.zeros_like(base, dtype=kn.float32), np.zeros((2, 3), np.float32))


# ---- Ranges and matrices ----------------------------------------------------------------------


@pytest.mark.parametrize("args,kwargs,want", [
    ((5,), {}, "int32"),
    ((2, 9), {}, "int32"),
    ((2, 9, 3), {}, "int32"),
    ((9, 2, -2), {}, "int32"),
    ((0,), {}, "int32"),
    ((5, 2), {}, "int32"),
    ((1.0,), {}, "float32"),
    ((0, 1, 0.25), {}, "float32"),
    ((0.5, 3.0), {}, "float32"),
    ((-1, 1, 0.5), {}, "float32"),
    ((6,), {"dtype": kn.float64}, "float64"),
    ((1, 7, 2), {"dtype": kn.int64}, "int64"),
    ((3,), {"dtype": kn.uint8}, "uint8"),
])
def test_arange(args, kwargs, want):
    check(kn.arange(*args, **kwargs), np.arange(*args, dtype=want), dtype=want)


def test_arange_keywords():
    check(kn.arange(start=1, stop=4), np.arange(1, 4, dtype=np.int32))
    check(kn.arange(0, 10, step=3), np.arange(0, 10, 3, dtype=np.int32))


@pytest.mark.parametrize("args,kwargs", [
    ((0.0, 1.0, 5), {}),
    ((0.0, 1.0, 5), {"endpoint": False}),
    ((-2, 2, 1), {}),
    ((3, 3, 4), {}),
    ((1.0, 0.0, 0), {}),
    ((0.0, 10.0, 50), {}),
])
def test_linspace(args, kwargs):
    check(kn.linspace(*args, **kwargs), np.linspace(*args, **kwargs, dtype=np.float32))


def test_linspace_dtype():
    check(kn.linspace(0, 1, 7, dtype=kn.float64), np.linspace(0, 1, 7))


@pytest.mark.parametrize("args,kwargs", [
    ((3,), {}), ((2, 4), {}), ((4, 3), {"k": 1}), ((4,), {"k": -2}), ((3, 3), {"k": 5}),
])
def test_eye(args, kwargs):
    check(kn.eye(*args, **kwargs), np.eye(*args, **kwargs, dtype=np.float32))


def test_eye_dtype():
    check(kn.eye(3, dtype=kn.int32), np.eye(3, dtype=np.int32))
    check(kn.eye(2, dtype=kn.bool_), np.eye(2, dtype=bool))


def test_tri():
    check(kn.tri(3, 4, k=1), np.tri(3, 4, k=1, dtype=np.float32))


@pytest.mark.parametrize("name", NUMERIC)
def test_arange_then_astype_every_dtype(name):
    check(kn.arange(5).astype(kd(name)), np.arange(5).astype(name), dtype=name)


def test_creation_results_are_independent():
    a = kn.zeros((3,))
    b = kn.zeros((3,))
    c = a.at[0].set(1.0)
    check(a, np.zeros(3, np.float32))
    check(b, np.zeros(3, np.float32))
    check(c, np.array([1, 0, 0], np.float32))


def test_copy_function_or_asarray_copy():
    x = kn.asarray([1.0, 2.0])
    y = kn.asarray(x, copy=True)
    check(y, np.array([1.0, 2.0], np.float32))


def test_npd_helper_matches_kiln_names():
    for name in ALL_NP:
        assert np.asarray(kn.zeros((1,), dtype=kd(name))).dtype == npd(name)
