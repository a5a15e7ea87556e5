"""kiln: arrays and a tracing JIT compiler whose cache compiles once, never
runs stale code, and explains every compile.

    import kiln as kn
    x = kn.asarray([1.0, 2.0, 3.0])
    y = kn.tanh(x * 2.0) + 1          # x is float32; 2.0 and 1 stay weakly typed

The top-level namespace is an Array API standard (2023.12) namespace, with
NumPy's names where the standard is silent. Every operation is kiln's C++
one: shapes, promotion, broadcasting, errors and kernels are the same, and
errors name the line of your Python code that called kiln.
"""

import math as _math
import os as _os

from . import _kiln

# Frames in this package's files are kiln's own: errors and graphs name the
# first frame outside them, the user's.
_kiln._set_package_folder(_os.path.dirname(__file__) + _os.sep)

from ._kiln import (  # noqa: E402
    Array,
    DType,
    Error,
    ConcretizationError,
    LeakedTracerError,
    DonatedArrayError,
    StormError,
    AllocationError,
    bool_,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
    complex128,
    asarray,
    from_dlpack,
    astype,
    # creation
    zeros,
    ones,
    full,
    full_like,
    arange,
    linspace,
    eye,
    tri,
    # elementwise
    add,
    subtract,
    multiply,
    divide,
    pow,
    maximum,
    minimum,
    equal,
    not_equal,
    less,
    less_equal,
    greater,
    greater_equal,
    logical_and,
    logical_or,
    logical_not,
    arctan2,
    floor_divide,
    remainder,
    copysign,
    nextafter,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    bitwise_not,
    left_shift,
    right_shift,
    logaddexp,
    hypot,
    divmod,
    negative,
    abs,
    sign,
    exp,
    exp2,
    log,
    log2,
    log10,
    log1p,
    expm1,
    sqrt,
    rsqrt,
    square,
    tanh,
    erf,
    erfinv,
    sin,
    cos,
    tan,
    sinh,
    cosh,
    arcsin,
    arccos,
    arctan,
    arcsinh,
    arccosh,
    arctanh,
    floor,
    ceil,
    isnan,
    isinf,
    isfinite,
    reciprocal,
    degrees,
    radians,
    stop_gradient,
    conj,
    real,
    imag,
    angle,
    where,
    nan_to_num,
    isclose,
    allclose,
    array_equal,
    # reductions, scans, sorting
    sum,
    prod,
    mean,
    max,
    min,
    any,
    all,
    var,
    std,
    argmax,
    argmin,
    logsumexp,
    count_nonzero,
    median,
    quantile,
    cumsum,
    cumprod,
    cummax,
    cummin,
    sort,
    argsort,
    top_k,
    partition,
    argpartition,
    # shapes, gathers, products
    permute_dims,
    broadcast_to,
    expand_dims,
    squeeze,
    stack,
    flip,
    moveaxis,
    swapaxes,
    tile,
    unstack,
    tril,
    triu,
    ravel,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    pad_to_bucket,
    broadcast_arrays,
    meshgrid,
    diagonal,
    trace,
    diag,
    take,
    take_along_axis,
    put_along_axis,
    gather,
    scatter,
    scatter_add,
    scatter_mul,
    scatter_max,
    scatter_min,
    dynamic_slice,
    dynamic_update_slice,
    matmul,
    outer,
    inner,
    kron,
    cross,
    save,
    load,
    save_npy,
    load_npy,
)
from ._array import Device as _Device  # noqa: E402,F401  (adds the Python-side methods of Array)
from ._api import *  # noqa: E402,F401,F403
from ._api import __array_namespace_info__  # noqa: E402,F401
from . import fft, linalg, nn, random  # noqa: E402,F401
from ._tree import (  # noqa: E402,F401
    TreeDef,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from ._jit import jit  # noqa: E402,F401
from ._transforms import (  # noqa: E402,F401
    grad,
    value_and_grad,
    vjp,
    jvp,
    vmap,
    jacfwd,
    jacrev,
    hessian,
)
from ._control import while_loop, cond, switch, fori_loop, scan  # noqa: E402,F401
from . import distributed, telemetry  # noqa: E402,F401
from ._kiln import CacheStats, Graph, global_cache_stats, clear_graph_cache, wait_for_background_compiles  # noqa: E402,F401
from ._kiln import synchronize  # noqa: E402,F401

__version__ = "0.1.0"
__array_api_version__ = "2023.12"

bool = bool_  # the Array API's name; kn.bool_ is NumPy's
e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None

# The Array API's names for what NumPy calls otherwise, and NumPy's aliases.
acos = arccos
acosh = arccosh
asin = arcsin
asinh = arcsinh
atan = arctan
atan2 = arctan2
atanh = arctanh
bitwise_invert = bitwise_not
invert = bitwise_not
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift
absolute = abs
power = pow
true_divide = divide
mod = remainder
transpose = permute_dims
