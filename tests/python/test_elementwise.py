"""Elementwise operations against NumPy: every unary and binary function over
the dtypes, broadcasting, JAX's promotion lattice and weakly typed Python
numbers."""

import math

import numpy as np
import pytest

import kiln as kn
from conftest import ALL_NP, FLOATS, INTEGERS, NUMERIC, SIGNED, UNSIGNED, check, kd, promote, sample


def float_sample(name, shape=(4, 5), seed=0, low=-3.0, high=3.0):
    return sample(shape, name, seed, low=low, high=high)


def ref_in_f64(fn, a, dtype):
    with np.errstate(all="ignore"):
        return fn(a.astype(np.float64)).astype(dtype)


# ---- Unary functions on floats -----------------------------------------------------

# name in kn, NumPy's function, the input range
UNARY_FLOAT = [
    ("abs", np.abs, (-3, 3)),
    ("negative", np.negative, (-3, 3)),
    ("positive", np.positive, (-3, 3)),
    ("square", np.square, (-3, 3)),
    ("sqrt", np.sqrt, (0.01, 9)),
    ("exp", np.exp, (-3, 3)),
    ("expm1", np.expm1, (-3, 3)),
    ("log", np.log, (0.01, 9)),
    ("log1p", np.log1p, (-0.9, 9)),
    ("log2", np.log2, (0.01, 9)),
    ("log10", np.log10, (0.01, 9)),
    ("sin", np.sin, (-3, 3)),
    ("cos", np.cos, (-3, 3)),
    ("tan", np.tan, (-1.2, 1.2)),
    ("sinh", np.sinh, (-3, 3)),
    ("cosh", np.cosh, (-3, 3)),
    ("tanh", np.tanh, (-3, 3)),
    ("asin", np.arcsin, (-0.99, 0.99)),
    ("acos", np.arccos, (-0.99, 0.99)),
    ("atan", np.arctan, (-3, 3)),
    ("asinh", np.arcsinh, (-3, 3)),
    ("acosh", np.arccosh, (1.01, 9)),
    ("atanh", np.arctanh, (-0.95, 0.95)),
    ("floor", np.floor, (-3, 3)),
    ("ceil", np.ceil, (-3, 3)),
    ("trunc", np.trunc, (-3, 3)),
    ("round", np.round, (-3, 3)),
    ("sign", np.sign, (-3, 3)),
    ("exp2", np.exp2, (-3, 3)),
    ("reciprocal", np.reciprocal, (0.1, 3)),
    ("degrees", np.degrees, (-3, 3)),
    ("radians", np.radians, (-3, 3)),
]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("fn,ref,domain", UNARY_FLOAT, ids=[u[0] for u in UNARY_FLOAT])
def test_unary_float(fn, ref, domain, name):
    a = float_sample(name, low=domain[0], high=domain[1])
    got = getattr(kn, fn)(kn.asarray(a))
    check(got, ref_in_f64(ref, a, name), dtype=name)


def test_unary_bfloat16():
    a = float_sample("float32", low=0.1, high=3)
    x = kn.asarray(a).astype(kn.bfloat16)
    a16 = np.asarray(x.astype(kn.float32))  # the bf16 values, exactly
    for fn, ref in [("exp", np.exp), ("sqrt", np.sqrt), ("tanh", np.tanh), ("log", np.log), ("sin", np.sin)]:
        check(getattr(kn, fn)(x), ref(a16.astype(np.float64)), dtype="bfloat16")


@pytest.mark.parametrize("fn,ref", [
    ("erf", lambda v: np.vectorize(math.erf)(v)),
    ("rsqrt", lambda v: 1 / np.sqrt(v)),
])
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_unary_kiln_extras(fn, ref, name):
    a = float_sample(name, low=0.05, high=3)
    check(getattr(kn, fn)(kn.asarray(a)), ref_in_f64(ref, a, name), dtype=name)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_erfinv_inverts_erf(name):
    a = float_sample(name, low=-0.95, high=0.95)
    y = kn.erfinv(kn.asarray(a))
    back = np.vectorize(math.erf)(np.asarray(y).astype(np.float64))
    np.testing.assert_allclose(back, a, rtol=1e-5, atol=1e-6)
    edges = np.asarray(kn.erfinv(kn.asarray(np.array([-1.0, 1.0, 1.5], name))))
    assert edges[0] == -np.inf and edges[1] == np.inf and np.isnan(edges[2])


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_sigmoid_and_relu(name):
    a = float_sample(name)
    sigmoid = getattr(kn, "sigmoid", None) or kn.nn.sigmoid
    relu = getattr(kn, "relu", None) or kn.nn.relu
    check(sigmoid(kn.asarray(a)), ref_in_f64(lambda v: 1 / (1 + np.exp(-v)), a, name), dtype=name)
    check(relu(kn.asarray(a)), np.maximum(a, 0), dtype=name)


