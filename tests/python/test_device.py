"""The cuda device from Python: kn.jit(..., device="cuda"), x.device and
x.to_device. The GPU path runs on kiln's emulated device (KILN_CUDA_EMULATE=1:
the same GPU entries compiled for the host), so this runs without a GPU;
NumPy is the oracle.
"""

import ctypes
import os

os.environ["KILN_CACHE"] = "off"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import kiln as kn  # noqa: E402


@pytest.fixture
def emulated(monkeypatch):
    monkeypatch.setenv("KILN_CUDA_EMULATE", "1")


def layer(x, w):
    return kn.tanh(x @ w) * 2.0 + 1.0


def test_a_gpu_function_leaves_its_results_on_the_device(emulated):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((8, 16), dtype=np.float32)
    w_np = rng.standard_normal((16, 4), dtype=np.float32)
    x = kn.asarray(x_np).to_device("cuda")
    w = kn.asarray(w_np).to_device("cuda")
    assert x.device == "cuda"
    on_gpu = kn.jit(layer, device="cuda")
    y = on_gpu(x, w)
    assert y.device == "cuda"
    np.testing.assert_allclose(np.asarray(y), np.tanh(x_np @ w_np) * 2 + 1, rtol=1e-5, atol=1e-5)
    # The same function on the cpu compiles once more: executables are per device.
    before = kn.global_cache_stats().compiles
    on_cpu = kn.jit(layer)
    z = on_cpu(kn.asarray(x_np), kn.asarray(w_np))
    assert z.device == "cpu"
    assert kn.global_cache_stats().compiles == before + 1
    np.testing.assert_allclose(np.asarray(y), np.asarray(z), rtol=1e-5, atol=1e-5)
    # Arrays come back to the host on request.
    back = y.to_device("cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal(np.asarray(back), np.asarray(y))


def test_an_unknown_device_is_refused_by_name():
    with pytest.raises(Exception, match="asks for device 'tpu', which kiln does not know"):
        kn.jit(layer, device="tpu")
    with pytest.raises(Exception, match="device 'tpu' is not one kiln knows"):
        kn.zeros((2,)).to_device("tpu")


def test_without_a_gpu_the_cuda_device_says_why(monkeypatch):
    monkeypatch.delenv("KILN_CUDA_EMULATE", raising=False)
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has a CUDA driver")
    except OSError:
        pass
    with pytest.raises(Exception, match="which is not available here"):
        kn.jit(layer, device="cuda")
    with pytest.raises(Exception, match="libcuda.so.1"):
        kn.zeros((2,)).to_device("cuda")
