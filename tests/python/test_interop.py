"""Interop without copies: NumPy views of kiln arrays, kiln arrays over NumPy
buffers (copy=None/True/False as the Array API says), DLPack both ways with
NumPy and PyTorch, lifetimes and reference counts."""

import gc
import sys
import weakref

import numpy as np
import pytest
import torch

import kiln as kn
from conftest import ALL_NP, check, kd, npd, sample


def data_pointer(a):
    return a.__array_interface__["data"][0]


# ---- kiln -> NumPy ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NP)
def test_np_asarray_shares_the_buffer(name):
    x = kn.asarray(sample((3, 4), name))
    a = np.asarray(x)
    b = np.asarray(x)
    assert a.dtype == npd(name) and a.shape == (3, 4)
    assert data_pointer(a) == data_pointer(b)  # one buffer, no copy per call
    assert np.shares_memory(a, b)
    if name != "bool":  # NumPy 1.24's DLPack has no bool
        c = np.from_dlpack(x)
        assert data_pointer(c) == data_pointer(a)


def test_numpy_view_is_read_only():
    x = kn.arange(4)
    a = np.asarray(x)
    assert a.flags.writeable is False
    with pytest.raises(ValueError):
        a[0] = 10
    check(x, np.arange(4, dtype=np.int32))


def test_np_array_makes_a_writable_copy():
    x = kn.asarray([1.0, 2.0])
    a = np.array(x)
    a[0] = 5.0
    check(x, np.array([1.0, 2.0], np.float32))


def test_np_asarray_with_a_dtype_converts():
    x = kn.arange(1, 4)
    a = np.asarray(x, dtype=np.float64)
    assert a.dtype == np.float64
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])


def test_buffer_protocol():
    x = kn.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    m = memoryview(x)
    assert m.shape == (2, 3)
    assert m.format == "f"
    assert m.readonly
    assert m.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_numpy_view_outlives_the_kiln_handle():
    x = kn.asarray(sample((1000,), "float64", 3)) * 2.0
    want = np.array(np.asarray(x))  # a copy for reference
    view = np.asarray(x)
    del x
    gc.collect()
    _ = [kn.zeros((1000,), dtype=kn.float64) + i for i in range(20)]  # reuse memory if it were freed
    np.testing.assert_array_equal(view, want)


def test_dlpack_view_outlives_the_kiln_handle():
    x = kn.arange(100).astype(kn.float32) + 1.0
    view = np.from_dlpack(x)
    del x
    gc.collect()
    _ = [kn.ones((100,)) * 7 for _ in range(10)]
    np.testing.assert_array_equal(view, np.arange(100, dtype=np.float32) + 1)


def test_views_of_views_of_a_0d_and_empty_array():
    s = kn.asarray(np.float32(3.5))
    assert np.asarray(s).shape == () and float(np.asarray(s)) == 3.5
    e = kn.zeros((0, 4))
    assert np.asarray(e).shape == (0, 4)


# ---- NumPy -> kiln ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NP)
def test_asarray_shares_a_contiguous_numpy_buffer(name):
    a = sample((5, 3), name)
    x = kn.asarray(a)
    check(x, a)
    assert data_pointer(np.asarray(x)) == data_pointer(a)


def test_asarray_copy_none_shares_and_copy_true_copies():
    a = np.arange(8, dtype=np.float32)
    shared = kn.asarray(a, copy=None)
    copied = kn.asarray(a, copy=True)
    assert data_pointer(np.asarray(shared)) == data_pointer(a)
    assert data_pointer(np.asarray(copied)) != data_pointer(a)
    check(copied, np.arange(8, dtype=np.float32))


def test_asarray_copy_false_shares_or_raises():
    a = np.arange(8, dtype=np.float32)
    x = kn.asarray(a, copy=False)
    assert data_pointer(np.asarray(x)) == data_pointer(a)
    with pytest.raises(ValueError):
        kn.asarray(a[::2], copy=False)  # would need a copy
    with pytest.raises(ValueError):
        kn.asarray(a, dtype=kn.float64, copy=False)  # would need a conversion
    with pytest.raises(ValueError):
        kn.asarray([1.0, 2.0], copy=False)  # a list always needs a copy


