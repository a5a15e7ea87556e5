"""Array API functions whose signatures differ from kiln's C++ ones, and the
few the standard asks for that kiln's C++ library builds from others. Each is
a composition of kiln operations (kiln's kernels, promotion and errors);
nothing here computes on the host except the sizes of data-dependent
results (nonzero, unique_*), which need one concrete value."""

from collections import namedtuple as _namedtuple

import numpy as _np

from . import _kiln
from ._array import cpu as _cpu
from ._kiln import Array as _Array

__all__ = [
    "unstack", "moveaxis", "array", "empty", "empty_like", "zeros_like", "ones_like", "reshape", "concat", "concatenate", "roll",
    "repeat", "split", "array_split", "pad", "flatten", "transpose", "matrix_transpose", "tensordot", "vecdot",
    "einsum", "dot", "clip", "round", "trunc", "signbit", "logical_xor", "positive",
    "cumulative_sum", "nonzero", "argwhere", "searchsorted", "unique_values", "unique_counts", "unique_inverse",
    "unique_all", "unique", "result_type", "can_cast", "finfo", "iinfo", "isdtype", "softmax", "log_softmax",
    "sigmoid", "relu", "one_hot",
]

softmax = _kiln.softmax
log_softmax = _kiln.log_softmax
sigmoid = _kiln.sigmoid
relu = _kiln.relu
one_hot = _kiln.one_hot


# ---- creation ---------------------------------------------------------------

def array(obj, dtype=None, *, copy=True, device=None):
    """NumPy's array: a copy unless copy=False (asarray's default is to share)."""
    return _kiln.asarray(obj, dtype=dtype, device=device, copy=copy)


def empty(shape, *, dtype=None, device=None):
    """Zeros: kiln never hands out uninitialized memory."""
    return _kiln.zeros(shape, dtype=dtype, device=device)


def zeros_like(x, /, *, dtype=None, device=None):
    x = _kiln.asarray(x)
    return _kiln.zeros(x.shape, dtype=x.dtype if dtype is None else dtype, device=device)


def ones_like(x, /, *, dtype=None, device=None):
    x = _kiln.asarray(x)
    return _kiln.ones(x.shape, dtype=x.dtype if dtype is None else dtype, device=device)


empty_like = zeros_like


# ---- shapes -------------------------------------------------------------------

def reshape(x, /, shape, *, copy=None):
    if isinstance(shape, int):
        shape = (shape,)
    return _kiln._reshape(x, shape)


def concat(arrays, /, *, axis=0):
    if axis is None:
        return _kiln._concat([_kiln.ravel(a) for a in arrays], 0)
    return _kiln._concat(arrays, axis)


def concatenate(arrays, axis=0):
    return concat(arrays, axis=axis)


def transpose(x, axes=None):
    return _kiln.permute_dims(x, axes)


def unstack(x, /, *, axis=0):
    x = _kiln.asarray(x)
    if x.ndim and x.shape[axis] == 0:
        return ()
    return tuple(_kiln.unstack(x, axis=axis))


def moveaxis(x, source, destination, /):
    if isinstance(source, int) and isinstance(destination, int):
        return _kiln.moveaxis(x, source, destination)
    x = _kiln.asarray(x)
    source = [s % x.ndim for s in ([source] if isinstance(source, int) else source)]
    destination = [d % x.ndim for d in ([destination] if isinstance(destination, int) else destination)]
    if len(source) != len(destination):
        raise ValueError("moveaxis: source and destination must have the same number of axes, got %r and %r"
                         % (source, destination) + _kiln._at())
    order = [axis for axis in range(x.ndim) if axis not in source]
    for d, s in sorted(zip(destination, source)):
        order.insert(d, s)
    return _kiln.permute_dims(x, order)


def matrix_transpose(x, /):
    return _kiln.swapaxes(x, -1, -2)


def flatten(x):
    return _kiln.ravel(x)


def roll(x, /, shift, *, axis=None):
    if isinstance(shift, (tuple, list)):
        axes = axis if isinstance(axis, (tuple, list)) else [axis] * len(shift)
        if len(axes) != len(shift):
            raise ValueError("roll: shift and axis must have the same length, got %r and %r" % (shift, axis) + _kiln._at())
        for s, a in zip(shift, axes):
            x = _kiln._roll(x, int(s), a)
        return x
    if isinstance(axis, (tuple, list)):
        for a in axis:
            x = _kiln._roll(x, int(shift), a)
        return x
    return _kiln._roll(x, int(shift), axis)


