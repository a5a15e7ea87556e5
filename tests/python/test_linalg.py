"""kn.linalg against numpy.linalg: factorizations checked by reconstruction
where signs are free, values directly where they are not; batched inputs."""

import numpy as np
import pytest

import kiln as kn
from conftest import check


def well_conditioned(shape, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    a = rng.normal(size=shape) + n * np.eye(n)
    return a.astype(dtype)


def spd(shape, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-11)}
DTYPES = [np.float32, np.float64]
BATCHES = [(), (3,), (2, 2)]


def close(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), np.asarray(want, np.float64), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_solve_inv_det(dtype, batch):
    a = well_conditioned(batch + (4, 4), 1, dtype)
    b = np.random.default_rng(2).normal(size=batch + (4, 2)).astype(dtype)
    x = kn.linalg.solve(kn.asarray(a), kn.asarray(b))
    assert x.dtype == kn.asarray(a).dtype
    close(x, np.linalg.solve(a.astype(np.float64), b.astype(np.float64)), dtype)
    close(kn.linalg.inv(kn.asarray(a)), np.linalg.inv(a.astype(np.float64)), dtype)
    close(kn.linalg.det(kn.asarray(a)), np.linalg.det(a.astype(np.float64)), dtype)


def test_solve_with_a_vector():
    a = well_conditioned((3, 3), 4)
    b = np.array([1.0, 2.0, 3.0])
    check(kn.linalg.solve(kn.asarray(a), kn.asarray(b)), np.linalg.solve(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
def test_slogdet(dtype):
    a = well_conditioned((2, 3, 3), 5, dtype)
    a[0] *= -1
    sign, logabs = kn.linalg.slogdet(kn.asarray(a))
    ws, wl = np.linalg.slogdet(a.astype(np.float64))
    close(sign, ws, dtype)
    close(logabs, wl, dtype)
    res = kn.linalg.slogdet(kn.asarray(a))
    close(res.sign, ws, dtype)
    close(res.logabsdet, wl, dtype)


def test_singular_matrix():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    sign, logabs = kn.linalg.slogdet(kn.asarray(a))
    assert float(sign) == 0.0 and float(logabs) == -np.inf
    assert float(kn.linalg.det(kn.asarray(a))) == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_cholesky(dtype, batch):
    a = spd(batch + (4, 4), 3, dtype)
    close(kn.linalg.cholesky(kn.asarray(a)), np.linalg.cholesky(a.astype(np.float64)), dtype)


def test_cholesky_upper():
    a = spd((3, 3), 3)
    check(kn.linalg.cholesky(kn.asarray(a), upper=True), np.linalg.cholesky(a).T)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(shape, mode):
    a = np.random.default_rng(6).normal(size=shape)
    q, r = kn.linalg.qr(kn.asarray(a), mode=mode)
    wq, wr = np.linalg.qr(a, mode=mode) if a.ndim == 2 else (None, None)
    qn, rn = np.asarray(q), np.asarray(r)
    np.testing.assert_allclose(qn @ rn, a, atol=1e-12)
    k = qn.shape[-1]
    np.testing.assert_allclose(np.swapaxes(qn, -1, -2) @ qn, np.broadcast_to(np.eye(k), qn.shape[:-2] + (k, k)),
                               atol=1e-12)
    np.testing.assert_allclose(np.tril(rn, -1), 0, atol=1e-12)
    if wq is not None:  # LAPACK's signs, as NumPy
        np.testing.assert_allclose(qn, wq, atol=1e-12)
        np.testing.assert_allclose(rn, wr, atol=1e-12)
    res = kn.linalg.qr(kn.asarray(a), mode=mode)
    assert res.Q.shape == q.shape and res.R.shape == r.shape


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(shape, full_matrices):
    a = np.random.default_rng(7).normal(size=shape)
    u, s, vh = kn.linalg.svd(kn.asarray(a), full_matrices=full_matrices)
    wu, ws, wvh = np.linalg.svd(a, full_matrices=full_matrices)
    assert u.shape == wu.shape and s.shape == ws.shape and vh.shape == wvh.shape
    np.testing.assert_allclose(np.asarray(s), ws, rtol=1e-10)
    k = ws.shape[-1]
    un, vn = np.asarray(u)[..., :k], np.asarray(vh)[..., :k, :]
    np.testing.assert_allclose((un * np.asarray(s)[..., None, :]) @ vn, a, atol=1e-10)
    check(kn.linalg.svdvals(kn.asarray(a)), ws)
    res = kn.linalg.svd(kn.asarray(a), full_matrices=full_matrices)
    assert res.U.shape == wu.shape and res.S.shape == ws.shape and res.Vh.shape == wvh.shape


@pytest.mark.parametrize("batch", BATCHES)
def test_eigh(batch):
    a = spd(batch + (4, 4), 8)
    w, v = kn.linalg.eigh(kn.asarray(a))
    ww = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(np.asarray(w), ww, rtol=1e-10)
    vn = np.asarray(v)
    np.testing.assert_allclose(a @ vn, vn * np.asarray(w)[..., None, :], atol=1e-9)
    check(kn.linalg.eigvalsh(kn.asarray(a)), ww)
    res = kn.linalg.eigh(kn.asarray(a))
    assert res.eigenvalues.shape == ww.shape and res.eigenvectors.shape == a.shape


@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3, -1])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_vector_norm(ord, axis):
    a = np.random.default_rng(9).normal(size=(3, 5))
    kwargs = {} if ord is None else {"ord": ord}
    check(kn.linalg.vector_norm(kn.asarray(a), axis=axis, **kwargs),
          np.linalg.norm(a.ravel() if axis is None else a, axis=None if axis is None else axis, **kwargs))


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, 2, np.inf, -1, -2, -np.inf])
def test_matrix_norm(ord):
    a = np.random.default_rng(10).normal(size=(2, 3, 4))
    check(kn.linalg.matrix_norm(kn.asarray(a), ord=ord), np.linalg.norm(a, ord=ord, axis=(-2, -1)))
    check(kn.linalg.matrix_norm(kn.asarray(a), ord=ord, keepdims=True),
          np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=True))


