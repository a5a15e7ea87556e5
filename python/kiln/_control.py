"""while_loop, cond, switch, fori_loop and scan over Python callables and
pytrees: each body is traced once and compiled as a real loop or branch."""

import operator as _operator

import kiln as _kn

from . import _kiln
from ._jit import _output_leaves, _short
from ._tree import tree_paths

__all__ = ["while_loop", "cond", "switch", "fori_loop", "scan"]

Array = _kiln.Array


def _at():
    return _kiln._at()


def _leaves(tree, what):
    return _output_leaves(tree, what)


def _strong(leaves):
    """Carries and branch results of their dtype, not weakly typed: `total + i`
    on a carry that began as the Python number 0 is int32 like the carry (as
    JAX promotes a loop's weakly typed inputs)."""
    return [_kn.astype(leaf, leaf.dtype) if leaf.weak_type else leaf for leaf in leaves]


def _type_text(a):
    return f"{a.dtype}[{','.join(str(d) for d in a.shape)}]"


def _check_same(operation, expected, expected_what, got, got_what):
    """`expected`/`got`: (leaves, treedef). Raises naming both sides."""
    (expected_leaves, expected_def), (got_leaves, got_def) = expected, got
    if expected_def != got_def:
        raise TypeError(
            f"{operation}: {got_what} has structure {got_def!r}, but {expected_what} has {expected_def!r}; they "
            f"must match{_at()}"
        )
    for path, a, b in zip(tree_paths(expected_def, ""), expected_leaves, got_leaves):
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            where = f"at {path}" if path else "(the whole value)"
            raise TypeError(
                f"{operation}: {got_what} holds {_type_text(b)} {where}, but {expected_what} holds "
                f"{_type_text(a)} there; they must match (cast with astype, or fix the shape){_at()}"
            )


def while_loop(cond_fun, body_fun, init_val):
    """body_fun(carry) while cond_fun(carry) is true; returns the last carry,
    which keeps init_val's structure, dtypes and shapes."""
    init = _leaves(init_val, "while_loop's initial carry")
    treedef = init[1]
    init = (_strong(init[0]), treedef)

    def condition(carry):
        result = cond_fun(treedef.unflatten(carry))
        return result if type(result) is Array else _kn.asarray(result)

    def body(carry):
        out = _leaves(body_fun(treedef.unflatten(carry)), "while_loop's body")
        _check_same("while_loop", (carry, treedef), "the initial carry", out, "the body's result")
        return _strong(out[0])

    return treedef.unflatten(_kiln._while_loop(condition, body, init[0]))


def _branches(operation, functions, names, operands):
    operand_leaves, operand_def = _leaves(operands, f"{operation}'s operands")
    results = {}

    def branch(index):
        def run(leaves):
            out = _leaves(functions[index](*operand_def.unflatten(leaves)), f"{operation}'s {names[index]}")
            for other, seen in results.items():
                _check_same(operation, seen, names[other] + "'s result", out, names[index] + "'s result")
                break
            results[index] = out
            return _strong(out[0])

        return run

    return operand_leaves, [branch(i) for i in range(len(functions))], results


def cond(pred, true_fun, false_fun, *operands):
    """true_fun(*operands) where pred is true, else false_fun(*operands): both
    branches are traced and must return the same structure, dtypes and shapes."""
    leaves, (on_false, on_true), results = _branches(
        "cond", [false_fun, true_fun], ["the false branch", "the true branch"], operands
    )
    pred = pred if type(pred) is Array else _kn.asarray(pred)
    values = _kiln._cond(pred, on_true, on_false, leaves)
    return results[0][1].unflatten(values)


def switch(index, branches, *operands):
    """branches[index](*operands), the index clamped into range (JAX's rule)."""
    branches = list(branches)
    if not branches:
        raise ValueError(f"switch: no branches; pass at least one function{_at()}")
    leaves, flat_branches, results = _branches(
        "switch", branches, [f"branch {i}" for i in range(len(branches))], operands
    )
    index = index if type(index) is Array else _kn.asarray(index)
    values = _kiln._switch(index, flat_branches, leaves)
    return results[0][1].unflatten(values)


def scan(f, init, xs, length=None, reverse=False):
    """Loops f(carry, x) -> (carry, y) over the leading axis of xs and returns
    (the last carry, the ys stacked along a new leading axis). xs may be None
    with a length."""
    carry_leaves, carry_def = _leaves(init, "scan's initial carry")
    carry_leaves = _strong(carry_leaves)
    xs_leaves, xs_def = _leaves(xs, "scan's xs")
    ys_def = []

    def step(carry, x):
        out = f(carry_def.unflatten(carry), xs_def.unflatten(x))
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"scan: the body must return (carry, y), got {type(out).__name__} {_short(out)}{_at()}")
        new_carry = _leaves(out[0], "scan's body (its carry)")
        _check_same("scan", (carry, carry_def), "the initial carry", new_carry, "the carry the body returns")
        y_leaves, y_def = _leaves(out[1], "scan's body (its y)")
        ys_def.append(y_def)
        return _strong(new_carry[0]), y_leaves

    if length is not None:
        length = _operator.index(length)
    final, ys = _kiln._scan(step, carry_leaves, xs_leaves, length, bool(reverse))
    return carry_def.unflatten(final), ys_def[-1].unflatten(ys)


def fori_loop(lower, upper, body_fun, init_val):
    """body_fun(i, carry) for i in range(lower, upper). Python int bounds give
    a loop of known length (differentiable in both modes); array bounds a
    while loop."""
    init_leaves, treedef = _leaves(init_val, "fori_loop's initial carry")
    init_leaves = _strong(init_leaves)

    def body(i, carry):
        out = _leaves(body_fun(i, treedef.unflatten(carry)), "fori_loop's body")
        _check_same("fori_loop", (carry, treedef), "the initial carry", out, "the body's result")
        return _strong(out[0])

    def bound(value):
        if type(value) is Array:
            return value
        try:
            return _operator.index(value)
        except TypeError:
            return _kn.asarray(value)

    return treedef.unflatten(_kiln._fori_loop(bound(lower), bound(upper), body, init_leaves))
