"""kn.linalg: the Array API's linear-algebra extension and numpy.linalg's
names, on kiln's LAPACK-backed operations (batched over leading axes,
differentiable)."""

from collections import namedtuple as _namedtuple

from . import _kiln
from ._api import matrix_transpose, tensordot, vecdot  # noqa: F401

_linalg = _kiln._linalg

EighResult = _namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = _namedtuple("QRResult", ["Q", "R"])
SlogdetResult = _namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = _namedtuple("SVDResult", ["U", "S", "Vh"])
LstsqResult = _namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])

matmul = _kiln.matmul
outer = _kiln.outer
det = _linalg.det
inv = _linalg.inv
solve = _linalg.solve
svdvals = _linalg.svdvals


def cholesky(x, /, *, upper=False):
    lower = _linalg.cholesky(x)
    return _kiln.swapaxes(lower, -1, -2) if upper else lower


def cross(x1, x2, /, *, axis=-1):
    return _kiln.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
    return _kiln.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    result = _kiln.trace(x, offset, -2, -1)
    return result if dtype is None else _kiln.astype(result, dtype)


def eigh(x, /, *, UPLO="L"):
    return EighResult(*_linalg.eigh(x, UPLO == "L"))


def eigvalsh(x, /, *, UPLO="L"):
    return _linalg.eigvalsh(x, UPLO == "L")


def qr(x, /, *, mode="reduced"):
    return QRResult(*_linalg.qr(x, mode))


def slogdet(x, /):
    return SlogdetResult(*_linalg.slogdet(x))


def svd(x, /, *, full_matrices=True, compute_uv=True):
    result = _linalg.svd(x, full_matrices, compute_uv)
    return SVDResult(*result) if compute_uv else result


def lstsq(a, b, rcond=None):
    return LstsqResult(*_linalg.lstsq(a, b, rcond))


def pinv(x, /, *, rtol=None):
    return _linalg.pinv(x, rtol)


def matrix_rank(x, /, *, rtol=None):
    return _linalg.matrix_rank(x, rtol)


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm."""
    return _linalg.norm(x, ord, axis, keepdims)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _kiln.asarray(x)
    if axis is None:
        return _linalg.norm(_kiln.ravel(x), ord, 0, False) if not keepdims else \
            _kiln._reshape(_linalg.norm(_kiln.ravel(x), ord, 0, False), [1] * x.ndim)
    return _linalg.norm(x, ord, axis, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return _linalg.norm(x, ord, (-2, -1), keepdims)


def matrix_power(x, n, /):
    x = _kiln.asarray(x)
    if n < 0:
        x, n = _linalg.inv(x), -n
    result = _kiln.broadcast_to(_kiln.eye(x.shape[-1], dtype=x.dtype), x.shape)
    while n:
        if n & 1:
            result = _kiln.matmul(result, x)
        x = _kiln.matmul(x, x) if n > 1 else x
        n >>= 1
    return result


def triangular_solve(a, b, *, lower=True, transpose_a=False, unit_diagonal=False):
    return _linalg.triangular_solve(a, b, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