def test_round_is_half_to_even():
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4999], np.float32)
    check(kn.round(kn.asarray(a)), np.round(a))


def test_domain_errors_give_nan_like_numpy():
    a = np.array([-1.0, -0.0, 0.0, 2.0, np.inf, np.nan], np.float64)
    x = kn.asarray(a)
    with np.errstate(all="ignore"):
        for fn, ref in [("sqrt", np.sqrt), ("log", np.log), ("acos", np.arccos), ("asin", np.arcsin),
                        ("atanh", np.arctanh), ("acosh", np.arccosh), ("log1p", np.log1p)]:
            check(getattr(kn, fn)(x), ref(a), dtype="float64")


@pytest.mark.parametrize("name", FLOATS)
def test_predicates(name):
    a = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, -0.0], name)
    x = kn.asarray(a)
    check(kn.isnan(x), np.isnan(a), dtype="bool")
    check(kn.isinf(x), np.isinf(a), dtype="bool")
    check(kn.isfinite(x), np.isfinite(a), dtype="bool")
    check(kn.signbit(x), np.signbit(a), dtype="bool")


@pytest.mark.parametrize("name", ["bool"] + INTEGERS)
def test_predicates_on_integers(name):
    a = sample((5,), name)
    x = kn.asarray(a)
    check(kn.isnan(x), np.zeros(5, bool), dtype="bool")
    check(kn.isinf(x), np.zeros(5, bool), dtype="bool")
    check(kn.isfinite(x), np.ones(5, bool), dtype="bool")


# ---- Unary functions on integers ---------------------------------------------------


@pytest.mark.parametrize("name", SIGNED)
def test_integer_unary_keep_the_dtype(name):
    a = sample((3, 4), name)
    x = kn.asarray(a)
    check(kn.abs(x), np.abs(a))
    check(kn.negative(x), np.negative(a))
    check(kn.sign(x), np.sign(a))
    check(kn.square(x), np.square(a))
    # The standard: rounding an integer array returns it unchanged.
    for fn in ("floor", "ceil", "trunc", "round"):
        check(getattr(kn, fn)(x), a, dtype=name)


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_unary(name):
    a = sample((6,), name)
    x = kn.asarray(a)
    check(kn.abs(x), a)
    check(kn.square(x), np.square(a))
    check(kn.bitwise_invert(x), np.invert(a))


@pytest.mark.parametrize("name", ["bool", "int8", "int32", "int64", "uint8"])
@pytest.mark.parametrize("fn,ref", [("exp", np.exp), ("sqrt", np.sqrt), ("sin", np.sin), ("log1p", np.log1p)])
def test_transcendental_of_integers_is_float32(name, fn, ref):
    a = sample((5,), name, low=0 if name != "bool" else None, high=9 if name != "bool" else None)
    got = getattr(kn, fn)(kn.asarray(a))
    check(got, ref_in_f64(ref, a, "float32"), dtype="float32")


def test_logical_not_and_invert():
    a = np.array([True, False, True])
    check(kn.logical_not(kn.asarray(a)), ~a)
    check(kn.bitwise_invert(kn.asarray(a)), ~a)
    i = np.array([0, 2, -3], np.int32)
    check(kn.logical_not(kn.asarray(i)), np.logical_not(i))


def test_nan_to_num():
    a = np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)
    check(kn.nan_to_num(kn.asarray(a)), np.nan_to_num(a))
    check(kn.nan_to_num(kn.asarray(a), nan=-1.0, posinf=9.0, neginf=-9.0),
          np.nan_to_num(a, nan=-1.0, posinf=9.0, neginf=-9.0))


# ---- Binary functions ----------------------------------------------------------------

BINARY_ALL = [
    ("add", np.add),
    ("subtract", np.subtract),
    ("multiply", np.multiply),
    ("maximum", np.maximum),
    ("minimum", np.minimum),
]


@pytest.mark.parametrize("name", NUMERIC)
@pytest.mark.parametrize("fn,ref", BINARY_ALL, ids=[b[0] for b in BINARY_ALL])
def test_binary_same_dtype(fn, ref, name):
    a, b = sample((3, 5), name, 1), sample((3, 5), name, 2)
    if name in UNSIGNED and fn == "subtract":
        a, b = np.maximum(a, b), np.minimum(a, b)
    check(getattr(kn, fn)(kn.asarray(a), kn.asarray(b)), ref(a, b), dtype=name)


