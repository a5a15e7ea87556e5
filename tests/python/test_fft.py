"""kn.fft against numpy.fft: transforms over axes, lengths (powers of two,
primes, odd), n= padding and cropping, norm=, real transforms, frequencies,
shifts, dtypes (float32 in, complex64 out; float64 in, complex128 out)."""

import numpy as np
import pytest

import kiln as kn

TOL = {np.complex64: dict(rtol=1e-4, atol=1e-4), np.complex128: dict(rtol=1e-10, atol=1e-10),
       np.float32: dict(rtol=1e-4, atol=1e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


FFT = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq",
       "fftshift", "ifftshift"]


def test_fft_extension_is_complete():
    assert hasattr(kn, "fft"), "kn.fft is missing"
    missing = [name for name in FFT if not callable(getattr(kn.fft, name, None))]
    assert not missing, f"kn.fft misses {missing}"


def csample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


def rsample(shape, dtype, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def fcheck(result, expected, dtype):
    assert isinstance(result, kn.Array)
    got = np.asarray(result)
    assert got.dtype == np.dtype(dtype), f"dtype: expected {np.dtype(dtype)}, got {got.dtype}"
    assert got.shape == np.shape(expected)
    scale = max(1.0, float(np.max(np.abs(expected)))) if np.size(expected) else 1.0
    np.testing.assert_allclose(got, expected, rtol=TOL[dtype]["rtol"], atol=TOL[dtype]["atol"] * scale)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", [1, 2, 8, 7, 12, 17, 64, 100])
def test_fft_ifft_lengths(dtype, n):
    a = csample((3, n), dtype, n)
    fcheck(kn.fft.fft(kn.asarray(a)), np.fft.fft(a.astype(np.complex128)), dtype)
    fcheck(kn.fft.ifft(kn.asarray(a)), np.fft.ifft(a.astype(np.complex128)), dtype)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_fft_axis(axis):
    a = csample((4, 6, 5), np.complex128, 1)
    fcheck(kn.fft.fft(kn.asarray(a), axis=axis), np.fft.fft(a, axis=axis), np.complex128)


@pytest.mark.parametrize("n", [4, 6, 9])
def test_fft_n_pads_or_crops(n):
    a = csample((2, 6), np.complex128, 2)
    fcheck(kn.fft.fft(kn.asarray(a), n=n), np.fft.fft(a, n=n), np.complex128)
    fcheck(kn.fft.ifft(kn.asarray(a), n=n), np.fft.ifft(a, n=n), np.complex128)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_norm(norm):
    a = csample((8,), np.complex128, 3)
    fcheck(kn.fft.fft(kn.asarray(a), norm=norm), np.fft.fft(a, norm=norm), np.complex128)
    fcheck(kn.fft.ifft(kn.asarray(a), norm=norm), np.fft.ifft(a, norm=norm), np.complex128)
    r = rsample((8,), np.float64, 3)
    fcheck(kn.fft.rfft(kn.asarray(r), norm=norm), np.fft.rfft(r, norm=norm), np.complex128)


def test_real_input_to_fft_promotes_to_complex():
    r32 = rsample((8,), np.float32, 4)
    fcheck(kn.fft.fft(kn.asarray(r32)), np.fft.fft(r32.astype(np.float64)), np.complex64)
    r64 = rsample((8,), np.float64, 4)
    fcheck(kn.fft.fft(kn.asarray(r64)), np.fft.fft(r64), np.complex128)


@pytest.mark.parametrize("dtype,cdtype", [(np.float32, np.complex64), (np.float64, np.complex128)])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 15, 16])
def test_rfft_irfft(dtype, cdtype, n):
    r = rsample((2, n), dtype, n)
    spectrum = kn.fft.rfft(kn.asarray(r))
    fcheck(spectrum, np.fft.rfft(r.astype(np.float64)), cdtype)
    back = kn.fft.irfft(spectrum, n=n)
    fcheck(back, r.astype(np.float64), dtype)


