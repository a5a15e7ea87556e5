"""kn.Array: attributes, conversions to Python, repr, and every operator
(reflected and in-place forms included; in-place forms rebind, arrays stay
immutable)."""

import math
import operator

import numpy as np
import pytest

import kiln as kn
from conftest import ALL_NP, FLOATS, INTEGERS, NUMERIC, check, kd, npd, sample


# ---- Attributes -----------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (2, 0, 4), (1, 2, 3, 4)])
def test_attributes(shape):
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = kn.asarray(data)
    assert isinstance(x, kn.Array)
    assert x.shape == shape
    assert type(x.shape) is tuple
    assert all(type(d) is int for d in x.shape)
    assert x.ndim == len(shape)
    assert type(x.ndim) is int
    assert x.size == data.size
    assert type(x.size) is int
    assert x.dtype == kn.float32


@pytest.mark.parametrize("name", ALL_NP)
def test_dtype_attribute_matches_numpy_input(name):
    x = kn.asarray(sample((3,), name))
    assert x.dtype == kd(name)
    assert np.asarray(x).dtype == npd(name)


def test_dtypes_are_distinct():
    names = ALL_NP + ["bfloat16"]
    objects = [kd(n) if n != "bfloat16" else kn.bfloat16 for n in names]
    for i, a in enumerate(objects):
        for j, b in enumerate(objects):
            assert (a == b) == (i == j), (names[i], names[j])


def test_transpose_attributes():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = kn.asarray(data)
    check(x.mT, np.swapaxes(data, -1, -2))
    m = kn.asarray(data[0])
    check(m.T, data[0].T)
    check(m.mT, data[0].T)


# ---- Conversions to Python --------------------------------------------------------


@pytest.mark.parametrize("name,value,pytype", [
    ("bool", True, bool),
    ("int8", -7, int),
    ("int32", 123456, int),
    ("int64", 2**40 + 3, int),
    ("uint8", 250, int),
    ("uint64", 2**63 + 5, int),
    ("float16", 1.5, float),
    ("float32", 0.25, float),
    ("float64", 1.0 / 3.0, float),
])
def test_item(name, value, pytype):
    x = kn.asarray(np.array(value, dtype=name))
    got = x.item()
    assert type(got) is pytype
    assert got == np.array(value, dtype=name).item()


def test_item_of_one_element_array_of_any_rank():
    assert kn.asarray(np.full((1, 1, 1), 4, np.int32)).item() == 4


def test_tolist_matches_numpy():
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = kn.asarray(data).tolist()
    assert got == [[0, 1, 2], [3, 4, 5]]
    assert all(type(v) is int for row in got for v in row)
    fl = kn.asarray(np.array([[0.5, -1.0]], np.float32)).tolist()
    assert fl == [[0.5, -1.0]] and type(fl[0][0]) is float
    b = kn.asarray(np.array([True, False])).tolist()
    assert b == [True, False] and type(b[0]) is bool
    assert kn.asarray(np.float64(2.5)).tolist() == 2.5
    assert kn.asarray(np.zeros((2, 0), np.float32)).tolist() == [[], []]


def test_float_int_bool_of_0d():
    assert float(kn.asarray(2.5)) == 2.5
    assert int(kn.asarray(7)) == 7
    assert int(kn.asarray(-2.75)) == -2  # truncates, as Python's int(float)
    assert bool(kn.asarray(0)) is False
    assert bool(kn.asarray(3)) is True
    assert bool(kn.asarray(True)) is True
    assert bool(kn.asarray(0.0)) is False


def test_index_dunder_lets_0d_integer_arrays_index_python_sequences():
    seq = [10, 20, 30]
    assert seq[kn.asarray(2)] == 30
    assert operator.index(kn.asarray(np.int64(1))) == 1
    with pytest.raises(TypeError):
        operator.index(kn.asarray(1.5))


def test_len():
    assert len(kn.zeros((4, 2))) == 4
    assert len(kn.zeros((0, 3))) == 0
    with pytest.raises(TypeError):
        len(kn.asarray(1.0))


def test_bool_of_many_elements_is_an_error():
    with pytest.raises((ValueError, TypeError, kn.Error)):
        bool(kn.asarray([1, 2]))


def test_float_of_many_elements_is_an_error():
    with pytest.raises((ValueError, TypeError, kn.Error)):
        float(kn.asarray([1.0, 2.0]))


def test_iteration_gives_rows():
    data = np.arange(6, dtype=np.int32).reshape(3, 2)
    rows = list(kn.asarray(data))
    assert len(rows) == 3
    for row, want in zip(rows, data):
        check(row, want)
    with pytest.raises((TypeError, kn.Error)):
        list(kn.asarray(1))


def test_arrays_are_not_hashable():
    with pytest.raises(TypeError):
        hash(kn.asarray(np.array([1, 2], np.int32)))