def test_norm_numpy_style():
    a = np.random.default_rng(11).normal(size=(3, 4))
    check(kn.linalg.norm(kn.asarray(a)), np.linalg.norm(a))
    check(kn.linalg.norm(kn.asarray(a), axis=1), np.linalg.norm(a, axis=1))
    check(kn.linalg.norm(kn.asarray(a), ord=1), np.linalg.norm(a, ord=1))


def test_norm_of_integers_is_float32():
    got = kn.linalg.vector_norm(kn.asarray(np.array([3, 4], np.int32)))
    check(got, np.float32(5.0), dtype="float32")


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_pinv_lstsq_matrix_rank(shape):
    a = np.random.default_rng(12).normal(size=shape)
    check(kn.linalg.pinv(kn.asarray(a)), np.linalg.pinv(a), rtol=1e-9, atol=1e-10)
    b = np.random.default_rng(13).normal(size=(shape[0], 2))
    sol = kn.linalg.lstsq(kn.asarray(a), kn.asarray(b))
    want = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(np.asarray(sol[0]), want[0], rtol=1e-9, atol=1e-10)
    assert int(kn.linalg.matrix_rank(kn.asarray(a))) == np.linalg.matrix_rank(a)
    deficient = np.outer(np.arange(1.0, 4.0), np.arange(1.0, 5.0))
    assert int(kn.linalg.matrix_rank(kn.asarray(deficient))) == 1


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power(n):
    a = well_conditioned((3, 3), 14)
    check(kn.linalg.matrix_power(kn.asarray(a), n), np.linalg.matrix_power(a, n), rtol=1e-9, atol=1e-10)


def test_standard_linalg_helpers():
    a = np.random.default_rng(15).normal(size=(2, 3, 4))
    b = np.random.default_rng(16).normal(size=(2, 4, 5))
    check(kn.linalg.matmul(kn.asarray(a), kn.asarray(b)), a @ b)
    check(kn.linalg.matrix_transpose(kn.asarray(a)), np.swapaxes(a, -1, -2))
    check(kn.linalg.diagonal(kn.asarray(a)), np.diagonal(a, axis1=-2, axis2=-1))
    check(kn.linalg.diagonal(kn.asarray(a), offset=1), np.diagonal(a, offset=1, axis1=-2, axis2=-1))
    check(kn.linalg.trace(kn.asarray(a)), np.trace(a, axis1=-2, axis2=-1))
    check(kn.linalg.outer(kn.asarray(a[0, 0]), kn.asarray(b[0, 0])), np.outer(a[0, 0], b[0, 0]))
    check(kn.linalg.tensordot(kn.asarray(a[0]), kn.asarray(b[0]), axes=1), np.tensordot(a[0], b[0], axes=1))
    check(kn.linalg.vecdot(kn.asarray(a), kn.asarray(a)), np.sum(a * a, axis=-1))
    u = np.random.default_rng(17).normal(size=(5, 3))
    v = np.random.default_rng(18).normal(size=(5, 3))
    check(kn.linalg.cross(kn.asarray(u), kn.asarray(v)), np.cross(u, v))


def test_triangular_solve():
    a = np.tril(well_conditioned((4, 4), 19))
    b = np.random.default_rng(20).normal(size=(4, 3))
    check(kn.linalg.triangular_solve(kn.asarray(a), kn.asarray(b), lower=True), np.linalg.solve(a, b))


def test_failed_factorization_gives_nan():
    a = -np.eye(3)
    got = np.asarray(kn.linalg.cholesky(kn.asarray(a)))
    assert np.isnan(got).any()


def test_linalg_on_non_square_is_an_error():
    with pytest.raises((ValueError, kn.Error)):
        kn.linalg.inv(kn.zeros((2, 3)))
