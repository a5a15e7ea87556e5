"""The top-level namespace is an Array API standard (2023.12) namespace: its
version, the inspection API, the presence of every function, constant and
dtype the standard lists, the array object's attributes and methods, and the
behaviour of the data-type functions."""

import math

import numpy as np
import pytest

import kiln as kn
from conftest import check

CREATION = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
            "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]
DATA_TYPE_FUNCTIONS = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]
ELEMENTWISE = ["abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
               "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil",
               "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide",
               "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log",
               "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor",
               "maximum", "minimum", "multiply", "negative", "not_equal", "positive", "pow", "real", "remainder",
               "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc"]
INDEXING = ["take"]
LINEAR_ALGEBRA = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
MANIPULATION = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims",
                "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"]
SEARCHING = ["argmax", "argmin", "nonzero", "searchsorted", "where"]
SET = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]
SORTING = ["argsort", "sort"]
STATISTICAL = ["cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]
UTILITY = ["all", "any"]
CONSTANTS = ["e", "inf", "nan", "newaxis", "pi"]
# complex64 and complex128 are checked in test_complex.py, the fft extension in test_fft.py
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
LINALG = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
          "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
          "trace", "vecdot", "vector_norm"]

FAMILIES = {
    "creation": CREATION, "data_type": DATA_TYPE_FUNCTIONS, "elementwise": ELEMENTWISE, "indexing": INDEXING,
    "linear_algebra": LINEAR_ALGEBRA, "manipulation": MANIPULATION, "searching": SEARCHING, "set": SET,
    "sorting": SORTING, "statistical": STATISTICAL, "utility": UTILITY,
}


def test_version():
    assert kn.__array_api_version__ == "2023.12"


def test_array_namespace():
    x = kn.zeros((2,))
    assert x.__array_namespace__() is kn
    assert x.__array_namespace__(api_version="2023.12") is kn
    assert x.__array_namespace__(api_version=None) is kn


def test_array_namespace_refuses_an_unknown_version():
    with pytest.raises(ValueError):
        kn.zeros((2,)).__array_namespace__(api_version="1999.01")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_function_of_the_standard_is_present(family):
    missing = [name for name in FAMILIES[family] if not callable(getattr(kn, name, None))]
    assert not missing, f"{family} functions missing from kn: {missing}"


def test_constants():
    missing = [name for name in CONSTANTS if not hasattr(kn, name)]
    assert not missing, f"constants missing: {missing}"
    assert kn.e == math.e and kn.pi == math.pi
    assert kn.inf == math.inf and math.isnan(kn.nan)
    assert kn.newaxis is None
    assert all(type(getattr(kn, c)) is float for c in ("e", "inf", "nan", "pi"))


def test_dtypes_are_present():
    missing = [name for name in DTYPES if not hasattr(kn, name)]
    assert not missing, f"dtypes missing: {missing}"
    assert kn.bool == kn.bool_


def test_linalg_extension_is_complete():
    missing = [name for name in LINALG if not callable(getattr(kn.linalg, name, None))]
    assert not missing, f"kn.linalg misses {missing}"


# ---- Inspection ----------------------------------------------------------------------------------


def test_namespace_info():
    info = kn.__array_namespace_info__()
    caps = info.capabilities()
    assert set(caps) >= {"boolean indexing", "data-dependent shapes"}
    assert caps["boolean indexing"] is False  # boolean masks are refused (use kn.where)
    assert isinstance(caps["data-dependent shapes"], bool)
    devices = info.devices()
    assert len(devices) >= 1
    assert info.default_device() in devices
    assert kn.zeros((1,)).device == info.default_device()


def test_default_dtypes():
    info = kn.__array_namespace_info__()
    d = info.default_dtypes()
    assert d["real floating"] == kn.float32
    assert d["integral"] == kn.int32
    assert d["indexing"] in (kn.int32, kn.int64)
    assert info.default_dtypes(device=info.default_device()) == d
    # the defaults are what creation gives
    assert kn.arange(3).dtype == d["integral"]
    assert kn.asarray(1.0).dtype == d["real floating"]
    assert kn.argmax(kn.arange(3)).dtype == d["indexing"]


def test_dtypes_inspection():
    info = kn.__array_namespace_info__()
    every = info.dtypes()
    for name in DTYPES:
        assert every[name] == getattr(kn, name), name
    assert set(info.dtypes(kind="real floating")) >= {"float32", "float64"}
    assert set(info.dtypes(kind="real floating")) <= {"float16", "bfloat16", "float32", "float64"}
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind="bool")) == {"bool"}
    assert set(info.dtypes(kind=("bool", "signed integer"))) == {"bool", "int8", "int16", "int32", "int64"}


