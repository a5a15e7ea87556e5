"""I/O: kn.save / kn.load (safetensors, a dict of arrays) and kn.save_npy /
kn.load_npy, round trips for every dtype, files NumPy wrote, and files read
by an independent parser of each format."""

import json
import struct

import numpy as np
import pytest

import kiln as kn
from conftest import ALL_NP, check, kd, sample

SAFETENSORS_CODES = {
    "bool": "BOOL", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
    "float16": "F16", "float32": "F32", "float64": "F64",
}


def read_safetensors(path):
    """An independent reader of the format: {name: (code, shape, raw bytes)}."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = (entry["dtype"], tuple(entry["shape"]), data[begin:end])
    return out


def write_safetensors(path, arrays):
    header, chunks, offset = {}, [], 0
    for name, a in arrays.items():
        raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": SAFETENSORS_CODES[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "np"}
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


# ---- safetensors ------------------------------------------------------------------------------


def test_save_load_round_trip_every_dtype(tmp_path):
    arrays = {name: sample((2, 3), name, i) for i, name in enumerate(ALL_NP)}
    path = str(tmp_path / "all.safetensors")
    kn.save(path, {name: kn.asarray(a) for name, a in arrays.items()})
    loaded = kn.load(path)
    assert isinstance(loaded, dict)
    assert set(loaded) == set(arrays)
    for name, a in arrays.items():
        check(loaded[name], a, dtype=name)


def test_saved_file_is_standard_safetensors(tmp_path):
    arrays = {"w": sample((3, 4), "float32"), "b": sample((4,), "int64"), "s": np.array(2.5, np.float64),
              "e": np.zeros((0, 2), np.uint8)}
    path = str(tmp_path / "x.safetensors")
    kn.save(path, {k: kn.asarray(v) for k, v in arrays.items()})
    parsed = read_safetensors(path)
    assert set(parsed) == set(arrays)
    for name, a in arrays.items():
        code, shape, raw = parsed[name]
        assert code == SAFETENSORS_CODES[a.dtype.name]
        assert shape == a.shape
        np.testing.assert_array_equal(np.frombuffer(raw, a.dtype.newbyteorder("<")).reshape(shape), a)


def test_load_a_file_written_by_another_writer(tmp_path):
    arrays = {"layer.0.weight": sample((5, 2), "float16"), "mask": sample((7,), "bool"),
              "ids": sample((2, 2, 2), "uint32")}
    path = str(tmp_path / "other.safetensors")
    write_safetensors(path, arrays)
    loaded = kn.load(path)
    for name, a in arrays.items():
        check(loaded[name], a, dtype=a.dtype.name)


def test_bfloat16_safetensors_round_trip(tmp_path):
    x = kn.asarray([1.0, -2.5, 3.0e10], dtype=kn.bfloat16)
    path = str(tmp_path / "bf.safetensors")
    kn.save(path, {"x": x})
    assert read_safetensors(path)["x"][0] == "BF16"
    y = kn.load(path)["x"]
    assert y.dtype == kn.bfloat16
    check(y.astype(kn.float32), np.asarray(x.astype(kn.float32)))


def test_save_of_non_contiguous_results(tmp_path):
    a = sample((4, 6), "float64")
    path = str(tmp_path / "t.safetensors")
    kn.save(path, {"t": kn.asarray(a).T, "s": kn.asarray(a)[::2, ::-3]})
    loaded = kn.load(path)
    check(loaded["t"], a.T)
    check(loaded["s"], a[::2, ::-3])


def test_save_accepts_a_path_object(tmp_path):
    path = tmp_path / "p.safetensors"
    kn.save(path, {"a": kn.arange(3)})
    check(kn.load(path)["a"], np.arange(3, dtype=np.int32))


def test_load_missing_file(tmp_path):
    path = str(tmp_path / "missing.safetensors")
    with pytest.raises((OSError, kn.Error)) as info:
        kn.load(path)
    assert "missing.safetensors" in str(info.value)


@pytest.mark.parametrize("content", [b"", b"\x01\x02", b"\xff" * 8 + b"{}", struct.pack("<Q", 5) + b"nope!",
                                     struct.pack("<Q", 2) + b"{}" + b"junk",
                                     struct.pack("<Q", 56) + b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
                                     + b" " + b"\x00" * 8])
def test_load_corrupt_files_is_an_error(tmp_path, content):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises((ValueError, OSError, kn.Error)):
        loaded = kn.load(str(path))
        # a file whose header claims more data than it holds must not be read past its end
        for v in loaded.values():
            np.asarray(v).sum()


def test_save_refuses_what_is_not_a_dict_of_arrays(tmp_path):
    path = str(tmp_path / "bad.safetensors")
    with pytest.raises(TypeError):
        kn.save(path, [kn.zeros((2,))])
    with pytest.raises((TypeError, ValueError)):
        kn.save(path, {"a": object()})


# ---- .npy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NP)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4)])
def test_npy_round_trip_and_numpy_reads_it(tmp_path, name, shape):
    a = sample(shape, name, 3)
    path = str(tmp_path / "a.npy")
    kn.save_npy(path, kn.asarray(a))
    check(kn.load_npy(path), a, dtype=name)
    back = np.load(path)
    assert back.dtype == np.dtype(name)
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("name", ALL_NP)
def test_load_npy_written_by_numpy(tmp_path, name):
    a = sample((3, 5), name, 4)
    path = str(tmp_path / "np.npy")
    np.save(path, a)
    check(kn.load_npy(path), a, dtype=name)


@pytest.mark.parametrize("make", [
    lambda: np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
    lambda: np.arange(12, dtype=">i4").reshape(3, 4),
    lambda: np.arange(12, dtype=">f8").reshape(4, 3),
    lambda: np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],
])
def test_load_npy_fortran_and_big_endian(tmp_path, make):
    a = make()
    path = str(tmp_path / "odd.npy")
    np.save(path, a)
    got = kn.load_npy(path)
    np.testing.assert_array_equal(np.asarray(got), a)
    assert got.shape == a.shape


def test_npy_bfloat16_round_trip(tmp_path):
    x = kn.asarray([0.5, -1.25, 100.0], dtype=kn.bfloat16)
    path = str(tmp_path / "bf.npy")
    kn.save_npy(path, x)
    raw = np.load(path)
    assert raw.dtype.itemsize == 2 and raw.dtype.kind == "V"
    y = kn.load_npy(path)
    assert y.dtype == kn.bfloat16
    check(y.astype(kn.float32), np.array([0.5, -1.25, 100.0], np.float32))


def test_save_npy_of_a_transposed_result(tmp_path):
    a = sample((3, 4), "int32")
    path = str(tmp_path / "t.npy")
    kn.save_npy(path, kn.asarray(a).T)
    np.testing.assert_array_equal(np.load(path), a.T)


def test_load_npy_of_a_pickled_object_array_is_refused(tmp_path):
    path = str(tmp_path / "obj.npy")
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises((ValueError, TypeError, kn.Error)):
        kn.load_npy(path)


def test_load_npy_corrupt(tmp_path):
    path = tmp_path / "bad.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + b"\x10\x00" + b"{'descr': '<f4'," + b"junk")
    with pytest.raises((ValueError, OSError, kn.Error)):
        kn.load_npy(str(path))
    truncated = tmp_path / "short.npy"
    np.save(str(truncated), np.arange(100, dtype=np.float64))
    truncated.write_bytes(truncated.read_bytes()[:-16])
    with pytest.raises((ValueError, OSError, kn.Error)):
        kn.load_npy(str(truncated))


def test_load_npy_missing(tmp_path):
    with pytest.raises((OSError, kn.Error)) as info:
        kn.load_npy(str(tmp_path / "nothing.npy"))
    assert "nothing.npy" in str(info.value)


def test_io_dtype_names_match(tmp_path):
    for name in ALL_NP:
        path = str(tmp_path / f"{name}.npy")
        kn.save_npy(path, kn.zeros((1,), dtype=kd(name)))
        assert kn.load_npy(path).dtype == kd(name)
