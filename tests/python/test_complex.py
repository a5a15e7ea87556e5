"""complex64 and complex128 against NumPy: creation and interop, arithmetic,
abs/conj/real/imag/angle, exp/log/sqrt, matmul, sums and means, promotion
(the standard's table; Python complex numbers weakly typed) and I/O."""

import gc

import numpy as np
import pytest
import torch

import kiln as kn
from conftest import check

CDTYPES = ["complex64", "complex128"]
REAL_OF = {"complex64": "float32", "complex128": "float64"}
TOL = {"complex64": dict(rtol=2e-5, atol=2e-6), "complex128": dict(rtol=1e-12, atol=1e-13)}


def csample(shape, name, seed=0, low=-3.0, high=3.0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(name)


def ccheck(result, expected, dtype):
    assert isinstance(result, kn.Array)
    assert result.dtype == getattr(kn, dtype), f"dtype: expected {dtype}, got {result.dtype!r}"
    expected = np.asarray(expected)
    assert result.shape == expected.shape
    got = np.asarray(result)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, expected.astype(dtype), equal_nan=True, **TOL[dtype])


def test_complex_dtypes_exist():
    assert kn.complex64 != kn.complex128
    assert kn.complex64 != kn.float32


@pytest.mark.parametrize("name", CDTYPES)
def test_asarray_and_np_asarray_share(name):
    a = csample((3, 4), name)
    x = kn.asarray(a)
    assert x.dtype == getattr(kn, name)
    back = np.asarray(x)
    assert back.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    np.testing.assert_array_equal(back, a)


def test_python_complex_creation_defaults_to_complex64():
    ccheck(kn.asarray(1 + 2j), np.complex64(1 + 2j), "complex64")
    ccheck(kn.asarray([1, 2j]), np.array([1, 2j], np.complex64), "complex64")
    ccheck(kn.zeros((2,), dtype=kn.complex128), np.zeros(2, np.complex128), "complex128")
    ccheck(kn.ones((2,), dtype=kn.complex64), np.ones(2, np.complex64), "complex64")
    ccheck(kn.full((2,), 1 - 1j), np.full(2, 1 - 1j, np.complex64), "complex64")


def test_item_complex_and_tolist():
    x = kn.asarray(np.complex128(1.5 - 2j))
    assert x.item() == 1.5 - 2j and type(x.item()) is complex
    assert complex(x) == 1.5 - 2j
    assert kn.asarray(np.array([1j, 2], np.complex64)).tolist() == [1j, 2 + 0j]
    assert complex(kn.asarray(2.5)) == 2.5 + 0j


def test_repr_shows_complex_values():
    r = repr(kn.asarray(np.array([1 + 2j], np.complex64)))
    assert "1.+2.j" in r and "complex64" in r


@pytest.mark.parametrize("name", CDTYPES)
def test_arithmetic(name):
    a, b = csample((4, 5), name, 1), csample((4, 5), name, 2)
    x, y = kn.asarray(a), kn.asarray(b)
    ccheck(x + y, a + b, name)
    ccheck(x - y, a - b, name)
    ccheck(x * y, a * b, name)
    ccheck(x / y, a / b, name)
    ccheck(-x, -a, name)
    ccheck(x ** 2, a ** 2, name)
    ccheck(kn.square(x), np.square(a), name)


@pytest.mark.parametrize("name", CDTYPES)
def test_abs_conj_real_imag_angle(name):
    a = csample((3, 3), name, 3)
    x = kn.asarray(a)
    real = REAL_OF[name]
    check(kn.abs(x), np.abs(a), dtype=real)
    check(abs(x), np.abs(a), dtype=real)
    ccheck(kn.conj(x), np.conj(a), name)
    check(kn.real(x), np.real(a), dtype=real)
    check(kn.imag(x), np.imag(a), dtype=real)
    check(kn.angle(x), np.angle(a), dtype=real)


def test_real_imag_conj_of_real_arrays():
    a = np.array([1.0, -2.0], np.float32)
    check(kn.real(kn.asarray(a)), a)
    check(kn.imag(kn.asarray(a)), np.zeros(2, np.float32))


def test_abs_does_not_overflow():
    a = np.array([3e30 + 4e30j, 3e-30 + 4e-30j], np.complex64)
    check(kn.abs(kn.asarray(a)), np.abs(a), dtype="float32")


@pytest.mark.parametrize("name", CDTYPES)
@pytest.mark.parametrize("fn,ref", [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt)])
def test_exp_log_sqrt(name, fn, ref):
    a = csample((5, 4), name, 4)
    ccheck(getattr(kn, fn)(kn.asarray(a)), ref(a.astype(np.complex128)), name)