# ---- The array object --------------------------------------------------------------------------------


def test_array_object_attributes_and_methods():
    x = kn.zeros((2, 3))
    for attr in ("dtype", "device", "mT", "ndim", "shape", "size", "T"):
        assert hasattr(x, attr), attr
    for method in ("__abs__", "__add__", "__and__", "__array_namespace__", "__bool__", "__complex__", "__dlpack__",
                   "__dlpack_device__", "__eq__", "__float__", "__floordiv__", "__ge__", "__getitem__", "__gt__",
                   "__index__", "__int__", "__invert__", "__le__", "__lshift__", "__lt__", "__matmul__", "__mod__",
                   "__mul__", "__ne__", "__neg__", "__or__", "__pos__", "__pow__", "__rshift__", "__sub__",
                   "__truediv__", "__xor__", "to_device"):
        assert callable(getattr(x, method, None)), method


def test_size_of_an_array_is_an_int_or_none():
    assert kn.zeros((2, 0, 3)).size == 0


# ---- Data-type functions ----------------------------------------------------------------------------


def test_finfo():
    f = kn.finfo(kn.float32)
    assert f.bits == 32
    assert f.eps == float(np.finfo(np.float32).eps)
    assert f.max == float(np.finfo(np.float32).max)
    assert f.min == float(np.finfo(np.float32).min)
    assert f.smallest_normal == float(np.finfo(np.float32).tiny)
    assert f.dtype == kn.float32
    assert kn.finfo(kn.float64).bits == 64
    assert kn.finfo(kn.float16).eps == float(np.finfo(np.float16).eps)
    assert kn.finfo(kn.bfloat16).bits == 16 and kn.finfo(kn.bfloat16).eps == 2.0 ** -7
    assert kn.finfo(kn.zeros((1,), dtype=kn.float64)).bits == 64


def test_iinfo():
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        i = kn.iinfo(getattr(kn, name))
        assert i.bits == np.iinfo(name).bits
        assert i.min == np.iinfo(name).min and i.max == np.iinfo(name).max
        assert i.dtype == getattr(kn, name)
    with pytest.raises((TypeError, ValueError)):
        kn.iinfo(kn.float32)
    with pytest.raises((TypeError, ValueError)):
        kn.finfo(kn.int32)


@pytest.mark.parametrize("dtype,kind,expected", [
    ("bool", "bool", True), ("int8", "signed integer", True), ("uint8", "signed integer", False),
    ("uint16", "unsigned integer", True), ("int64", "integral", True), ("float32", "integral", False),
    ("float32", "real floating", True), ("float64", "numeric", True), ("bool", "numeric", False),
    ("float64", "complex floating", False),
    ("int32", ("bool", "integral"), True), ("float16", "real floating", True),
    ("int32", "int32", True), ("int32", "int64", False),
])
def test_isdtype(dtype, kind, expected):
    kind = tuple(getattr(kn, k) if k in DTYPES else k for k in kind) if isinstance(kind, tuple) else (
        getattr(kn, kind) if kind in DTYPES else kind)
    assert kn.isdtype(getattr(kn, dtype), kind) is expected


@pytest.mark.parametrize("src,dst,expected", [
    ("int8", "int16", True), ("int16", "int8", False), ("uint8", "int16", True), ("int8", "uint8", False),
    ("float32", "int32", False), ("float32", "float64", True), ("float64", "float32", False),
    ("uint32", "int64", True), ("int64", "int32", False),
])
def test_can_cast(src, dst, expected):
    assert kn.can_cast(getattr(kn, src), getattr(kn, dst)) is expected


def test_can_cast_from_an_array():
    assert kn.can_cast(kn.zeros((1,), dtype=kn.int8), kn.int32) is True


def test_result_type():
    assert kn.result_type(kn.int8, kn.uint8) == kn.int16
    assert kn.result_type(kn.float32, kn.float64) == kn.float64
    assert kn.result_type(kn.zeros((1,), dtype=kn.int16), kn.int32) == kn.int32
    assert kn.result_type(kn.int8, kn.int16, kn.int32) == kn.int32


