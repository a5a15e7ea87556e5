"""NumPy indexing against NumPy: basic (integers, slices with any step, None,
...), advanced integer arrays, boolean masks refused with a pointer to
kn.where, and x.at[idx].set/add/mul/max/min/get."""

import numpy as np
import pytest

import kiln as kn
from conftest import check, raises_at, sample


@pytest.fixture(scope="module")
def data():
    return np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)


S = np.s_

BASIC = [
    S[0], S[-1], S[1, 2], S[1, 2, 3], S[-1, -2, -3],
    S[:], S[1:], S[:2], S[::2], S[1::2], S[::-1], S[2:0:-1], S[-1::-2], S[5:], S[-10:10],
    S[:, 1], S[:, :, 2], S[..., 1], S[1, ...], S[..., 1:3], S[0, ..., -1],
    S[None], S[:, None], S[..., None], S[None, 1, None, :, None], S[None, ...],
    S[1:3, ::-2, 4:0:-3], S[:, ::-1, ::-1], S[()], S[...],
    S[0, :0], S[2:1], S[:, 3:1:-1],
]


@pytest.mark.parametrize("index", BASIC, ids=[repr(i) for i in BASIC])
def test_basic_indexing(data, index):
    check(kn.asarray(data)[index], data[index])


def test_indexing_0d_and_1d():
    v = np.arange(6, dtype=np.int32)
    x = kn.asarray(v)
    check(x[3], v[3])
    assert x[3].shape == ()
    check(x[-6], v[-6])
    check(x[::-1], v[::-1])
    s = kn.asarray(np.float32(2.5))
    check(s[()], np.float32(2.5))
    check(s[None], np.array([2.5], np.float32))
    check(s[...], np.float32(2.5))


def test_integer_out_of_range_is_an_error():
    x = kn.arange(5)
    with pytest.raises((IndexError, kn.Error)):
        x[5]
    with pytest.raises((IndexError, kn.Error)):
        x[-6]


def test_too_many_indices_is_an_error(data):
    with pytest.raises((IndexError, kn.Error)):
        kn.asarray(data)[0, 0, 0, 0]
    with pytest.raises((IndexError, kn.Error)):
        kn.asarray(data)[..., 0, ...]


def test_zero_step_is_an_error():
    with pytest.raises((ValueError, kn.Error)):
        kn.arange(5)[::0]


def test_0d_integer_array_as_an_index(data):
    i = kn.asarray(np.int32(2))
    check(kn.asarray(data)[i], data[2])


ADVANCED = [
    S[[0, 2]],
    S[[2, 0, 2, 1]],
    S[[-1, 0]],
    S[:, [3, 0]],
    S[..., [4, 0, 1]],
    S[[0, 1], [2, 3]],
    S[[0, 1], :, [2, 3]],
    S[1, [0, 3], :],
    S[:, [0, 1], [2, 4]],
    S[[[0, 1], [2, 0]]],
    S[[[0], [2]], [1, 3]],
    S[:, [[0, 1], [2, 3]], 0],
    S[None, [0, 2]],
    S[[0, 2], None],
    S[::-1, [1, 2]],
]


@pytest.mark.parametrize("index", ADVANCED, ids=[repr(i) for i in ADVANCED])
def test_advanced_indexing_with_kiln_arrays(data, index):
    kindex = tuple(kn.asarray(np.array(i, np.int32)) if isinstance(i, list) else i for i in
                   (index if isinstance(index, tuple) else (index,)))
    check(kn.asarray(data)[kindex], data[index])


@pytest.mark.parametrize("index", ADVANCED[:9], ids=[repr(i) for i in ADVANCED[:9]])
def test_advanced_indexing_with_numpy_arrays_and_lists(data, index):
    check(kn.asarray(data)[index], data[index])
    nindex = tuple(np.array(i) if isinstance(i, list) else i for i in
                   (index if isinstance(index, tuple) else (index,)))
    check(kn.asarray(data)[nindex], data[index])


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "int32", "int64", "uint32"])
def test_index_array_dtypes(data, name):
    idx = np.array([2, 0, 1], name)
    check(kn.asarray(data)[kn.asarray(idx)], data[idx])


def test_float_index_array_is_an_error(data):
    with pytest.raises((IndexError, TypeError, kn.Error)):
        kn.asarray(data)[kn.asarray(np.array([0.0, 1.0], np.float32))]