BINARY_FLOAT = [
    ("divide", np.divide, (-3, 3), (0.5, 3)),
    ("pow", np.power, (0.1, 3), (-2, 2)),
    ("atan2", np.arctan2, (-3, 3), (-3, 3)),
    ("hypot", np.hypot, (-3, 3), (-3, 3)),
    ("logaddexp", np.logaddexp, (-3, 3), (-3, 3)),
    ("copysign", np.copysign, (-3, 3), (-3, 3)),
    ("floor_divide", np.floor_divide, (-3, 3), (0.5, 3)),
    ("remainder", np.remainder, (-3, 3), (0.5, 3)),
]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("fn,ref,da,db", BINARY_FLOAT, ids=[b[0] for b in BINARY_FLOAT])
def test_binary_float(fn, ref, da, db, name):
    a = float_sample(name, seed=1, low=da[0], high=da[1])
    b = float_sample(name, seed=2, low=db[0], high=db[1])
    want = ref(a.astype(np.float64), b.astype(np.float64)).astype(name)
    if fn in ("floor_divide", "remainder"):
        want = ref(a, b)  # computed in the dtype: the quotient's rounding decides the floor
    check(getattr(kn, fn)(kn.asarray(a), kn.asarray(b)), want, dtype=name)


def test_nextafter_bit_for_bit():
    a = np.array([0.0, 1.0, -1.0, 1e30, np.inf], np.float32)
    b = np.array([1.0, 2.0, -2.0, 0.0, 0.0], np.float32)
    got = np.asarray(kn.nextafter(kn.asarray(a), kn.asarray(b)))
    np.testing.assert_array_equal(got.view(np.uint32), np.nextafter(a, b).view(np.uint32))


def test_atan2_signed_zeros_and_infinities():
    y = np.array([0.0, -0.0, 0.0, -0.0, 1.0, np.inf, -np.inf], np.float64)
    x = np.array([-0.0, -0.0, 0.0, 0.0, np.inf, np.inf, -np.inf], np.float64)
    got = np.asarray(kn.atan2(kn.asarray(y), kn.asarray(x)))
    want = np.arctan2(y, x)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_integer_floor_divide_and_remainder(name):
    a = sample((20,), name, 3)
    b = sample((20,), name, 4)
    b[0] = 0  # integer division by zero gives 0 (NumPy's result too)
    a[0] = 7
    x, y = kn.asarray(a), kn.asarray(b)
    with np.errstate(all="ignore"):
        check(kn.floor_divide(x, y), np.floor_divide(a, b))
        check(kn.remainder(x, y), np.remainder(a, b))


@pytest.mark.parametrize("name", ["int32", "int64"])
def test_integer_pow(name):
    a = sample((8,), name, 1, low=-4, high=4)
    b = sample((8,), name, 2, low=0, high=5)
    check(kn.pow(kn.asarray(a), kn.asarray(b)), np.power(a, b))


def test_float_division_by_zero_gives_inf_and_nan():
    a = np.array([1.0, -1.0, 0.0], np.float32)
    with np.errstate(all="ignore"):
        check(kn.divide(kn.asarray(a), kn.zeros(3)), a / np.zeros(3, np.float32))


def test_maximum_minimum_propagate_nan():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    b = np.array([np.nan, 2.0, 1.0], np.float32)
    check(kn.maximum(kn.asarray(a), kn.asarray(b)), np.maximum(a, b))
    check(kn.minimum(kn.asarray(a), kn.asarray(b)), np.minimum(a, b))


@pytest.mark.parametrize("name", NUMERIC)
def test_comparisons(name):
    a, b = sample((12,), name, 1), sample((12,), name, 2)
    b[::3] = a[::3]
    x, y = kn.asarray(a), kn.asarray(b)
    for fn, ref in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                    ("less_equal", np.less_equal), ("greater", np.greater), ("greater_equal", np.greater_equal)]:
        check(getattr(kn, fn)(x, y), ref(a, b), dtype="bool")


def test_comparisons_with_nan():
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([np.nan, np.nan, 0.0], np.float32)
    x, y = kn.asarray(a), kn.asarray(b)
    check(kn.equal(x, y), a == b)
    check(kn.not_equal(x, y), a != b)
    check(kn.less(x, y), a < b)


def test_logical_binary():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    x, y = kn.asarray(a), kn.asarray(b)
    check(kn.logical_and(x, y), a & b)
    check(kn.logical_or(x, y), a | b)
    check(kn.logical_xor(x, y), a ^ b)