def test_astype_standard_signature():
    x = kn.asarray([1.5, -2.5])
    check(kn.astype(x, kn.int32), np.array([1, -2], np.int32))
    check(kn.astype(x, kn.float64, copy=True), np.array([1.5, -2.5]))
    y = kn.astype(x, kn.float32, device=x.device)
    check(y, np.array([1.5, -2.5], np.float32))


# ---- Standard semantics where they differ from NumPy's ------------------------------------------------


def test_keyword_only_and_positional_only_arguments():
    x = kn.arange(6).reshape(2, 3)
    check(kn.sum(x, axis=1, keepdims=True), np.sum(np.arange(6).reshape(2, 3), axis=1, keepdims=True)
          .astype(np.int32))
    check(kn.concat([x, x], axis=1), np.concatenate([np.arange(6).reshape(2, 3)] * 2, axis=1).astype(np.int32))
    check(kn.squeeze(kn.zeros((1, 2)), axis=0), np.zeros(2, np.float32))


def test_unstack_returns_a_tuple():
    parts = kn.unstack(kn.arange(6).reshape(3, 2))
    assert isinstance(parts, tuple) and len(parts) == 3


def test_matrix_transpose_needs_a_matrix():
    with pytest.raises((ValueError, kn.Error)):
        kn.matrix_transpose(kn.arange(3))


def test_std_var_take_correction():
    a = np.arange(10, dtype=np.float64)
    check(kn.std(kn.asarray(a), correction=1), np.std(a, ddof=1))
    check(kn.var(kn.asarray(a), correction=0.0), np.var(a))


def test_linalg_namespace_returns_named_tuples():
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    for fn, fields in [("eigh", ("eigenvalues", "eigenvectors")), ("qr", ("Q", "R")),
                       ("slogdet", ("sign", "logabsdet")), ("svd", ("U", "S", "Vh"))]:
        res = getattr(kn.linalg, fn)(kn.asarray(a))
        for field in fields:
            assert isinstance(getattr(res, field), kn.Array), (fn, field)


def test_from_dlpack_device_keyword():
    a = np.arange(3, dtype=np.float32)
    check(kn.from_dlpack(a, device=kn.zeros((1,)).device), a)
    check(kn.from_dlpack(a, device=None), a)


def test_from_dlpack_copy_keyword_with_numpy():
    a = np.arange(3, dtype=np.float32)
    x = kn.from_dlpack(a, copy=True)
    check(x, a)
    assert np.asarray(x).__array_interface__["data"][0] != a.__array_interface__["data"][0]
    y = kn.from_dlpack(a, copy=False)
    assert np.asarray(y).__array_interface__["data"][0] == a.__array_interface__["data"][0]


def test_from_dlpack_copy_keyword_with_torch():
    import torch
    t = torch.arange(3, dtype=torch.float32)
    x = kn.from_dlpack(t, copy=True)
    check(x, t.numpy())
    assert np.asarray(x).__array_interface__["data"][0] != t.data_ptr()


# Cases the standard's own test suite found.
def test_reduction_dtype_names_the_result_dtype():
    x = kn.asarray(np.array([200, 100], dtype=np.uint8))
    assert kn.sum(x, dtype=kn.uint8).dtype == kn.uint8
    assert int(kn.sum(x, dtype=kn.uint8)) == (300 % 256)
    assert kn.prod(kn.ones((3,), dtype=kn.float32), dtype=kn.float64).dtype == kn.float64
    assert kn.cumulative_sum(kn.ones((3,), dtype=kn.int8), dtype=kn.int8).dtype == kn.int8


def test_clip_keeps_the_dtype_of_x():
    x = kn.asarray(np.array([1, 5, 9], dtype=np.int8))
    result = kn.clip(x, max=kn.asarray(np.array([4, 4, 4], dtype=np.int16)))
    assert result.dtype == kn.int8
    np.testing.assert_array_equal(np.asarray(result), [1, 4, 4])


def test_vecdot_keeps_the_promoted_dtype():
    a = kn.asarray(np.array([1, 2, 3], dtype=np.uint8))
    assert kn.vecdot(a, a).dtype == kn.uint8
    assert int(kn.vecdot(a, a)) == 14


def test_unstack_of_an_empty_axis_is_an_empty_tuple():
    assert kn.unstack(kn.zeros((0, 3))) == ()


def test_zero_d_integer_arrays_stand_for_sizes():
    assert kn.ones(kn.asarray(2)).shape == (2,)
    assert kn.zeros((kn.asarray(3), 2)).shape == (3, 2)
    with pytest.raises(TypeError):
        kn.ones(kn.asarray(2.0))