# ---- repr and str ---------------------------------------------------------------


def _squash(s):
    return "".join(s.split())


def test_repr_like_numpy():
    x = kn.asarray(np.array([[1, 2], [3, 4]], np.int32))
    r = repr(x)
    assert "[[1,2],[3,4]]" in _squash(r)
    assert "int32" in r
    f = kn.asarray(np.array([0.5, 1.25, -2.0], np.float32))
    assert "[0.5,1.25,-2.]" in _squash(repr(f))
    assert "float32" in repr(f)
    assert "True" in repr(kn.asarray(np.array([True, False])))
    assert "bool" in repr(kn.asarray(np.array([True, False])))


def test_str_like_numpy():
    assert str(kn.asarray(np.array([1, 2, 3], np.int32))) == "[1 2 3]"
    assert str(kn.asarray(np.array([[1, 2], [3, 4]], np.int32))) == "[[1 2]\n [3 4]]"
    assert str(kn.asarray(np.float32(1.5))) == "1.5"


def test_repr_of_large_array_is_summarized():
    r = repr(kn.arange(100000))
    assert "..." in r
    assert len(r) < 1000


# ---- Operators ------------------------------------------------------------------

BINARY = [
    (operator.add, np.add),
    (operator.sub, np.subtract),
    (operator.mul, np.multiply),
]


@pytest.mark.parametrize("name", NUMERIC)
@pytest.mark.parametrize("op,ref", BINARY, ids=["add", "sub", "mul"])
def test_arithmetic_operators(name, op, ref):
    a, b = sample((3, 4), name, 1), sample((3, 4), name, 2)
    if name in INTEGERS and name.startswith("uint") and op is operator.sub:
        a, b = np.maximum(a, b), np.minimum(a, b)
    check(op(kn.asarray(a), kn.asarray(b)), ref(a, b), dtype=name)