@pytest.mark.parametrize("name", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_bitwise_functions(name):
    a, b = sample((9,), name, 1), sample((9,), name, 2)
    x, y = kn.asarray(a), kn.asarray(b)
    check(kn.bitwise_and(x, y), a & b)
    check(kn.bitwise_or(x, y), a | b)
    check(kn.bitwise_xor(x, y), a ^ b)
    check(kn.bitwise_invert(x), ~a)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_shifts(name):
    a = sample((8,), name, 1, low=0 if name in UNSIGNED else -9, high=9)
    s = np.array([0, 1, 2, 3, 1, 2, 3, 0], name)
    x, n = kn.asarray(a), kn.asarray(s)
    check(kn.bitwise_left_shift(x, n), np.left_shift(a, s))
    check(kn.bitwise_right_shift(x, n), np.right_shift(a, s))


def test_shift_counts_beyond_the_width():
    a = np.array([5, -5, 5, -5], np.int32)
    s = np.array([32, 32, 40, 40], np.int32)
    x, n = kn.asarray(a), kn.asarray(s)
    check(kn.bitwise_left_shift(x, n), np.zeros(4, np.int32))
    check(kn.bitwise_right_shift(x, n), np.array([0, -1, 0, -1], np.int32))


def test_bitwise_on_floats_is_an_error():
    with pytest.raises((TypeError, kn.Error)):
        kn.bitwise_and(kn.ones(3), kn.ones(3))


def test_integer_overflow_wraps():
    a = np.array([127, -128], np.int8)
    check(kn.asarray(a) + kn.asarray(np.array([1, -1], np.int8)), np.array([-128, 127], np.int8))
    u = np.array([255, 0], np.uint8)
    check(kn.asarray(u) + kn.asarray(np.array([1, 0], np.uint8)), np.array([0, 0], np.uint8))


def test_clip():
    a = float_sample("float32")
    x = kn.asarray(a)
    check(kn.clip(x, -1.0, 1.5), np.clip(a, -1.0, 1.5))
    check(kn.clip(x, min=0.0), np.clip(a, 0.0, None))
    check(kn.clip(x, max=0.5), np.clip(a, None, 0.5))
    lo = kn.asarray(np.full((4, 1), -0.5, np.float32))
    check(kn.clip(x, lo, 2.0), np.clip(a, -0.5, 2.0))
    i = np.arange(-5, 5, dtype=np.int8)
    check(kn.clip(kn.asarray(i), 0, 3), np.clip(i, 0, 3), dtype="int8")


def test_where_elementwise():
    a = float_sample("float32", seed=1)
    b = float_sample("float32", seed=2)
    c = a > b
    check(kn.where(kn.asarray(c), kn.asarray(a), kn.asarray(b)), np.where(c, a, b))
    check(kn.where(kn.asarray(c), kn.asarray(a), 0.0), np.where(c, a, np.float32(0)), dtype="float32")
    h = a.astype(np.float16)
    check(kn.where(kn.asarray(c), kn.asarray(h), 0.0), np.where(c, h, np.float16(0)), dtype="float16")


# ---- Broadcasting ------------------------------------------------------------------------

SHAPE_PAIRS = [
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((1,), (5,)),
    ((), (2, 3)),
    ((0, 3), (1, 3)),
    ((2, 1, 3), (4, 1)),
    ((5, 1, 1), (1, 6, 1)),
]


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS)
def test_broadcasting(sa, sb):
    a = sample(sa, "float32", 1)
    b = sample(sb, "float32", 2)
    x, y = kn.asarray(a), kn.asarray(b)
    check(x + y, a + b)
    check(y * x, b * a)
    check(kn.maximum(x, y), np.maximum(a, b))
    check(x < y, a < b)
    check(kn.where(x > 0, x, y), np.where(a > 0, a, b))