def test_float_scalar_index_is_an_error(data):
    with pytest.raises((IndexError, TypeError)):
        kn.asarray(data)[1.0]


def test_boolean_mask_is_refused_and_points_to_where(data):
    x = kn.asarray(data)
    with raises_at(kn.Error, "where", "bool") as r:
        x[x > 10]
    assert "kn.where" in str(r.value) or "where(" in str(r.value)
    with pytest.raises(kn.Error):
        x[kn.asarray(np.array([True, False, True]))]


def test_boolean_numpy_mask_is_refused(data):
    with pytest.raises((kn.Error, IndexError, TypeError)) as info:
        kn.asarray(data)[np.array([True, False, True])]
    assert "where" in str(info.value)


def test_where_replaces_a_boolean_mask(data):
    x = kn.asarray(data)
    check(kn.where(x > 10, x, 0.0), np.where(data > 10, data, 0))


# ---- x.at[idx] ---------------------------------------------------------------------------


def _np_at(a, index, op, values):
    out = a.copy()
    if op == "set":
        out[index] = values
    elif op == "add":
        np.add.at(out, index, values)
    elif op == "mul":
        np.multiply.at(out, index, values)
    elif op == "max":
        np.maximum.at(out, index, values)
    elif op == "min":
        np.minimum.at(out, index, values)
    return out


AT_INDICES = [S[1], S[1:3], S[:, 2], S[::2, ::-1], S[..., 0], S[0, 1, 2], S[[0, 2]], S[[0, 2], 1],
              S[:, [1, 3]], S[[2, 0], [1, 1]]]


@pytest.mark.parametrize("op", ["set", "add", "mul", "max", "min"])
@pytest.mark.parametrize("index", AT_INDICES, ids=[repr(i) for i in AT_INDICES])
def test_at_updates(data, op, index):
    x = kn.asarray(data)
    selected = data[index]
    values = sample(np.shape(selected), "float32", 3)
    got = getattr(x.at[index], op)(kn.asarray(values))
    check(got, _np_at(data, index, op, values))
    check(x, data)  # x is unchanged


@pytest.mark.parametrize("op", ["set", "add", "mul", "max", "min"])
def test_at_with_a_python_number(data, op):
    x = kn.asarray(data)
    got = getattr(x.at[1, :, 2], op)(7.0)
    check(got, _np_at(data, S[1, :, 2], op, np.float32(7.0)))


def test_at_values_broadcast_and_convert_to_the_dtype():
    a = np.zeros((3, 4), np.int32)
    x = kn.asarray(a)
    got = x.at[1:].set(kn.asarray(np.array([1.9, 2.0, 3.0, -4.5], np.float64)))
    assert got.dtype == kn.int32
    want = a.copy()
    want[1:] = np.array([1.9, 2.0, 3.0, -4.5]).astype(np.int32)
    check(got, want)


def test_at_get(data):
    x = kn.asarray(data)
    check(x.at[1, ::-1].get(), data[1, ::-1])
    check(x.at[[0, 2], 1].get(), data[[0, 2], 1])


def test_at_repeated_indices():
    a = np.zeros(4, np.float32)
    x = kn.asarray(a)
    idx = [1, 1, 3, 1]
    vals = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    check(x.at[kn.asarray(np.array(idx))].add(kn.asarray(vals)), _np_at(a, np.array(idx), "add", vals))
    # set keeps the last value for a repeated index
    check(x.at[kn.asarray(np.array(idx))].set(kn.asarray(vals)), np.array([0, 4, 0, 3], np.float32))


def test_at_out_of_range_updates_are_dropped():
    a = np.zeros(4, np.float32)
    got = kn.asarray(a).at[kn.asarray(np.array([1, 9]))].set(kn.asarray(np.array([5.0, 6.0], np.float32)))
    check(got, np.array([0, 5, 0, 0], np.float32))


def test_at_on_integers_and_bool():
    a = np.arange(6, dtype=np.int8)
    check(kn.asarray(a).at[2:4].add(100), _np_at(a, S[2:4], "add", np.int8(100)))
    b = np.zeros(3, bool)
    check(kn.asarray(b).at[1].set(True), np.array([False, True, False]))