def test_sharing_keeps_the_numpy_array_alive_and_then_releases_it():
    a = np.arange(1000, dtype=np.float64)
    ref = weakref.ref(a)
    before = sys.getrefcount(a)
    x = kn.asarray(a)
    assert sys.getrefcount(a) > before  # the kiln array holds the NumPy buffer's owner
    del a
    gc.collect()
    assert ref() is not None
    np.testing.assert_array_equal(np.asarray(x), np.arange(1000, dtype=np.float64))
    del x
    gc.collect()
    assert ref() is None  # released once the kiln array is gone


@pytest.mark.parametrize("make", [
    lambda: np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2],  # strided
    lambda: np.asfortranarray(np.arange(24, dtype=np.float32).reshape(4, 6)),  # Fortran order
    lambda: np.arange(24, dtype=np.float32).reshape(4, 6).T,  # transposed view
    lambda: np.arange(24, dtype=">f4").reshape(4, 6),  # byte-swapped
    lambda: np.arange(24, dtype=np.float32)[::-1].reshape(4, 6),  # negative strides
    lambda: np.broadcast_to(np.arange(6, dtype=np.float32), (4, 6)),  # zero strides
])
def test_asarray_copies_what_it_cannot_share(make):
    a = make()
    want = np.array(a, dtype=a.dtype.newbyteorder("=") if a.dtype.byteorder == ">" else a.dtype)
    x = kn.asarray(a)
    check(x, want.astype(np.float32))
    assert x.dtype == kn.float32


def test_asarray_of_a_read_only_array():
    a = np.arange(6, dtype=np.int32)
    a.flags.writeable = False
    x = kn.asarray(a)
    check(x, np.arange(6, dtype=np.int32))


def test_asarray_then_numpy_writes_after_copy_true_are_not_seen():
    a = np.arange(4, dtype=np.float32)
    x = kn.asarray(a, copy=True)
    a[0] = 100.0
    check(x, np.arange(4, dtype=np.float32))


def test_asarray_of_unaligned_data():
    raw = np.zeros(4 * 10 + 1, np.uint8)
    a = raw[1:].view(np.float32)  # misaligned by one byte
    a[:] = np.arange(10, dtype=np.float32)
    check(kn.asarray(a), np.arange(10, dtype=np.float32))


def test_refcount_of_a_numpy_array_does_not_grow():
    a = np.arange(16, dtype=np.float32)
    before = sys.getrefcount(a)
    for _ in range(10000):
        x = kn.asarray(a)
    del x
    gc.collect()
    assert sys.getrefcount(a) == before


def test_refcount_of_numpy_views_of_kiln_arrays_does_not_grow():
    x = kn.arange(16)
    before = sys.getrefcount(x)
    for _ in range(10000):
        a = np.asarray(x)
    del a
    gc.collect()
    assert sys.getrefcount(x) == before


def test_refcount_of_operands_does_not_grow():
    x = kn.ones((4,))
    before = sys.getrefcount(x)
    for _ in range(2000):
        y = x + 1.0
        y = kn.sum(x)
        y = x[1:]
        y = x.shape
    del y
    gc.collect()
    assert sys.getrefcount(x) == before


def test_refcount_of_python_numbers_and_lists_does_not_grow():
    big = 12345678901
    lst = [1.0, 2.0, 3.0]
    before_big, before_lst = sys.getrefcount(big), sys.getrefcount(lst)
    for _ in range(2000):
        y = kn.asarray(lst) * big
    del y
    gc.collect()
    assert sys.getrefcount(big) == before_big
    assert sys.getrefcount(lst) == before_lst


def test_results_and_views_release_the_numpy_buffer():
    a = np.arange(64, dtype=np.float32)
    ref = weakref.ref(a)
    x = kn.asarray(a)
    views = [x[1:], x.reshape(8, 8), x + 1.0, np.asarray(x)]
    del a, x
    gc.collect()
    assert ref() is not None  # the NumPy view above still reads it
    del views
    gc.collect()
    assert ref() is None


# ---- DLPack -------------------------------------------------------------------------------


def test_dlpack_device_is_cpu():
    assert tuple(kn.zeros((2,)).__dlpack_device__()) == (1, 0)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"])