def test_branch_cuts_follow_numpy():
    a = np.array([-4 + 0j, -4 - 0j, -1 + 1e-30j, 0j], np.complex128)
    ccheck(kn.sqrt(kn.asarray(a)), np.sqrt(a), "complex128")
    b = np.array([-1 + 0j, -1 - 0j, 1j], np.complex128)
    ccheck(kn.log(kn.asarray(b)), np.log(b), "complex128")


@pytest.mark.parametrize("name", CDTYPES)
@pytest.mark.parametrize("fn,ref", [("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh), ("expm1", np.expm1),
                                    ("log1p", np.log1p), ("sinh", np.sinh), ("cosh", np.cosh), ("tan", np.tan)])
def test_standard_complex_elementwise(name, fn, ref):
    a = csample((6,), name, 5, low=-1.0, high=1.0)
    ccheck(getattr(kn, fn)(kn.asarray(a)), ref(a.astype(np.complex128)), name)


@pytest.mark.parametrize("name", CDTYPES)
def test_predicates_and_equality(name):
    a = np.array([1 + 1j, np.nan + 0j, complex(np.inf, 1), 2j], name)
    x = kn.asarray(a)
    check(kn.isnan(x), np.isnan(a), dtype="bool")
    check(kn.isinf(x), np.isinf(a), dtype="bool")
    check(kn.isfinite(x), np.isfinite(a), dtype="bool")
    check(x == x, a == a, dtype="bool")
    check(x != kn.asarray(np.array([1 + 1j, 0, 0, 2j], name)), a != np.array([1 + 1j, 0, 0, 2j], name),
          dtype="bool")


@pytest.mark.parametrize("name", CDTYPES)
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((4,), (4,))])
def test_matmul(name, sa, sb):
    a, b = csample(sa, name, 6), csample(sb, name, 7)
    ccheck(kn.matmul(kn.asarray(a), kn.asarray(b)), a.astype(np.complex128) @ b.astype(np.complex128), name)
    ccheck(kn.asarray(a) @ kn.asarray(b), a.astype(np.complex128) @ b.astype(np.complex128), name)


