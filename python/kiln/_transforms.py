"""grad, value_and_grad, vjp, jvp, vmap, jacfwd, jacrev and hessian.

Each one flattens its pytrees here and hands a flat function (a list of
arrays in, a list of arrays out) to the same C++ transformations C++ users
call: one set of derivative and batching rules. Outside a trace each runs
through kn.jit's caches, as in C++.
"""

import functools as _functools
import operator as _operator

import kiln as _kn

from . import _kiln
from ._jit import Jitted, jit, _NUMBERS, _at, _function_name, _output_leaves, _short, _tracing_active
from ._tree import tree_flatten, tree_paths

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "vmap", "jacfwd", "jacrev", "hessian"]

Array = _kiln.Array


# ---- derivatives ----------------------------------------------------------------------------


def _through_jit(transformed, name):
    """Called outside any trace, a transformed function runs through jit's
    caches (a loop compiles once); inside a trace it becomes part of it. Its
    non-array arguments stay Python values, as they would without jit."""
    jitted = Jitted(transformed, {**jit.__kwdefaults__, "name": name}, numbers_static=True)

    @_functools.wraps(transformed)
    def call(*args, **kwargs):
        if _tracing_active():
            return transformed(*args, **kwargs)
        return jitted(*args, **kwargs)

    return call


def _is_index(value):
    try:
        _operator.index(value)
        return True
    except TypeError:
        return False


def _normalize_argnums(argnums, arity, what):
    if _is_index(argnums):
        nums = (_operator.index(argnums),)
    else:
        try:
            nums = tuple(_operator.index(i) for i in argnums)
        except TypeError:
            raise TypeError(f"{what}: argnums must be an int or a sequence of ints, got {_short(argnums)}{_at()}") from None
    if not nums:
        raise ValueError(f"{what}: argnums is empty; name at least one argument to differentiate{_at()}")
    normalized = []
    for i in nums:
        j = i + arity if i < 0 else i
        if not 0 <= j < arity:
            raise ValueError(
                f"{what}: argnums names argument {i}, but the call has {arity} positional argument"
                f"{'s' if arity != 1 else ''}{_at()}"
            )
        if j in normalized:
            raise ValueError(f"{what}: argnums names argument {i} twice{_at()}")
        normalized.append(j)
    return normalized


def _differentiable_leaves(value, what):
    leaves, treedef = tree_flatten(value)
    arrays = []
    for path, leaf in zip(tree_paths(treedef, what), leaves):
        if type(leaf) is Array:
            arrays.append(leaf)
        elif isinstance(leaf, (int, float, complex)) or hasattr(leaf, "__array_interface__"):
            arrays.append(_kn.asarray(leaf))
        else:
            raise TypeError(
                f"{path} is {type(leaf).__name__} {_short(leaf)}: only arrays and numbers can be differentiated "
                f"(leave it out of argnums){_at()}"
            )
    return arrays, treedef


class _Substitution:
    """The call's arguments with the differentiated ones rebuilt from flat leaves."""

    def __init__(self, args, argnums, what):
        self.args = list(args)
        self.argnums = argnums
        self.defs = []
        self.leaves = []
        self.counts = []
        for i in argnums:
            arrays, treedef = _differentiable_leaves(args[i], f"argument {i}")
            self.defs.append(treedef)
            self.leaves.extend(arrays)
            self.counts.append(len(arrays))

    def split(self, flat):
        parts = []
        start = 0
        for treedef, count in zip(self.defs, self.counts):
            parts.append(treedef.unflatten(flat[start : start + count]))
            start += count
        return parts

    def rebuild(self, flat):
        args = list(self.args)
        for i, part in zip(self.argnums, self.split(flat)):
            args[i] = part
        return args


def _scalar_output(out, what):
    if type(out) is not Array:
        if isinstance(out, (float, int)):
            out = _kn.asarray(out)
        else:
            raise TypeError(
                f"{what} must return a scalar array (or (scalar, aux) with has_aux=True), got "
                f"{type(out).__name__} {_short(out)}{_at()}"
            )
    return out


def _split_aux(out, has_aux, what):
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            f"{what} has has_aux=True, so the function must return (output, aux), got "
            f"{type(out).__name__} {_short(out)}{_at()}"
        )
    return out[0], out[1]


