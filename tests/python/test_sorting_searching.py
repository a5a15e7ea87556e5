"""Sorting, searching and set functions against NumPy: sort and argsort
(stable, descending, NaN last), top_k, partition, where, nonzero,
searchsorted, unique_*."""

import numpy as np
import pytest

import kiln as kn
from conftest import FLOATS, INTEGERS, check, sample


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_sort(name, axis):
    a = sample((4, 6, 3), name, 2)
    check(kn.sort(kn.asarray(a), axis=axis), np.sort(a, axis=axis))


@pytest.mark.parametrize("name", ["int32", "float32", "float64"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_argsort_is_stable(name, axis):
    a = sample((5, 8), name, 3, low=-2, high=2)  # many ties
    a = (np.round(a) + 0).astype(name)  # no negative zeros: NumPy ties them with zeros
    got = kn.argsort(kn.asarray(a), axis=axis)
    assert got.dtype in (kn.int32, kn.int64)
    np.testing.assert_array_equal(np.asarray(got), np.argsort(a, axis=axis, kind="stable"))


def test_descending():
    a = np.array([3.0, 1.0, np.nan, 2.0, 3.0, -1.0], np.float32)
    x = kn.asarray(a)
    check(kn.sort(x, descending=True), np.array([np.nan, 3, 3, 2, 1, -1], np.float32))
    # stable descending: equal elements keep their order
    np.testing.assert_array_equal(np.asarray(kn.argsort(x, descending=True)), [2, 0, 4, 3, 1, 5])


def test_nan_sorts_last():
    a = np.array([np.nan, 2.0, -np.inf, np.inf, 0.0, np.nan, -1.0], np.float64)
    check(kn.sort(kn.asarray(a)), np.sort(a))
    np.testing.assert_array_equal(np.asarray(kn.argsort(kn.asarray(a))), np.argsort(a, kind="stable"))


def test_sort_of_bool():
    a = np.array([True, False, True, False])
    check(kn.sort(kn.asarray(a)), np.sort(a))


def test_sort_keyword_stable_is_accepted():
    a = np.array([2, 1, 2, 0], np.int32)
    check(kn.sort(kn.asarray(a), stable=True), np.sort(a))
    np.testing.assert_array_equal(np.asarray(kn.argsort(kn.asarray(a), stable=False)), np.argsort(a, kind="stable"))


def test_top_k():
    a = np.array([[1.0, 5.0, 3.0, 5.0], [0.0, -1.0, 2.0, 1.0]], np.float32)
    values, indices = kn.top_k(kn.asarray(a), 2)
    check(values, np.array([[5.0, 5.0], [2.0, 1.0]], np.float32))
    np.testing.assert_array_equal(np.asarray(indices), [[1, 3], [2, 3]])


@pytest.mark.parametrize("kth", [0, 3, -1])
def test_partition(kth):
    a = sample((3, 7), "float64", 5)
    got = np.asarray(kn.partition(kn.asarray(a), kth, axis=-1))
    k = kth % 7
    want_kth = np.sort(a, axis=-1)[:, k]
    np.testing.assert_array_equal(got[:, k], want_kth)
    assert (got[:, :k] <= want_kth[:, None]).all() and (got[:, k + 1:] >= want_kth[:, None]).all()
    np.testing.assert_array_equal(np.sort(got, axis=-1), np.sort(a, axis=-1))
    idx = np.asarray(kn.argpartition(kn.asarray(a), kth, axis=-1))
    np.testing.assert_array_equal(np.take_along_axis(a, idx, axis=-1)[:, k], want_kth)


@pytest.mark.parametrize("name", ["int32", "float32", "uint8"])
def test_where_three_arguments(name):
    a, b = sample((3, 4), name, 1), sample((1, 4), name, 2)
    c = sample((3, 1), "bool", 3)
    check(kn.where(kn.asarray(c), kn.asarray(a), kn.asarray(b)), np.where(c, a, b))


def test_where_promotes_its_branches():
    a = np.array([1, 2], np.int8)
    b = np.array([0.5, 1.5], np.float32)
    c = np.array([True, False])
    check(kn.where(kn.asarray(c), kn.asarray(a), kn.asarray(b)), np.array([1.0, 1.5], np.float32), dtype="float32")


def _data_dependent():
    return kn.__array_namespace_info__().capabilities()["data-dependent shapes"]


def test_nonzero():
    a = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
    if not _data_dependent():
        with pytest.raises((ValueError, TypeError, kn.Error)):
            kn.nonzero(kn.asarray(a))
        return
    got = kn.nonzero(kn.asarray(a))
    want = np.nonzero(a)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_unique_family():
    a = np.array([3, 1, 2, 3, 1, 5, 3], np.int32)
    x = kn.asarray(a)
    if not _data_dependent():
        with pytest.raises((ValueError, TypeError, kn.Error)):
            kn.unique_values(x)
        return
    check(kn.unique_values(x), np.unique(a))
    values, counts = kn.unique_counts(x)
    wv, wc = np.unique(a, return_counts=True)
    check(values, wv)
    np.testing.assert_array_equal(np.asarray(counts), wc)
    values, inverse = kn.unique_inverse(x)
    np.testing.assert_array_equal(np.asarray(values)[np.asarray(inverse)], a)
    res = kn.unique_all(x)
    np.testing.assert_array_equal(np.asarray(res.values), wv)
    np.testing.assert_array_equal(np.asarray(res.counts), wc)
    np.testing.assert_array_equal(a[np.asarray(res.indices)], wv)
    np.testing.assert_array_equal(np.asarray(res.values)[np.asarray(res.inverse_indices)], a)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    edges = np.array([0.0, 1.0, 1.0, 2.5, 4.0], np.float32)
    queries = np.array([[-1.0, 0.0, 1.0], [2.0, 4.0, 9.0]], np.float32)
    got = kn.searchsorted(kn.asarray(edges), kn.asarray(queries), side=side)
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(edges, queries, side=side))
    assert got.dtype in (kn.int32, kn.int64)


def test_searchsorted_with_sorter():
    edges = np.array([4.0, 0.0, 2.5, 1.0], np.float32)
    order = np.argsort(edges)
    got = kn.searchsorted(kn.asarray(edges), kn.asarray(np.array([1.5, 3.0], np.float32)), sorter=kn.asarray(order))
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(edges, [1.5, 3.0], sorter=order))


@pytest.mark.parametrize("name", INTEGERS[:4] + FLOATS)
def test_argmax_matches_sort(name):
    a = sample((50,), name, 9)
    assert int(kn.argmax(kn.asarray(a))) == int(np.argmax(a))
    assert int(kn.argsort(kn.asarray(a))[-1]) == int(np.argsort(a, kind="stable")[-1])