@pytest.mark.parametrize("name", ["int32", "int64", "float32", "float64"])
def test_true_division(name):
    a = sample((5,), name, 1)
    b = sample((5,), name, 2)
    b = np.where(b == 0, 3, b).astype(name)
    want_dtype = name if name in FLOATS else "float32"
    check(kn.asarray(a) / kn.asarray(b), (a.astype(np.float64) / b).astype(want_dtype), dtype=want_dtype)


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8", "float32", "float64"])
def test_floor_division_and_remainder_operators(name):
    a = sample((4, 5), name, 3)
    b = sample((4, 5), name, 4)
    b = np.where(b == 0, 3, b).astype(name)
    x, y = kn.asarray(a), kn.asarray(b)
    check(x // y, np.floor_divide(a, b))
    check(x % y, np.remainder(a, b))


@pytest.mark.parametrize("name", ["int32", "float32"])
def test_divmod_builtin(name):
    a = sample((4, 5), name, 3)
    b = np.where(sample((4, 5), name, 4) == 0, 3, sample((4, 5), name, 4)).astype(name)
    q, r = divmod(kn.asarray(a), kn.asarray(b))
    check(q, np.floor_divide(a, b))
    check(r, np.remainder(a, b))
    q, r = divmod(kn.asarray(a), 3)
    check(q, np.floor_divide(a, np.array(3, name)))
    check(r, np.remainder(a, np.array(3, name)))


@pytest.mark.parametrize("name", ["int32", "int64", "float32", "float64"])
def test_power_operator(name):
    a = sample((6,), name, 5, low=1 if name in INTEGERS else 0.5, high=4 if name in INTEGERS else 2.0)
    b = sample((6,), name, 6, low=0 if name in INTEGERS else -2.0, high=3)
    check(kn.asarray(a) ** kn.asarray(b), np.power(a, b))


def test_matmul_operator():
    a = sample((3, 4), "float32", 1)
    b = sample((4, 2), "float32", 2)
    check(kn.asarray(a) @ kn.asarray(b), a @ b)


@pytest.mark.parametrize("name", ["bool", "int8", "int32", "uint16", "int64", "uint64"])
def test_bitwise_operators(name):
    a, b = sample((7,), name, 1), sample((7,), name, 2)
    x, y = kn.asarray(a), kn.asarray(b)
    check(x & y, a & b)
    check(x | y, a | b)
    check(x ^ y, a ^ b)
    check(~x, ~a)


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8", "uint32"])
def test_shift_operators(name):
    a = sample((6,), name, 1, low=0, high=10)
    s = np.array([0, 1, 2, 3, 4, 5], dtype=name)
    x, n = kn.asarray(a), kn.asarray(s)
    check(x << n, np.left_shift(a, s))
    check(x >> n, np.right_shift(a, s))


@pytest.mark.parametrize("name", ["int16", "int32", "float32", "float64"])
def test_unary_operators(name):
    a = sample((2, 3), name, 1)
    x = kn.asarray(a)
    check(-x, -a)
    check(+x, a)
    check(abs(x), np.abs(a))


@pytest.mark.parametrize("name", NUMERIC)
def test_comparison_operators(name):
    a, b = sample((10,), name, 1), sample((10,), name, 2)
    b[:3] = a[:3]
    x, y = kn.asarray(a), kn.asarray(b)
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        check(op(x, y), op(a, b), dtype="bool")


def test_reflected_operators_with_python_numbers():
    a = np.array([1.0, 2.0, 4.0], np.float32)
    x = kn.asarray(a)
    check(1 + x, 1 + a)
    check(10 - x, 10 - a)
    check(3 * x, 3 * a)
    check(2 / x, 2 / a)
    check(7 // x, 7 // a)
    check(7 % x, 7 % a)
    check(2 ** x, 2 ** a)
    check(1.5 < x, 1.5 < a, dtype="bool")
    i = kn.asarray(np.array([1, 2, 3], np.int32))
    check(6 & i, 6 & np.array([1, 2, 3], np.int32))
    check(6 | i, 6 | np.array([1, 2, 3], np.int32))
    check(6 ^ i, 6 ^ np.array([1, 2, 3], np.int32))
    check(1 << i, np.array([2, 4, 8], np.int32))
    check(64 >> i, np.array([32, 16, 8], np.int32))


def test_matmul_of_matrix_and_vector():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = kn.asarray(a)
    check(x @ kn.asarray([1.0, 0.0, 2.0]), a @ np.array([1, 0, 2], np.float32))


@pytest.mark.parametrize("op,iop", [
    (operator.add, operator.iadd), (operator.sub, operator.isub), (operator.mul, operator.imul),
    (operator.truediv, operator.itruediv), (operator.floordiv, operator.ifloordiv),
    (operator.mod, operator.imod), (operator.pow, operator.ipow),
])
def test_in_place_arithmetic_rebinds(op, iop):
    a = np.array([1.5, 2.0, 3.0], np.float32)
    x = kn.asarray(a)
    alias = x
    x = iop(x, 2.0)
    check(x, op(a, np.float32(2.0)))
    check(alias, a)  # the original array is unchanged: arrays are immutable
    assert x is not alias


@pytest.mark.parametrize("op,iop", [
    (operator.and_, operator.iand), (operator.or_, operator.ior), (operator.xor, operator.ixor),
    (operator.lshift, operator.ilshift), (operator.rshift, operator.irshift),
])
def test_in_place_bitwise_rebinds(op, iop):
    a = np.array([1, 6, 12], np.int32)
    x = kn.asarray(a)
    alias = x
    x = iop(x, 2)
    check(x, op(a, 2))
    check(alias, a)


def test_in_place_matmul_rebinds():
    a = np.eye(2, dtype=np.float32) * 2
    x = kn.asarray(a)
    alias = x
    x @= kn.asarray(np.array([[1, 2], [3, 4]], np.float32))
    check(x, a @ np.array([[1, 2], [3, 4]], np.float32))
    check(alias, a)


def test_in_place_on_an_array_shared_with_numpy_does_not_write_through():
    a = np.array([1.0, 2.0], np.float32)
    x = kn.asarray(a)
    x += 1
    np.testing.assert_array_equal(a, [1.0, 2.0])
    check(x, np.array([2.0, 3.0], np.float32))


def test_setitem_is_refused_and_points_to_at():
    x = kn.asarray(np.array([1, 2, 3], np.int32))
    with pytest.raises((TypeError, kn.Error)) as info:
        x[0] = 5
    assert ".at" in str(info.value)
    check(x, np.array([1, 2, 3], np.int32))


def test_operators_with_numpy_scalars():
    a = np.array([1.0, 2.0], np.float32)
    x = kn.asarray(a)
    check(x * np.float32(3), a * 3)
    check(x + np.float32(0.5), a + np.float32(0.5))


def test_truthiness_of_comparisons():
    x = kn.asarray(np.array([1, 2, 3], np.int32))
    assert bool(kn.all(x == x))
    assert not bool(kn.any(x != x))
    assert bool((x == x)[0])


def test_float_special_values_roundtrip():
    a = np.array([np.inf, -np.inf, np.nan, -0.0], np.float32)
    x = kn.asarray(a)
    got = np.asarray(x)
    assert got[0] == np.inf and got[1] == -np.inf and math.isnan(got[2])
    assert math.copysign(1.0, got[3]) == -1.0


def test_operators_with_numpy_arrays_on_the_right_give_kiln_arrays():
    a = np.array([1.0, 2.0], np.float32)
    x = kn.asarray(a)
    got = x + np.array([0.5, 0.5], np.float32)
    assert isinstance(got, kn.Array)
    check(got, a + 0.5)
    got = x * np.arange(2, dtype=np.int32)
    assert isinstance(got, kn.Array)
    check(got, a * np.arange(2), dtype="float32")