def test_irfft_default_length():
    c = csample((5,), np.complex128, 6)
    fcheck(kn.fft.irfft(kn.asarray(c)), np.fft.irfft(c), np.float64)
    fcheck(kn.fft.irfft(kn.asarray(c), n=9), np.fft.irfft(c, n=9), np.float64)


@pytest.mark.parametrize("axes", [None, (0, 1), (1, 2), (-1,), (0, 2)])
def test_fftn_ifftn(axes):
    a = csample((3, 4, 5), np.complex128, 7)
    fcheck(kn.fft.fftn(kn.asarray(a), axes=axes), np.fft.fftn(a, axes=axes), np.complex128)
    fcheck(kn.fft.ifftn(kn.asarray(a), axes=axes), np.fft.ifftn(a, axes=axes), np.complex128)


def test_fftn_with_s():
    a = csample((4, 6), np.complex128, 8)
    fcheck(kn.fft.fftn(kn.asarray(a), s=(3, 8), axes=(0, 1)), np.fft.fftn(a, s=(3, 8), axes=(0, 1)), np.complex128)


@pytest.mark.parametrize("axes", [None, (0, 1), (1, 2)])
def test_rfftn_irfftn(axes):
    r = rsample((4, 6, 5), np.float64, 9)
    spec = kn.fft.rfftn(kn.asarray(r), axes=axes)
    fcheck(spec, np.fft.rfftn(r, axes=axes), np.complex128)
    shape = r.shape if axes is None else tuple(r.shape[a] for a in axes)
    fcheck(kn.fft.irfftn(spec, s=shape, axes=axes), np.fft.irfftn(np.fft.rfftn(r, axes=axes), s=shape, axes=axes),
           np.float64)


def test_hfft_ihfft():
    c = csample((5,), np.complex128, 10)
    fcheck(kn.fft.hfft(kn.asarray(c)), np.fft.hfft(c), np.float64)
    r = rsample((8,), np.float64, 10)
    fcheck(kn.fft.ihfft(kn.asarray(r)), np.fft.ihfft(r), np.complex128)


@pytest.mark.parametrize("n,d", [(8, 1.0), (7, 0.5), (1, 1.0), (10, 0.1)])
def test_fftfreq_rfftfreq(n, d):
    f = kn.fft.fftfreq(n, d=d)
    np.testing.assert_allclose(np.asarray(f), np.fft.fftfreq(n, d=d), rtol=1e-6)
    assert f.dtype == kn.float32  # the default floating dtype
    np.testing.assert_allclose(np.asarray(kn.fft.rfftfreq(n, d=d)), np.fft.rfftfreq(n, d=d), rtol=1e-6)


@pytest.mark.parametrize("axes", [None, 0, 1, (0, 1)])
def test_shifts(axes):
    a = np.arange(15, dtype=np.float32).reshape(3, 5)
    np.testing.assert_array_equal(np.asarray(kn.fft.fftshift(kn.asarray(a), axes=axes)), np.fft.fftshift(a, axes=axes))
    np.testing.assert_array_equal(np.asarray(kn.fft.ifftshift(kn.asarray(a), axes=axes)),
                                  np.fft.ifftshift(a, axes=axes))


def test_round_trip_identity():
    a = csample((16,), np.complex64, 11)
    back = kn.fft.ifft(kn.fft.fft(kn.asarray(a)))
    fcheck(back, a.astype(np.complex128), np.complex64)


def test_fft_of_integers_is_complex64():
    a = np.arange(8, dtype=np.int32)
    fcheck(kn.fft.fft(kn.asarray(a)), np.fft.fft(a), np.complex64)


def test_fft_bad_arguments():
    with pytest.raises((ValueError, kn.Error)):
        kn.fft.fft(kn.zeros((4,)), n=0)
    with pytest.raises((ValueError, kn.Error)):
        kn.fft.fft(kn.zeros((4,)), axis=3)
    with pytest.raises((ValueError, kn.Error)):
        kn.fft.fft(kn.zeros((4,)), norm="sideways")
