"""Shape manipulation against NumPy: reshape, transposes, joining and
splitting, squeeze/expand_dims, flip, roll, tile, repeat, moveaxis, padding,
triangles and the NumPy helpers."""

import numpy as np
import pytest

import kiln as kn
from conftest import check, sample


@pytest.fixture
def a234():
    return np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("shape", [(24,), (4, 6), (2, 3, 4), (-1, 4), (3, -1, 2), (1, 24, 1)])
def test_reshape(a234, shape):
    check(kn.reshape(kn.asarray(a234), shape), np.reshape(a234, shape))


def test_reshape_method_and_scalars(a234):
    x = kn.asarray(a234)
    check(x.reshape((6, 4)), a234.reshape(6, 4))
    check(x.reshape(6, 4), a234.reshape(6, 4))
    check(kn.reshape(kn.asarray(np.float32(3)), (1, 1)), np.full((1, 1), 3, np.float32))
    check(kn.reshape(kn.zeros((2, 0)), (0, 5)), np.zeros((0, 5), np.float32))


@pytest.mark.parametrize("axes", [None, (0, 1, 2), (2, 0, 1), (1, 2, 0), (-1, 0, 1)])
def test_permute_dims_and_transpose(a234, axes):
    x = kn.asarray(a234)
    if axes is not None:
        check(kn.permute_dims(x, axes), np.transpose(a234, axes))
    check(kn.transpose(x, axes), np.transpose(a234, axes))


def test_matrix_transpose_and_swapaxes(a234):
    x = kn.asarray(a234)
    check(kn.matrix_transpose(x), np.swapaxes(a234, -1, -2))
    check(kn.swapaxes(x, 0, 2), np.swapaxes(a234, 0, 2))


@pytest.mark.parametrize("src,dst", [(0, -1), (-1, 0), (1, 2), ((0, 1), (2, 0)), ([0, 2], [1, 0])])
def test_moveaxis(a234, src, dst):
    check(kn.moveaxis(kn.asarray(a234), src, dst), np.moveaxis(a234, src, dst))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concat(axis):
    a = sample((2, 3), "int32", 1)
    b = sample((2, 3), "int32", 2)
    c = sample((2, 3), "int32", 3)
    check(kn.concat([kn.asarray(a), kn.asarray(b), kn.asarray(c)], axis=axis),
          np.concatenate([a, b, c], axis=axis))


def test_concat_uneven_extents_and_promotion():
    a = sample((2, 3), "float32", 1)
    b = sample((4, 3), "float32", 2)
    check(kn.concat((kn.asarray(a), kn.asarray(b))), np.concatenate([a, b]))
    i = sample((1, 3), "int8", 3)
    got = kn.concat([kn.asarray(a), kn.asarray(i)])
    check(got, np.concatenate([a, i.astype(np.float32)]), dtype="float32")
    check(kn.concatenate([kn.asarray(a), kn.asarray(b)], axis=0), np.concatenate([a, b]))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_and_unstack(axis):
    arrays = [sample((2, 3), "float64", s) for s in range(4)]
    stacked = kn.stack([kn.asarray(a) for a in arrays], axis=axis)
    check(stacked, np.stack(arrays, axis=axis))
    parts = kn.unstack(stacked, axis=axis)
    assert isinstance(parts, tuple)
    assert len(parts) == 4
    for got, want in zip(parts, arrays):
        check(got, want)


@pytest.mark.parametrize("axis", [0, 2, -1, (0, 2)])
def test_squeeze(axis):
    a = sample((1, 3, 1), "float32")
    check(kn.squeeze(kn.asarray(a), axis=axis), np.squeeze(a, axis=axis))


def test_squeeze_of_a_non_unit_axis_is_an_error():
    with pytest.raises((ValueError, kn.Error)):
        kn.squeeze(kn.zeros((2, 3)), axis=0)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_expand_dims(axis):
    a = sample((2, 3), "float32")
    check(kn.expand_dims(kn.asarray(a), axis=axis), np.expand_dims(a, axis))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
def test_flip(a234, axis):
    check(kn.flip(kn.asarray(a234), axis=axis), np.flip(a234, axis=axis))


@pytest.mark.parametrize("shift,axis", [(1, None), (-2, None), (7, None), (1, 0), (-1, 2), (2, -1),
                                        ((1, 2), (0, 1)), (0, 1)])
