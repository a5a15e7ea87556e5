"""The parts of kn.Array that read best in Python: repr, NumPy conversion,
x.at[...], the device, and NumPy-style methods that call the namespace's
functions (each one is kiln's C++ operation)."""

import numpy as _np

from . import _kiln
from ._kiln import Array


class Device:
    """The device a kiln array lives on: cpu, or cuda (an NVIDIA GPU, where a
    function jitted with device="cuda" leaves its results)."""

    __slots__ = ("kind",)

    def __init__(self, kind="cpu"):
        self.kind = kind

    def __repr__(self):
        return self.kind

    def __eq__(self, other):
        return str(other) == self.kind

    def __hash__(self):
        return hash(self.kind)


cpu = Device("cpu")
cuda = Device("cuda")


def _host(x):
    """A NumPy view of x's buffer (bfloat16, which NumPy lacks, as a float32 copy)."""
    x._require_concrete("np.asarray")
    if x.dtype == _kiln.bfloat16:
        x = _kiln.astype(x, _kiln.float32)
    return _np.asarray(memoryview(x))


def _array(self, dtype=None, copy=None):
    value = _host(self)
    if dtype is not None and _np.dtype(dtype) != value.dtype:
        return value.astype(dtype)
    if copy:
        return value.copy()
    return value


def _repr(self):
    if self._is_tracer:
        return "Traced<%s%s>" % (self.dtype, list(self.shape))
    value = _host(self)
    body = _np.array2string(value, separator=", ", prefix="Array(", threshold=1000)
    weak = ", weak_type=True" if self.weak_type else ""
    return "Array(%s, dtype=%s%s)" % (body, self.dtype, weak)


def _str(self):
    if self._is_tracer:
        return _repr(self)
    return str(_host(self))


def _namespace(self, /, *, api_version=None):
    if api_version not in (None, "2021.12", "2022.12", "2023.12"):
        raise ValueError("kiln implements the Array API standard 2023.12 (and its earlier versions), not %r"
                         % (api_version,))
    return __import__("kiln")


def _tolist(self):
    return _host(self).tolist()


def _complex(self):
    return complex(self.item())


class _IndexUpdate:
    __slots__ = ("array", "key")

    def __init__(self, array, key):
        self.array = array
        self.key = key

    def get(self):
        return _kiln._index_update(self.array, self.key, "get", None)

    def set(self, values):
        return _kiln._index_update(self.array, self.key, "set", values)

    def add(self, values):
        return _kiln._index_update(self.array, self.key, "add", values)

    def multiply(self, values):
        return _kiln._index_update(self.array, self.key, "mul", values)

    mul = multiply

    def max(self, values):
        return _kiln._index_update(self.array, self.key, "max", values)

    def min(self, values):
        return _kiln._index_update(self.array, self.key, "min", values)


class _IndexUpdateHelper:
    """x.at[key] (JAX's): the update of what x[key] selects, as a new array."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, key):
        return _IndexUpdate(self.array, key)


def _shape_arguments(shape):
    if len(shape) == 1 and not isinstance(shape[0], int):
        return shape[0]
    return shape


def _reshape(self, *shape, copy=None):
    from . import _api

    return _api.reshape(self, _shape_arguments(shape), copy=copy)


def _transpose(self, *axes):
    axes = _shape_arguments(axes) if axes else None
    return _kiln.permute_dims(self, axes)


def _method(name):
    def method(self, *args, **kwargs):
        import kiln

        return getattr(kiln, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


Array.__array__ = _array
Array.__repr__ = _repr
Array.tolist = _tolist
Array.__complex__ = _complex
Array.at = property(_IndexUpdateHelper)
Array.device = property(lambda self: cpu if self._device_name == "cpu" else Device(self._device_name))
Array.to_device = lambda self, device, /, *, stream=None: self._to_device(str(device))
Array.__str__ = _str
Array.__array_namespace__ = _namespace
Array.reshape = _reshape
Array.transpose = _transpose
Array.copy = lambda self: _kiln.asarray(self, copy=True)
for _name in ("sum", "prod", "mean", "max", "min", "any", "all", "var", "std", "argmax", "argmin", "cumsum",
              "cumprod", "ravel", "squeeze", "clip", "round", "take", "repeat", "swapaxes", "flatten", "conj",
              "dot", "sort", "argsort", "diagonal", "trace", "nonzero"):
    setattr(Array, _name, _method(_name))