def value_and_grad(fun, argnums=0, has_aux=False):
    """(fun(*args), the gradient of fun with respect to args[argnums]); fun
    returns a floating scalar (or (scalar, aux) with has_aux)."""
    name = f"value_and_grad({_function_name(fun)})"
    single = _is_index(argnums)

    def traced(*args, **kwargs):
        nums = _normalize_argnums(argnums, len(args), name)
        substitution = _Substitution(args, nums, name)
        aux_def = []

        def flat(leaves):
            out, aux = _split_aux(fun(*substitution.rebuild(leaves), **kwargs), has_aux, name)
            out = _scalar_output(out, name)
            if not has_aux:
                return [out]
            aux_leaves, treedef = _output_leaves(aux, f"{name}'s aux")
            aux_def.append(treedef)
            return [out] + aux_leaves

        outputs, cotangents = _kiln._differentiate(flat, substitution.leaves, [True] * len(substitution.leaves), name)
        grads = substitution.split(cotangents)
        grads = grads[0] if single else tuple(grads)
        if has_aux:
            return (outputs[0], aux_def[-1].unflatten(outputs[1:])), grads
        return outputs[0], grads

    return _through_jit(traced, name)


def grad(fun, argnums=0, has_aux=False):
    """The gradient of a scalar function with respect to args[argnums] (a
    tuple of gradients for a tuple of argnums), shaped like those arguments."""
    value_and_gradient = value_and_grad(fun, argnums, has_aux)

    @_functools.wraps(fun)
    def gradient(*args, **kwargs):
        value, grads = value_and_gradient(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return gradient


def vjp(fun, *primals, has_aux=False):
    """(fun(*primals), vjp_fn): vjp_fn(cotangent) returns one cotangent per primal."""
    name = f"vjp({_function_name(fun)})"
    substitution = _Substitution(primals, list(range(len(primals))), name)
    shapes = {}

    def flat(leaves):
        out, aux = _split_aux(fun(*substitution.rebuild(leaves)), has_aux, name)
        out_leaves, out_def = _output_leaves(out, name)
        shapes["out"] = out_def
        shapes["count"] = len(out_leaves)
        if has_aux:
            aux_leaves, aux_def = _output_leaves(aux, f"{name}'s aux")
            shapes["aux"] = aux_def
            out_leaves = out_leaves + aux_leaves
        return out_leaves

    outputs, pullback = _kiln._vjp(flat, substitution.leaves, name)
    out_def, count = shapes["out"], shapes["count"]
    primal_out = out_def.unflatten(outputs[:count])
    aux_outputs = outputs[count:]

    def vjp_fn(cotangent):
        leaves, treedef = tree_flatten(cotangent)
        if treedef != out_def:
            raise TypeError(
                f"{name}: the cotangent has structure {treedef!r}, but the function's output has {out_def!r}; "
                f"pass one cotangent shaped like the output{_at()}"
            )
        leaves = [leaf if type(leaf) is Array else _kn.asarray(leaf) for leaf in leaves]
        leaves += [_kn.zeros_like(a) for a in aux_outputs]
        return tuple(substitution.split(pullback(leaves)))

    if has_aux:
        return primal_out, vjp_fn, shapes["aux"].unflatten(aux_outputs)
    return primal_out, vjp_fn


def jvp(fun, primals, tangents, has_aux=False):
    """(fun(*primals), its derivative along `tangents`): forward mode."""
    name = f"jvp({_function_name(fun)})"
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TypeError(f"{name}: {len(primals)} primals but {len(tangents)} tangents; pass one tangent per primal{_at()}")
    substitution = _Substitution(primals, list(range(len(primals))), name)
    tangent_leaves = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        leaves, treedef = _differentiable_leaves(t, f"tangent {i}")
        if treedef != substitution.defs[i]:
            raise TypeError(
                f"{name}: tangent {i} has structure {treedef!r}, but primal {i} has {substitution.defs[i]!r}{_at()}"
            )
        tangent_leaves.extend(leaves)
    shapes = {}

    def flat(leaves):
        out, aux = _split_aux(fun(*substitution.rebuild(leaves)), has_aux, name)
        out_leaves, shapes["out"] = _output_leaves(out, name)
        shapes["count"] = len(out_leaves)
        if has_aux:
            aux_leaves, shapes["aux"] = _output_leaves(aux, f"{name}'s aux")
            out_leaves = out_leaves + aux_leaves
        return out_leaves

    outputs, output_tangents = _kiln._jvp(flat, substitution.leaves, tangent_leaves, name)
    out_def, count = shapes["out"], shapes["count"]
    result = (out_def.unflatten(outputs[:count]), out_def.unflatten(output_tangents[:count]))
    if has_aux:
        return result + (shapes["aux"].unflatten(outputs[count:]),)
    return result


# ---- vmap -----------------------------------------------------------------------------------


def _none_is_leaf(x):
    return x is None


def _axes_per_leaf(axes, treedef, what):
    """One axis (or None) per leaf of a tree of structure `treedef`, from
    `axes`: an int or None for every leaf, or a tree that is a prefix of it."""
    if axes is None or isinstance(axes, int):
        return [axes] * treedef.num_leaves
    axis_leaves, axis_def = tree_flatten(axes, is_leaf=_none_is_leaf)
    result = []

    def walk(axis_node, tree_node, axis_iter):
        if axis_node.kind == "leaf":
            axis = next(axis_iter)
            result.extend([axis] * tree_node.num_leaves)
            return
        if axis_node.kind != tree_node.kind or axis_node.data != tree_node.data or len(axis_node.children) != len(
            tree_node.children
        ):
            raise ValueError(
                f"vmap: {what} has structure {axis_def!r}, which is not a prefix of the value's structure "
                f"{treedef!r}{_at()}"
            )
        for a, t in zip(axis_node.children, tree_node.children):
            walk(a, t, axis_iter)

    walk(axis_def, treedef, iter(axis_leaves))
    for axis in result:
        if axis is not None and not isinstance(axis, int):
            raise TypeError(f"vmap: {what} holds {_short(axis)}; each axis is an int or None{_at()}")
    return result


def vmap(fun, in_axes=0, out_axes=0):
    """fun mapped over an axis of its arguments: in_axes is an int or None
    for every argument, or one entry per argument (an int, None, or a pytree
    prefix of that argument); out_axes likewise for the result."""
    name = f"vmap({_function_name(fun)})"

    def traced(*args, **kwargs):
        if isinstance(in_axes, (list, tuple)):
            if len(in_axes) != len(args):
                raise ValueError(
                    f"{name}: in_axes lists {len(in_axes)} entries for {len(args)} positional arguments; give one "
                    f"per argument{_at()}"
                )
            per_argument = list(in_axes)
        elif in_axes is None or isinstance(in_axes, int):
            per_argument = [in_axes] * len(args)
        else:
            raise TypeError(f"{name}: in_axes must be an int, None, a list or a tuple, got {_short(in_axes)}{_at()}")
        arrays, axes, slots = [], [], []
        all_leaves, defs = [], []
        for i, (a, axis) in enumerate(zip(list(args) + list(kwargs.values()), per_argument + [0] * len(kwargs))):
            leaves, treedef = tree_flatten(a)
            defs.append(treedef)
            leaf_axes = _axes_per_leaf(axis, treedef, f"in_axes[{i}]")
            for path, leaf, leaf_axis in zip(tree_paths(treedef, f"argument {i}"), leaves, leaf_axes):
                if type(leaf) is not Array and leaf_axis is not None:
                    if isinstance(leaf, _NUMBERS) or hasattr(leaf, "__array_interface__"):
                        leaf = _kn.asarray(leaf)
                    else:
                        raise TypeError(
                            f"{name}: {path} is {type(leaf).__name__} {_short(leaf)}, which has no axis to map "
                            f"over; give it in_axes None{_at()}"
                        )
                if type(leaf) is Array:
                    slots.append(len(arrays))
                    arrays.append(leaf)
                    axes.append(leaf_axis)
                else:
                    slots.append(-1)
                all_leaves.append(leaf)
        out_def = []

        def lane(placeholders):
            rebuilt = [placeholders[s] if s >= 0 else leaf for leaf, s in zip(all_leaves, slots)]
            values, start = [], 0
            for treedef in defs:
                values.append(treedef.unflatten(rebuilt[start : start + treedef.num_leaves]))
                start += treedef.num_leaves
            lane_args = values[: len(args)]
            lane_kwargs = dict(zip(kwargs.keys(), values[len(args) :]))
            out_leaves, treedef = _output_leaves(fun(*lane_args, **lane_kwargs), name)
            out_def.append(treedef)
            return out_leaves, _axes_per_leaf(out_axes, treedef, "out_axes")

        outputs = _kiln._vmap(lane, arrays, axes, name)
        return out_def[-1].unflatten(outputs)

    return _through_jit(traced, name)


# ---- Jacobians ------------------------------------------------------------------------------


def _basis(x):
    """[x.size, *x.shape]: row k is 1 at element k and 0 elsewhere."""
    return _kn.reshape(_kn.eye(x.size, dtype=x.dtype), (x.size,) + tuple(x.shape))


def jacrev(fun, argnums=0, has_aux=False):
    """The Jacobian by reverse mode: one vjp per output element, batched.
    Each output leaf holds, per differentiated input leaf, an array shaped
    [*output.shape, *input.shape]."""
    name = f"jacrev({_function_name(fun)})"
    single = _is_index(argnums)

    def traced(*args, **kwargs):
        nums = _normalize_argnums(argnums, len(args), name)

        def of_primals(*primals):
            call = list(args)
            for i, p in zip(nums, primals):
                call[i] = p
            return fun(*call, **kwargs)

        for i in nums:
            for leaf in tree_flatten(args[i])[0]:
                if type(leaf) is Array and not _kn.isdtype(leaf.dtype, ("real floating", "complex floating")):
                    raise TypeError(
                        f"{name}: argument {i} has a {leaf.dtype}{list(leaf.shape)} leaf: integer and bool arrays "
                        f"have no derivative (leave it out of argnums){_at()}"
                    )
        result = vjp(of_primals, *[args[i] for i in nums], has_aux=has_aux)
        y, pullback = result[0], result[1]
        y_leaves, y_def = tree_flatten(y)
        rows = []
        for k, y_k in enumerate(y_leaves):

            def row(basis_row, k=k):
                cotangent = [basis_row if j == k else _kn.zeros_like(y_j) for j, y_j in enumerate(y_leaves)]
                return pullback(y_def.unflatten(cotangent))

            grads = vmap(row)(_basis(y_k))
            shaped = [
                _tree_reshape(g, lambda leaf: tuple(y_k.shape) + tuple(leaf.shape[1:])) for g in grads
            ]
            rows.append(shaped[0] if single else tuple(shaped))
        jacobian = y_def.unflatten(rows)
        return (jacobian, result[2]) if has_aux else jacobian

    return _through_jit(traced, name)


def _tree_reshape(tree, shape_of):
    leaves, treedef = tree_flatten(tree)
    return treedef.unflatten([_kn.reshape(leaf, shape_of(leaf)) for leaf in leaves])


def jacfwd(fun, argnums=0, has_aux=False):
    """The Jacobian by forward mode: one jvp per input element, batched.
    Shaped as jacrev's."""
    name = f"jacfwd({_function_name(fun)})"
    single = _is_index(argnums)

    def traced(*args, **kwargs):
        nums = _normalize_argnums(argnums, len(args), name)
        substitution = _Substitution(args, nums, name)
        x_leaves = substitution.leaves

        def of_flat(*flat):
            return fun(*substitution.rebuild(list(flat)), **kwargs)

        columns = []  # per input leaf: the output tree, each leaf [*y.shape, x.size]
        aux = None
        y_def = None
        for j, x_j in enumerate(x_leaves):

            def column(basis_row, j=j):
                tangents = [basis_row if i == j else _kn.zeros_like(x_i) for i, x_i in enumerate(x_leaves)]
                out = jvp(of_flat, x_leaves, tangents, has_aux=has_aux)
                return out[1]

            columns.append(vmap(column, out_axes=-1)(_basis(x_j)))
        y = jvp(of_flat, x_leaves, [_kn.zeros_like(x) for x in x_leaves], has_aux=has_aux)
        y_leaves, y_def = tree_flatten(y[0])
        if has_aux:
            aux = y[2]
        per_output = []
        for k, y_k in enumerate(y_leaves):
            per_input = [
                _kn.reshape(tree_flatten(columns[j])[0][k], tuple(y_k.shape) + tuple(x_j.shape))
                for j, x_j in enumerate(x_leaves)
            ]
            trees = substitution.split(per_input)
            per_output.append(trees[0] if single else tuple(trees))
        jacobian = y_def.unflatten(per_output)
        return (jacobian, aux) if has_aux else jacobian

    return _through_jit(traced, name)


def hessian(fun, argnums=0, has_aux=False):
    """The Hessian of a scalar function: jacfwd of jacrev."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)