def test_broadcast_to_and_broadcast_arrays():
    a = sample((3, 1), "int32")
    check(kn.broadcast_to(kn.asarray(a), (2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))
    b = sample((4,), "int32", 2)
    got = kn.broadcast_arrays(kn.asarray(a), kn.asarray(b))
    want = np.broadcast_arrays(a, b)
    assert len(got) == 2
    for g, w in zip(got, want):
        check(g, w)


# ---- Promotion: JAX's lattice --------------------------------------------------------------


@pytest.mark.parametrize("left", ALL_NP)
@pytest.mark.parametrize("right", ALL_NP)
def test_promotion_table(left, right):
    a = sample((3,), left, 1, low=0 if left != "bool" else None, high=5 if left != "bool" else None)
    b = sample((3,), right, 2, low=0 if right != "bool" else None, high=5 if right != "bool" else None)
    want = promote(left, right)
    got = kn.add(kn.asarray(a), kn.asarray(b))
    if want == "bool":
        expected = a | b
    else:
        expected = a.astype(np.float64) + b.astype(np.float64)
    check(got, expected.astype(want), dtype=want)


@pytest.mark.parametrize("left", ALL_NP)
@pytest.mark.parametrize("right", ALL_NP)
def test_result_type_follows_the_lattice(left, right):
    assert kn.result_type(kd(left), kd(right)) == kd(promote(left, right))


@pytest.mark.parametrize("name", NUMERIC + ["bfloat16"])
def test_promotion_with_bfloat16(name):
    x = kn.ones((2,), dtype=kn.bfloat16)
    y = kn.ones((2,), dtype=kd(name) if name != "bfloat16" else kn.bfloat16)
    want = promote("bfloat16", name)
    assert (x + y).dtype == (kn.bfloat16 if want == "bfloat16" else kd(want))
    check((x + y).astype(kn.float32), np.full(2, 2.0, np.float32))


# ---- Weakly typed Python numbers ---------------------------------------------------------------

WEAK = [
    ("float32", 2.0, "float32"),
    ("float16", 2.0, "float16"),
    ("float64", 2.0, "float64"),
    ("uint8", 1, "uint8"),
    ("int8", 1, "int8"),
    ("int16", 3, "int16"),
    ("uint32", 3, "uint32"),
    ("int64", 3, "int64"),
    ("uint64", 3, "uint64"),
    ("int32", 1.5, "float32"),
    ("int8", 2.5, "float32"),
    ("uint8", 1.0, "float32"),
    ("int64", 1.5, "float32"),
    ("bool", 1, "int32"),
    ("bool", 1.5, "float32"),
    ("float32", 1, "float32"),
    ("float16", 3, "float16"),
    ("bool", True, "bool"),
]


@pytest.mark.parametrize("name,number,want", WEAK)
def test_python_numbers_are_weak(name, number, want):
    a = sample((4,), name, low=0 if name != "bool" else None, high=5 if name != "bool" else None)
    x = kn.asarray(a)
    expected = (a.astype(np.float64) * number).astype(want) if want != "bool" else a & number
    if want == "bool":
        check(x & number, expected, dtype="bool")
        return
    check(x * number, expected, dtype=want)
    check(number * x, expected, dtype=want)
    check(kn.multiply(x, number), expected, dtype=want)
    check(kn.add(x, number), (a.astype(np.float64) + number).astype(want), dtype=want)


def test_weak_number_in_bfloat16():
    x = kn.ones((3,), dtype=kn.bfloat16)
    assert (x * 2.0).dtype == kn.bfloat16
    assert (x + 1).dtype == kn.bfloat16
    check((x * 2.0).astype(kn.float32), np.full(3, 2.0, np.float32))


def test_weak_numbers_in_functions():
    u = kn.asarray(np.array([1, 7, 200], np.uint8))
    assert kn.maximum(u, 3).dtype == kn.uint8
    check(kn.maximum(u, 3), np.array([3, 7, 200], np.uint8))
    assert kn.where(u > 5, u, 0).dtype == kn.uint8
    h = kn.asarray(np.array([0.5, -1.0], np.float16))
    assert kn.where(h > 0, h, 0.0).dtype == kn.float16
    assert kn.pow(h, 2).dtype == kn.float16
    assert (h ** 2).dtype == kn.float16
    assert (u // 2).dtype == kn.uint8
    assert (u % 3).dtype == kn.uint8


def test_integer_true_division_by_a_number_is_float32():
    x = kn.asarray(np.array([1, 2, 3], np.int32))
    check(x / 2, np.array([0.5, 1.0, 1.5], np.float32), dtype="float32")
    check(1 / x, (1 / np.array([1, 2, 3], np.float64)).astype(np.float32), dtype="float32")


def test_weak_number_keeps_the_value_rounded_to_the_array_dtype():
    h = kn.asarray(np.array([1.0], np.float16))
    # 0.1 rounds to float16 before (or after) the multiply: NumPy's f16 product.
    check(h * 0.1, np.array([1.0], np.float16) * np.float16(0.1), dtype="float16")


def test_zero_dim_arrays_are_not_weak():
    u = kn.asarray(np.array([1, 2], np.uint8))
    s = kn.asarray(np.int32(1))
    assert (u + s).dtype == kn.int32  # u8 and a strong i32 0-d: the lattice, not a weak number
    f = kn.asarray(np.array([1.0], np.float16))
    assert (f + kn.asarray(np.float32(1))).dtype == kn.float32