def test_dlpack_to_torch(name):
    a = sample((3, 4), name)
    x = kn.asarray(a)
    t = torch.from_dlpack(x)
    assert t.shape == (3, 4)
    np.testing.assert_array_equal(t.numpy(), a)
    assert t.data_ptr() == data_pointer(np.asarray(x))


def test_dlpack_to_torch_of_a_non_contiguous_result():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = kn.asarray(a).T
    t = torch.from_dlpack(x)
    np.testing.assert_array_equal(t.numpy(), a.T)


def test_torch_tensor_outlives_the_kiln_handle():
    x = kn.arange(50).astype(kn.float64) * 3.0
    t = torch.from_dlpack(x)
    del x
    gc.collect()
    _ = [kn.ones((50,), dtype=kn.float64) for _ in range(10)]
    np.testing.assert_array_equal(t.numpy(), np.arange(50) * 3.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8, torch.int8,
                                   torch.float16, torch.int16])
def test_from_dlpack_of_torch_shares(dtype):
    t = (torch.arange(12) % 5).reshape(3, 4).to(dtype)
    x = kn.from_dlpack(t)
    assert x.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(x), t.numpy())
    assert data_pointer(np.asarray(x)) == t.data_ptr()


def test_from_dlpack_of_a_strided_torch_tensor():
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)[:, 1::2]
    x = kn.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(x), t.numpy())


def test_from_dlpack_of_a_torch_tensor_outlives_it():
    t = torch.arange(10, dtype=torch.float32)
    x = kn.from_dlpack(t)
    del t
    gc.collect()
    _ = [torch.ones(10) for _ in range(10)]
    check(x, np.arange(10, dtype=np.float32))


def test_from_dlpack_of_numpy():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    x = kn.from_dlpack(a)
    check(x, a)
    assert data_pointer(np.asarray(x)) == data_pointer(a)


def test_from_dlpack_of_kiln_is_the_same_data():
    x = kn.asarray([1.0, 2.0])
    y = kn.from_dlpack(x)
    check(y, np.array([1.0, 2.0], np.float32))


def test_from_dlpack_refuses_objects_without_dlpack():
    with pytest.raises((TypeError, ValueError)):
        kn.from_dlpack([1, 2, 3])


def test_dlpack_capsule_is_consumed_once():
    x = kn.arange(3)
    capsule = x.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
    t = torch.utils.dlpack.from_dlpack(capsule)
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2])
    with pytest.raises(Exception):
        torch.utils.dlpack.from_dlpack(capsule)  # a used capsule is refused


def test_unconsumed_dlpack_capsules_are_freed():
    x = kn.arange(1000)
    before = sys.getrefcount(x)
    for _ in range(1000):
        capsule = x.__dlpack__()
        del capsule
    gc.collect()
    assert sys.getrefcount(x) == before


def test_round_trip_through_torch_and_back():
    a = sample((2, 3), "float32")
    x = kn.asarray(a)
    t = torch.from_dlpack(x)
    y = kn.from_dlpack(t * 2)
    check(y, a * 2)
    z = kn.from_dlpack(t)
    assert data_pointer(np.asarray(z)) == data_pointer(np.asarray(x))


def test_torch_tensor_as_an_operand_through_asarray():
    t = torch.arange(4, dtype=torch.float32)
    x = kn.asarray(t.numpy())
    check(x + 1.0, np.arange(4, dtype=np.float32) + 1)


def test_to_device_and_device():
    x = kn.zeros((2,))
    assert x.device in kn.__array_namespace_info__().devices()
    y = x.to_device(x.device)
    check(y, np.zeros(2, np.float32))


def test_kiln_dtype_of_numpy_dtype_names():
    for name in ALL_NP:
        x = kn.asarray(np.zeros(2, dtype=name))
        assert x.dtype == kd(name)


def test_bfloat16_through_dlpack_with_torch():
    x = kn.asarray([1.0, -2.5, 3.0], dtype=kn.bfloat16)
    t = torch.from_dlpack(x)
    assert t.dtype == torch.bfloat16
    np.testing.assert_array_equal(t.float().numpy(), [1.0, -2.5, 3.0])
    y = kn.from_dlpack(torch.tensor([0.5, 4.0], dtype=torch.bfloat16))
    assert y.dtype == kn.bfloat16
    check(y.astype(kn.float32), np.array([0.5, 4.0], np.float32))
