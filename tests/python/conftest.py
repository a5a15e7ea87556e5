"""Shared helpers for kiln's Python suite: NumPy is the oracle.

Dtypes are named as NumPy names them ("float32", "uint8", "bool"); `kd(name)`
gives kiln's dtype object and `npd(name)` NumPy's. `check(result, expected,
dtype=...)` compares a kiln array with a NumPy array (shape, kiln dtype,
values with tolerances that suit the dtype).
"""

import inspect
import os

import numpy as np
import pytest

import kiln as kn

# ---- Dtypes ------------------------------------------------------------------

SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTEGERS = SIGNED + UNSIGNED
FLOATS = ["float16", "float32", "float64"]  # bfloat16 has no NumPy dtype: tested apart
NUMERIC = INTEGERS + FLOATS
ALL_NP = ["bool"] + NUMERIC


def kd(name):
    """kiln's dtype object for a NumPy-style name."""
    if name == "bool":
        return kn.bool_
    return getattr(kn, name)


def npd(name):
    """NumPy's dtype for a NumPy-style name."""
    return np.dtype(name)


# JAX's promotion lattice (kiln's README): the least upper bound of two dtypes.
# "i*" and "f*" are Python ints and floats (weak); a weak result that is an
# array takes the default dtype of its kind (int32, float32).
_EDGES = {
    "bool": ["i*"],
    "i*": ["uint8", "int8"],
    "uint8": ["int16", "uint16"],
    "uint16": ["int32", "uint32"],
    "uint32": ["int64", "uint64"],
    "uint64": ["f*"],
    "int8": ["int16"],
    "int16": ["int32"],
    "int32": ["int64"],
    "int64": ["f*"],
    "f*": ["bfloat16", "float16"],
    "bfloat16": ["float32"],
    "float16": ["float32"],
    "float32": ["float64"],
    "float64": [],
}


def _upper(node):
    seen = {node}
    todo = [node]
    while todo:
        for nxt in _EDGES[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def promote(a, b):
    """JAX's result dtype name for a and b (names, or "i*"/"f*" for Python numbers)."""
    common = _upper(a) & _upper(b)
    for node in common:
        if _upper(node) == common:
            return {"i*": "int32", "f*": "float32"}.get(node, node)
    raise AssertionError(f"no least upper bound for {a} and {b}")


# ---- Comparing with NumPy ------------------------------------------------------

TOLERANCES = {
    "float16": dict(rtol=2e-3, atol=2e-3),
    "bfloat16": dict(rtol=1.6e-2, atol=1.6e-2),
    "float32": dict(rtol=2e-5, atol=2e-6),
    "float64": dict(rtol=1e-12, atol=1e-13),
}


def dtype_name(x):
    """The NumPy-style name of a kiln array's dtype (through its NumPy view)."""
    for name in ALL_NP:
        if x.dtype == kd(name):
            return name
    if x.dtype == kn.bfloat16:
        return "bfloat16"
    raise AssertionError(f"unknown dtype {x.dtype!r}")


def to_np(x):
    """A kiln array as a NumPy array (bf16 read as f32)."""
    if isinstance(x, kn.Array) and x.dtype == kn.bfloat16:
        x = x.astype(kn.float32)
    return np.asarray(x)


def check(result, expected, dtype=None, rtol=None, atol=None, equal_nan=True):
    """`result` (a kiln array) equals NumPy's `expected`: same shape, kiln
    dtype `dtype` (a NumPy-style name; default: expected's dtype), values exact
    for integers and bool, close for floats."""
    assert isinstance(result, kn.Array), f"expected a kn.Array, got {type(result).__name__}"
    expected = np.asarray(expected)
    name = dtype if dtype is not None else expected.dtype.name
    assert result.dtype == kd(name) if name != "bfloat16" else result.dtype == kn.bfloat16, (
        f"dtype: expected {name}, got {result.dtype!r}")
    assert result.shape == tuple(expected.shape), f"shape: expected {expected.shape}, got {result.shape}"
    got = to_np(result)
    if name in TOLERANCES:
        tol = dict(TOLERANCES[name])
        if rtol is not None:
            tol["rtol"] = rtol
        if atol is not None:
            tol["atol"] = atol
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), equal_nan=equal_nan, **tol)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype) if name != "bool" else expected)


def sample(shape, name, seed=0, low=None, high=None):
    """Deterministic NumPy data of a dtype: floats in [-3, 3), integers in a
    range that every dtype holds (and that products of two do not overflow),
    bool half true."""
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.random(shape) < 0.5
    if name in FLOATS or name == "bfloat16":
        lo = -3.0 if low is None else low
        hi = 3.0 if high is None else high
        data = rng.uniform(lo, hi, shape)
        return data.astype(np.float32 if name == "bfloat16" else name)
    info = np.iinfo(name)
    lo = max(info.min, -10) if low is None else low
    hi = min(info.max, 10) if high is None else high
    return rng.integers(lo, hi, shape, endpoint=True).astype(name)


# ---- Errors naming the user's line --------------------------------------------


def caller_line(depth=1):
    """The line number of the caller (depth 1), or of its caller (depth 2), ..."""
    frame = inspect.currentframe()
    for _ in range(depth):
        frame = frame.f_back
    return frame.f_lineno


class RaisesAt:
    """`with raises_at(kn.Error, "[add]", "[2,3]") as r:` followed, on the
    next line, by the offending call. Checks the class, every fragment, and
    that the message names this file and the line of the offending call (the
    line after the `with`, unless `line=` says otherwise)."""

    def __init__(self, cls, *fragments, line=None, file=None):
        self.cls = cls
        self.fragments = fragments
        frame = inspect.currentframe().f_back.f_back
        self.file = os.path.basename(file or frame.f_code.co_filename)
        self.line = line if line is not None else frame.f_lineno + 1
        self.value = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            classes = self.cls if isinstance(self.cls, tuple) else (self.cls,)
            names = " or ".join(c.__name__ for c in classes)
            pytest.fail(f"no {names} raised (expected one at {self.file}:{self.line})")
        if not issubclass(exc_type, self.cls):
            return False  # let pytest show the unexpected exception
        self.value = exc
        message = str(exc)
        for fragment in self.fragments:
            options = fragment if isinstance(fragment, tuple) else (fragment,)
            assert any(o in message for o in options), f"missing {fragment!r} in:\n{message}"
        where = f"{self.file}:{self.line}"
        assert where in message, f"missing the user's line {where} in:\n{message}"
        return True


def raises_at(cls, *fragments, line=None):
    return RaisesAt(cls, *fragments, line=line)


# ---- Fixtures ------------------------------------------------------------------


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