@pytest.mark.parametrize("name", CDTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_sum_mean_prod(name, axis):
    a = csample((4, 6), name, 8)
    x = kn.asarray(a)
    ccheck(kn.sum(x, axis=axis), np.sum(a.astype(np.complex128), axis=axis), name)
    ccheck(kn.mean(x, axis=axis), np.mean(a.astype(np.complex128), axis=axis), name)
    ccheck(kn.sum(x, axis=axis, keepdims=True), np.sum(a.astype(np.complex128), axis=axis, keepdims=True), name)


def test_prod_and_cumulative_sum():
    a = csample((5,), "complex128", 9, low=-1, high=1)
    ccheck(kn.prod(kn.asarray(a)), np.prod(a), "complex128")
    ccheck(kn.cumulative_sum(kn.asarray(a)), np.cumsum(a), "complex128")


# ---- Promotion ---------------------------------------------------------------------------------

PROMOTION = [
    ("float32", "complex64", "complex64"),
    ("float64", "complex64", "complex128"),
    ("float32", "complex128", "complex128"),
    ("complex64", "complex128", "complex128"),
    ("float16", "complex64", "complex64"),
    ("int32", "complex64", "complex64"),
    ("int8", "complex128", "complex128"),
    ("bool", "complex64", "complex64"),
]


@pytest.mark.parametrize("left,right,want", PROMOTION)
def test_promotion(left, right, want):
    a = np.ones(3, left)
    b = np.full(3, 1 + 1j, right)
    got = kn.asarray(a) + kn.asarray(b)
    ccheck(got, a.astype(want) + b.astype(want), want)
    ccheck(kn.asarray(b) * kn.asarray(a), b.astype(want) * a.astype(want), want)
    assert kn.result_type(getattr(kn, left), getattr(kn, right)) == getattr(kn, want)


@pytest.mark.parametrize("name,want", [("float32", "complex64"), ("float64", "complex128"),
                                       ("complex64", "complex64"), ("complex128", "complex128"),
                                       ("float16", "complex64"), ("int32", "complex64")])
def test_python_complex_is_weak(name, want):
    a = np.arange(1, 4).astype(name)
    x = kn.asarray(a)
    ccheck(x + 1j, a.astype(want) + np.complex128(1j).astype(want), want)
    ccheck(2j * x, np.complex128(2j).astype(want) * a.astype(want), want)


def test_complex_array_with_python_float_stays_complex64():
    x = kn.asarray(np.array([1 + 1j], np.complex64))
    ccheck(x * 2.5, np.array([2.5 + 2.5j], np.complex64), "complex64")
    ccheck(x + 1, np.array([2 + 1j], np.complex64), "complex64")


def test_astype_to_and_from_complex():
    a = np.array([1.5, -2.0], np.float32)
    ccheck(kn.astype(kn.asarray(a), kn.complex64), a.astype(np.complex64), "complex64")
    c = np.array([1 + 2j, 3 - 4j], np.complex128)
    ccheck(kn.astype(kn.asarray(c), kn.complex64), c.astype(np.complex64), "complex64")


# ---- Interop and I/O ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name,tdtype", [("complex64", torch.complex64), ("complex128", torch.complex128)])
def test_dlpack_with_torch(name, tdtype):
    a = csample((2, 3), name, 10)
    x = kn.asarray(a)
    t = torch.from_dlpack(x)
    assert t.dtype == tdtype
    np.testing.assert_array_equal(t.numpy(), a)
    back = kn.from_dlpack(torch.tensor(a) * 2)
    ccheck(back, a * 2, name)
    del x
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("name", CDTYPES)
def test_npy_round_trip(tmp_path, name):
    a = csample((3, 2), name, 11)
    path = str(tmp_path / "c.npy")
    kn.save_npy(path, kn.asarray(a))
    np.testing.assert_array_equal(np.load(path), a)
    ccheck(kn.load_npy(path), a, name)
    np.save(path, a)
    ccheck(kn.load_npy(path), a, name)


def test_safetensors_round_trip(tmp_path):
    a = csample((4,), "complex64", 12)
    path = str(tmp_path / "c.safetensors")
    kn.save(path, {"z": kn.asarray(a)})
    ccheck(kn.load(path)["z"], a, "complex64")


def test_safetensors_has_no_complex128(tmp_path):
    # The format names C64 and no wider complex type: kiln says so rather than invent one.
    with pytest.raises(kn.Error, match="c128"):
        kn.save(str(tmp_path / "c.safetensors"), {"z": kn.asarray(csample((4,), "complex128", 12))})


def test_complex_in_the_namespace_info():
    info = kn.__array_namespace_info__()
    assert info.default_dtypes()["complex floating"] == kn.complex64
    assert info.dtypes()["complex64"] == kn.complex64 and info.dtypes()["complex128"] == kn.complex128
    assert info.dtypes(kind="complex floating") == {"complex64": kn.complex64, "complex128": kn.complex128}
    assert kn.isdtype(kn.complex128, "complex floating")
    assert kn.finfo(kn.complex64).bits == 32  # the standard: the real component's
    assert kn.finfo(kn.complex128).eps == float(np.finfo(np.float64).eps)


@pytest.mark.parametrize("src,dst,expected", [
    ("float32", "complex64", True), ("float64", "complex128", True), ("complex64", "complex128", True),
    ("complex128", "complex64", False), ("complex64", "float32", False), ("float64", "complex64", False),
])
def test_can_cast(src, dst, expected):
    assert kn.can_cast(getattr(kn, src), getattr(kn, dst)) is expected


@pytest.mark.parametrize("name,kind,expected", [
    ("complex64", "complex floating", True), ("complex128", "numeric", True), ("complex64", "real floating", False),
    ("float32", "complex floating", False), ("complex128", ("bool", "complex floating"), True),
])
def test_isdtype(name, kind, expected):
    assert kn.isdtype(getattr(kn, name), kind) is expected


@pytest.mark.parametrize("name", CDTYPES)
@pytest.mark.parametrize("fn,ref", [("arcsin", np.arcsin), ("arccos", np.arccos), ("arctan", np.arctan),
                                    ("arcsinh", np.arcsinh), ("arccosh", np.arccosh), ("arctanh", np.arctanh),
                                    ("log2", np.log2)])
def test_inverse_functions_of_complex_numbers(name, fn, ref):
    # Off the branch cuts (kiln keeps no signed zero of a part that is exactly 0 there).
    a = csample((32,), name, 21, low=-3.0, high=3.0)
    ccheck(getattr(kn, fn)(kn.asarray(a)), ref(a.astype(np.complex128)), name)


@pytest.mark.parametrize("name", CDTYPES)
def test_norms_of_complex_arrays_are_norms_of_magnitudes(name):
    z = csample((3, 4), name, 31)
    real = "float32" if name == "complex64" else "float64"
    for got, expected in [(kn.linalg.matrix_norm(kn.asarray(z)), np.linalg.norm(z.astype(np.complex128), "fro")),
                          (kn.linalg.vector_norm(kn.asarray(z), ord=1), np.abs(z.astype(np.complex128)).sum()),
                          (kn.linalg.norm(kn.asarray(z), ord=np.inf), np.linalg.norm(z.astype(np.complex128), np.inf))]:
        assert got.dtype == getattr(kn, real)
        np.testing.assert_allclose(float(got), expected, rtol=1e-5)
    with pytest.raises(kn.Error, match="singular values"):
        kn.linalg.matrix_norm(kn.asarray(z), ord=2)
