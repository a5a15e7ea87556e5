"""kn.fft: numpy.fft and the Array API's fft extension, on kiln's transforms
(they trace, compile, differentiate and batch like every operation)."""

from . import _kiln

_fft = _kiln._fft

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


def _norm(norm):
    return "backward" if norm is None else norm


def fft(x, /, n=None, axis=-1, norm="backward"):
    return _fft.fft(x, n, axis, _norm(norm))


def ifft(x, /, n=None, axis=-1, norm="backward"):
    return _fft.ifft(x, n, axis, _norm(norm))


def rfft(x, /, n=None, axis=-1, norm="backward"):
    return _fft.rfft(x, n, axis, _norm(norm))


def irfft(x, /, n=None, axis=-1, norm="backward"):
    return _fft.irfft(x, n, axis, _norm(norm))


def hfft(x, /, n=None, axis=-1, norm="backward"):
    return _fft.hfft(x, n, axis, _norm(norm))


def ihfft(x, /, n=None, axis=-1, norm="backward"):
    return _fft.ihfft(x, n, axis, _norm(norm))


def fftn(x, /, s=None, axes=None, norm="backward"):
    return _fft.fftn(x, s, axes, _norm(norm))


def ifftn(x, /, s=None, axes=None, norm="backward"):
    return _fft.ifftn(x, s, axes, _norm(norm))


def rfftn(x, /, s=None, axes=None, norm="backward"):
    return _fft.rfftn(x, s, axes, _norm(norm))


def irfftn(x, /, s=None, axes=None, norm="backward"):
    return _fft.irfftn(x, s, axes, _norm(norm))


def fftfreq(n, /, d=1.0, *, dtype=None, device=None):
    return _fft.fftfreq(n, d, dtype)


def rfftfreq(n, /, d=1.0, *, dtype=None, device=None):
    return _fft.rfftfreq(n, d, dtype)


def fftshift(x, /, axes=None):
    return _fft.fftshift(x, axes)


def ifftshift(x, /, axes=None):
    return _fft.ifftshift(x, axes)