def repeat(x, repeats, /, *, axis=None):
    if isinstance(repeats, int):
        return _kiln._repeat(x, repeats, axis)
    # One count per element: the result's length is the counts' sum, read once.
    x = _kiln.asarray(x)
    counts = _np.asarray(_kiln.asarray(repeats)).astype(_np.int64)
    if axis is None:
        x, axis = _kiln.ravel(x), 0
    positions = _np.repeat(_np.arange(x.shape[axis]), _np.broadcast_to(counts, (x.shape[axis],)))
    return _kiln.take(x, _kiln.asarray(positions.astype(_np.int32)), axis=axis)


def split(x, indices_or_sections, axis=0):
    if isinstance(indices_or_sections, int):
        return _kiln._split_sections(x, indices_or_sections, axis)
    return _kiln._split_indices(x, list(indices_or_sections), axis)


def array_split(x, indices_or_sections, axis=0):
    x = _kiln.asarray(x)
    if isinstance(indices_or_sections, int):
        extent, parts = x.shape[axis], indices_or_sections
        sizes = [extent // parts + (1 if k < extent % parts else 0) for k in range(parts)]
        indices_or_sections = list(_np.cumsum(sizes)[:-1])
    return _kiln._split_indices(x, [int(i) for i in indices_or_sections], axis)


def pad(x, pad_width, mode="constant", constant_values=0):
    if mode != "constant":
        raise ValueError("pad: kiln pads with a constant (mode='constant'), got mode=%r" % (mode,) + _kiln._at())
    x = _kiln.asarray(x)
    widths = _np.broadcast_to(_np.asarray(pad_width, dtype=_np.int64).reshape(-1, 2) if _np.ndim(pad_width) else
                              _np.asarray([[pad_width, pad_width]]), (x.ndim, 2))
    return _kiln._pad(x, [int(w) for w in widths[:, 0]], [int(w) for w in widths[:, 1]], constant_values)


# ---- products -----------------------------------------------------------------

def tensordot(x1, x2, /, *, axes=2):
    return _kiln._tensordot(x1, x2, axes)


def vecdot(x1, x2, /, *, axis=-1):
    product = _kiln.multiply(_kiln.conj(x1), x2)
    return _kiln.sum(product, axis=axis, dtype=product.dtype)


def einsum(subscripts, *operands):
    return _kiln._einsum(subscripts, *operands)


def dot(a, b):
    a, b = _kiln.asarray(a), _kiln.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return _kiln.multiply(a, b)
    return _kiln.matmul(a, b) if b.ndim <= 2 else _kiln._tensordot(a, b, ([-1], [-2]))


# ---- elementwise -------------------------------------------------------------

def clip(x, /, min=None, max=None):
    """The result keeps x's dtype (the Array API's), whatever min and max are."""
    x = _kiln.asarray(x)
    result = _clip_promoted(x, min, max)
    return result if result.dtype == x.dtype else _kiln.astype(result, x.dtype)


def _clip_promoted(x, min, max):
    if min is not None and max is not None:
        return _kiln._clip(x, min, max)
    if min is not None:
        x = _kiln.where(_kiln.isnan(x), x, _kiln.maximum(x, min)) if _kiln._is_floating(x.dtype) else _kiln.maximum(x, min)
    if max is not None:
        x = _kiln.where(_kiln.isnan(x), x, _kiln.minimum(x, max)) if _kiln._is_floating(x.dtype) else _kiln.minimum(x, max)
    return x


def round(x, /, decimals=0):
    if decimals == 0:
        return _kiln._round(x)
    scale = 10.0 ** decimals
    return _kiln.divide(_kiln._round(_kiln.multiply(x, scale)), scale)


def trunc(x, /):
    x = _kiln.asarray(x)
    if not _kiln._is_floating(x.dtype):
        return x
    return _kiln.where(_kiln.less(x, 0), _kiln.ceil(x), _kiln.floor(x))


def signbit(x, /):
    x = _kiln.asarray(x)
    if not _kiln._is_floating(x.dtype):
        return _kiln.less(x, 0)
    return _kiln.less(_kiln.copysign(1.0, x), 0)


def logical_xor(x1, x2, /):
    return _kiln.not_equal(_kiln.astype(x1, _kiln.bool_), _kiln.astype(x2, _kiln.bool_))


def positive(x, /):
    return _kiln.asarray(x)


# ---- statistics ---------------------------------------------------------------

def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    x = _kiln.asarray(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError("cumulative_sum: axis is required for an array of %d dimensions" % x.ndim + _kiln._at())
        axis = 0
    result = _kiln.cumsum(x, axis, dtype=dtype)
    if include_initial:
        axis = axis % result.ndim
        lo = [0] * result.ndim
        lo[axis] = 1
        result = _kiln._pad(result, lo, [0] * result.ndim, 0)
    return result


# ---- data-dependent shapes (eager only: the size is read once) ---------------

def _count(mask):
    return int(_kiln.sum(_kiln.astype(mask, _kiln.int32)))


def _first_true(mask, count):
    """Positions of the true entries of a 1-d mask, in order."""
    order = _kiln.argsort(_kiln.astype(_kiln.logical_not(mask), _kiln.int8), stable=True)
    return order[:count]


def nonzero(x, /):
    x = _kiln.asarray(x)
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no axes to index; use kn.atleast_1d(x) first" + _kiln._at())
    mask = _kiln.ravel(_kiln.not_equal(x, 0))
    flat = _first_true(mask, _count(mask))
    coordinates = []
    for extent in reversed(x.shape):
        coordinates.append(_kiln.remainder(flat, extent))
        flat = _kiln.floor_divide(flat, extent)
    return tuple(reversed(coordinates))


def argwhere(x, /):
    return _kiln.stack(list(nonzero(x)), axis=-1)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    x1, x2 = _kiln.asarray(x1), _kiln.asarray(x2)
    if sorter is not None:
        x1 = _kiln.take(x1, sorter)
    if side not in ("left", "right"):
        raise ValueError("searchsorted: side must be 'left' or 'right', got %r" % (side,) + _kiln._at())
    below = _kiln.less if side == "left" else _kiln.less_equal
    return _kiln.sum(_kiln.astype(below(x1, _kiln.expand_dims(x2, -1)), _kiln.int32), axis=-1)


def _sorted_groups(x):
    flat = _kiln.ravel(_kiln.asarray(x))
    order = _kiln.argsort(flat, stable=True)
    ordered = _kiln.take(flat, order)
    if flat.size == 0:
        return flat, order, ordered, ordered.astype(_kiln.bool_), 0
    # Each NaN is its own group, as the standard asks (NaN != NaN).
    starts = _kiln._concat([_kiln.full((1,), True), _kiln.not_equal(ordered[1:], ordered[:-1])], 0)
    return flat, order, ordered, starts, _count(starts)


UniqueAllResult = _namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = _namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = _namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def unique_values(x, /):
    _, _, ordered, starts, count = _sorted_groups(x)
    return _kiln.take(ordered, _first_true(starts, count)) if count else ordered


def _unique_parts(x):
    x = _kiln.asarray(x)
    flat, order, ordered, starts, count = _sorted_groups(x)
    if count == 0:
        empty_index = _kiln.zeros((0,), dtype=_kiln.int32)
        return ordered, empty_index, _kiln._reshape(empty_index, list(x.shape)), empty_index
    positions = _first_true(starts, count)
    values = _kiln.take(ordered, positions)
    ends = _kiln._concat([positions[1:], _kiln.full((1,), flat.size, dtype=positions.dtype)], 0)
    counts = _kiln.subtract(ends, positions)
    group = _kiln.subtract(_kiln.cumsum(_kiln.astype(starts, _kiln.int32)), 1)
    inverse = _kiln.zeros((flat.size,), dtype=_kiln.int32).at[order].set(group)
    return values, _kiln.take(order, positions), _kiln._reshape(inverse, list(x.shape)), counts


def unique_all(x, /):
    return UniqueAllResult(*_unique_parts(x))


def unique_counts(x, /):
    values, _, _, counts = _unique_parts(x)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    values, _, inverse, _ = _unique_parts(x)
    return UniqueInverseResult(values, inverse)


def unique(x, return_index=False, return_inverse=False, return_counts=False):
    values, index, inverse, counts = _unique_parts(x)
    extra = [part for part, wanted in ((index, return_index), (inverse, return_inverse), (counts, return_counts)) if wanted]
    return (values, *extra) if extra else values


# ---- data types ---------------------------------------------------------------

def _as_dtype(value):
    if isinstance(value, _Array):
        return value.dtype
    return _kiln.asarray(0, dtype=value).dtype


def result_type(*arrays_and_dtypes):
    """The dtype kiln's promotion gives, found by kiln itself on empty arrays."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: needs at least one array or dtype" + _kiln._at())
    operands = []
    for item in arrays_and_dtypes:
        if isinstance(item, (bool, int, float)):
            operands.append(item)
        elif isinstance(item, _Array):
            operands.append(_kiln.zeros((0,), dtype=item.dtype) if not item.weak_type else item)
        else:
            operands.append(_kiln.zeros((0,), dtype=_as_dtype(item)))
    if all(isinstance(o, (bool, int, float)) for o in operands):
        raise ValueError("result_type: needs at least one array or dtype besides Python numbers" + _kiln._at())
    result = operands[0]
    for operand in operands[1:]:
        result = _promote(result, operand)
    return result.dtype if isinstance(result, _Array) else _kiln.asarray(result).dtype


def _promote(a, b):
    if isinstance(a, _Array) and a.dtype == _kiln.bool_ and isinstance(b, _Array) and b.dtype == _kiln.bool_:
        return a
    if isinstance(a, _Array) and isinstance(b, _Array) and a.dtype == b.dtype:
        return a
    # where(True, a, b) promotes a and b as every binary operation does, for any dtypes.
    return _kiln.where(True, a, b)


def can_cast(from_, to, /):
    return result_type(_as_dtype(from_), to) == to


class finfo:
    """Machine limits of a floating dtype (the Array API's finfo_object)."""

    def __init__(self, type):
        self.dtype = _as_dtype(type)
        if self.dtype == _kiln.bfloat16:
            self.bits, self.eps, self.max = 16, 2.0 ** -7, 3.3895313892515355e38
            self.min, self.smallest_normal = -self.max, 2.0 ** -126
            self.resolution = 0.01
            return
        if _kiln._is_complex(self.dtype):  # the limits of its parts, as the standard says
            self.dtype = _kiln.float32 if self.dtype == _kiln.complex64 else _kiln.float64
        if not _kiln._is_floating(self.dtype):
            raise ValueError("finfo: %s is not a floating dtype; use kn.iinfo for integers" % self.dtype + _kiln._at())
        info = _np.finfo(_np.dtype(self.dtype.name))
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(info.resolution)

    def __repr__(self):
        return "finfo(dtype=%s, bits=%d, eps=%g, max=%g)" % (self.dtype, self.bits, self.eps, self.max)


class iinfo:
    """Limits of an integer dtype (the Array API's iinfo_object)."""

    def __init__(self, type):
        self.dtype = _as_dtype(type)
        if not _kiln._is_integer(self.dtype):
            raise ValueError("iinfo: %s is not an integer dtype; use kn.finfo for floats" % self.dtype + _kiln._at())
        info = _np.iinfo(_np.dtype(self.dtype.name))
        self.bits, self.min, self.max = int(info.bits), int(info.min), int(info.max)

    def __repr__(self):
        return "iinfo(dtype=%s, bits=%d, min=%d, max=%d)" % (self.dtype, self.bits, self.min, self.max)


_KINDS = {
    "bool": lambda d: d == _kiln.bool_,
    "signed integer": lambda d: _kiln._is_integer(d) and not _kiln._is_unsigned(d),
    "unsigned integer": lambda d: _kiln._is_unsigned(d),
    "integral": lambda d: _kiln._is_integer(d),
    "real floating": lambda d: _kiln._is_floating(d),
    "complex floating": lambda d: d.name.startswith("complex"),
    "numeric": lambda d: d != _kiln.bool_,
}


def isdtype(dtype, kind):
    if not isinstance(dtype, _kiln.DType):
        raise TypeError("isdtype: expected a kiln dtype, got %r" % (dtype,) + _kiln._at())
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _kiln.DType):
        return dtype == kind
    if kind not in _KINDS:
        raise ValueError("isdtype: unknown kind %r; kinds are %s" % (kind, ", ".join(sorted(_KINDS))) + _kiln._at())
    return bool(_KINDS[kind](dtype))


# ---- inspection ---------------------------------------------------------------

class _Info:
    """What this namespace supports (the Array API's inspection namespace)."""

    def capabilities(self):
        return {"boolean indexing": False, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return _cpu

    def devices(self):
        return [_cpu]

    def default_dtypes(self, *, device=None):
        return {"real floating": _kiln.float32, "complex floating": getattr(_kiln, "complex64", None),
                "integral": _kiln.int32, "indexing": _kiln.int32}

    def dtypes(self, *, device=None, kind=None):
        every = [getattr(_kiln, name) for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                                   "uint32", "uint64", "float16", "bfloat16", "float32", "float64",
                                                   "complex64", "complex128") if hasattr(_kiln, name)]
        if kind is not None:
            every = [d for d in every if isdtype(d, kind)]
        return {d.name: d for d in every}


def __array_namespace_info__():
    return _Info()