def test_roll(a234, shift, axis):
    check(kn.roll(kn.asarray(a234), shift, axis=axis), np.roll(a234, shift, axis=axis))


@pytest.mark.parametrize("reps", [(2,), (2, 1), (1, 3), (2, 2, 2), (3,)])
def test_tile(reps):
    a = sample((2, 3), "int16")
    check(kn.tile(kn.asarray(a), reps), np.tile(a, reps))


@pytest.mark.parametrize("repeats,axis", [(2, None), (3, 0), (2, 1), (1, -1)])
def test_repeat(repeats, axis):
    a = sample((2, 3), "int32")
    check(kn.repeat(kn.asarray(a), repeats, axis=axis), np.repeat(a, repeats, axis=axis))


def test_repeat_with_per_element_counts():
    a = sample((3, 2), "int32")
    counts = np.array([1, 0, 2])
    if not kn.__array_namespace_info__().capabilities()["data-dependent shapes"]:
        with pytest.raises((ValueError, TypeError, kn.Error)):
            kn.repeat(kn.asarray(a), kn.asarray(counts), axis=0)
        return
    check(kn.repeat(kn.asarray(a), kn.asarray(counts), axis=0), np.repeat(a, counts, axis=0))


@pytest.mark.parametrize("sections,axis", [(2, 0), (3, 1), ([1, 3], 2), ([2], -1), (1, 0)])
def test_split(a234, sections, axis):
    got = kn.split(kn.asarray(a234), sections, axis=axis)
    want = np.split(a234, sections, axis=axis)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        check(g, w)


def test_uneven_split_is_an_error(a234):
    with pytest.raises((ValueError, kn.Error)):
        kn.split(kn.asarray(a234), 5, axis=2)


def test_ravel(a234):
    check(kn.ravel(kn.asarray(a234)), a234.ravel())


def test_atleast(a234):
    for a in (np.float32(1), np.ones(3, np.float32), np.ones((2, 3), np.float32), a234):
        x = kn.asarray(a)
        check(kn.atleast_1d(x), np.atleast_1d(a))
        check(kn.atleast_2d(x), np.atleast_2d(a))
        check(kn.atleast_3d(x), np.atleast_3d(a))


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_triu(k):
    a = sample((2, 4, 5), "float32")
    check(kn.tril(kn.asarray(a), k=k), np.tril(a, k))
    check(kn.triu(kn.asarray(a), k=k), np.triu(a, k))


def test_pad():
    a = sample((2, 3), "float32")
    check(kn.pad(kn.asarray(a), ((1, 2), (0, 3))), np.pad(a, ((1, 2), (0, 3))))
    check(kn.pad(kn.asarray(a), 1), np.pad(a, 1))
    check(kn.pad(kn.asarray(a), ((1, 0), (2, 1)), constant_values=7.0),
          np.pad(a, ((1, 0), (2, 1)), constant_values=7.0))


def test_diag():
    v = sample((3,), "float32")
    check(kn.diag(kn.asarray(v)), np.diag(v))
    check(kn.diag(kn.asarray(v), k=1), np.diag(v, k=1))
    m = sample((3, 4), "float32")
    check(kn.diag(kn.asarray(m)), np.diag(m))


def test_meshgrid():
    a = np.arange(3, dtype=np.float32)
    b = np.arange(4, dtype=np.float32)
    for indexing in ("xy", "ij"):
        got = kn.meshgrid(kn.asarray(a), kn.asarray(b), indexing=indexing)
        want = np.meshgrid(a, b, indexing=indexing)
        assert len(got) == 2
        for g, w in zip(got, want):
            check(g, w)


def test_astype_conversions():
    a = np.array([-1.7, -0.5, 0.5, 2.9, 300.0], np.float32)
    x = kn.asarray(a)
    check(kn.astype(x, kn.int32), a.astype(np.int32))
    check(x.astype(kn.float64), a.astype(np.float64))
    check(kn.astype(x, kn.bool_), a.astype(bool))
    # float to integer saturates; NaN becomes 0 (kiln's defined conversion)
    check(kn.astype(kn.asarray(np.array([300.0, -300.0, np.nan], np.float32)), kn.int8),
          np.array([127, -128, 0], np.int8))
    check(kn.astype(kn.asarray(np.array([-1.0, 1e10], np.float32)), kn.uint8), np.array([0, 255], np.uint8))


def test_astype_copy_argument():
    x = kn.asarray(np.array([1.0, 2.0], np.float32))
    same = kn.astype(x, kn.float32, copy=False)
    check(same, np.array([1.0, 2.0], np.float32))
    check(kn.astype(x, kn.float32, copy=True), np.array([1.0, 2.0], np.float32))


def test_einsum_tensordot_outer_inner_kron_cross():
    a = sample((2, 3), "float64", 1)
    b = sample((3, 4), "float64", 2)
    c = sample((2, 3, 4), "float64", 3)
    check(kn.einsum("ij,jk->ik", kn.asarray(a), kn.asarray(b)), np.einsum("ij,jk->ik", a, b))
    check(kn.einsum("ij,jk", kn.asarray(a), kn.asarray(b)), np.einsum("ij,jk", a, b))
    check(kn.einsum("ii", kn.asarray(b[:, :3])), np.einsum("ii", b[:, :3]))
    check(kn.einsum("bij,jk->bik", kn.asarray(c[:, :, :3]), kn.asarray(b)), np.einsum("bij,jk->bik", c[:, :, :3], b))
    check(kn.einsum("...j,j->...", kn.asarray(c), kn.asarray(b[0])), np.einsum("...j,j->...", c, b[0]))
    check(kn.tensordot(kn.asarray(a), kn.asarray(c), axes=2), np.tensordot(a, c, axes=2))
    check(kn.tensordot(kn.asarray(a), kn.asarray(b), axes=([1], [0])), np.tensordot(a, b, axes=([1], [0])))
    check(kn.outer(kn.asarray(a[0]), kn.asarray(b[0])), np.outer(a[0], b[0]))
    check(kn.inner(kn.asarray(a), kn.asarray(c[:, :, 0])), np.inner(a, c[:, :, 0]))
    check(kn.kron(kn.asarray(a), kn.asarray(b)), np.kron(a, b))
    u, v = sample((4, 3), "float64", 4), sample((4, 3), "float64", 5)
    check(kn.linalg.cross(kn.asarray(u), kn.asarray(v)), np.cross(u, v))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)),
                                   ((2, 1, 2, 3), (4, 3, 2)), ((1, 1), (1, 1))])
def test_matmul_shapes(sa, sb):
    a = sample(sa, "float32", 1)
    b = sample(sb, "float32", 2)
    check(kn.matmul(kn.asarray(a), kn.asarray(b)), np.matmul(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["int32", "int64", "float16", "float64"])
def test_matmul_dtypes(name):
    a = sample((3, 4), name, 1)
    b = sample((4, 2), name, 2)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    check(kn.matmul(kn.asarray(a), kn.asarray(b)), want.astype(name), dtype=name)


def test_vecdot():
    a = sample((3, 4), "float64", 1)
    b = sample((4,), "float64", 2)
    check(kn.vecdot(kn.asarray(a), kn.asarray(b)), np.sum(a * b, axis=-1))
    check(kn.vecdot(kn.asarray(a), kn.asarray(a), axis=0), np.sum(a * a, axis=0))


def test_take_and_take_along_axis():
    a = sample((3, 4), "float32")
    idx = np.array([2, 0, 1, 2])
    check(kn.take(kn.asarray(a), kn.asarray(idx), axis=1), np.take(a, idx, axis=1))
    check(kn.take(kn.asarray(a), kn.asarray(idx[:3]), axis=0), np.take(a, idx[:3], axis=0))
    order = np.argsort(a, axis=1)
    check(kn.take_along_axis(kn.asarray(a), kn.asarray(order), axis=1), np.take_along_axis(a, order, axis=1))


def test_put_along_axis_is_functional():
    a = sample((3, 4), "float32")
    idx = np.array([[0], [2], [3]])
    x = kn.asarray(a)
    got = kn.put_along_axis(x, kn.asarray(idx), 9.0, axis=1)
    want = a.copy()
    np.put_along_axis(want, idx, 9.0, axis=1)
    check(got, want)
    check(x, a)  # unchanged


def test_one_hot():
    idx = np.array([0, 2, 1, 3])
    one_hot = getattr(kn, "one_hot", None) or kn.nn.one_hot
    check(one_hot(kn.asarray(idx), 4), np.eye(4, dtype=np.float32)[idx], dtype="float32")
