"""kn.jit: the same core as kiln::jit (its signature cache, the process-wide
graph cache, explanations, storms, dynamic shapes), with guards
(_guards.py) so that a hit need not run the Python function again.

Also what every transformation shares: how a result's leaves are read, and
how values are named in messages.
"""

import functools as _functools
import inspect as _inspect

import kiln as _kn

from . import _guards, _kiln
from ._tree import tree_flatten, tree_paths

__all__ = ["jit", "Jitted"]

Array = _kiln.Array
_NUMBERS = (bool, int, float, complex)
_tracing_active = _kiln._tracing_active
_UNGUARDED = ()  # falsy: no guard to try
_GUARDS_PER_SIGNATURE = 4
_GUARD_MISS_LIMIT = 16
_STRUCTURES_KEPT = 64
_flatten_arrays = _kiln._flatten_arrays
_unflatten_native = _kiln._unflatten


def _unflatten(skeleton, outputs):
    built = _unflatten_native(skeleton, outputs)
    return built[0] if built is not None else skeleton.unflatten(outputs)


def _at():
    return _kiln._at()


def _function_name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def _output_leaves(tree, what):
    """The array leaves of a transformed function's result, and its structure."""
    leaves, treedef = tree_flatten(tree)
    arrays = []
    for path, leaf in zip(tree_paths(treedef, "result"), leaves):
        if type(leaf) is Array:
            arrays.append(leaf)
        elif isinstance(leaf, _NUMBERS) or hasattr(leaf, "__array_interface__"):
            arrays.append(_kn.asarray(leaf))
        else:
            raise TypeError(
                f"{what} returned {type(leaf).__name__} {_short(leaf)} at {path}; the results of a transformed "
                f"function are arrays, numbers and containers of them (return it outside the function, or "
                f"register its class with kn.register_pytree_node){_at()}"
            )
    return arrays, treedef


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _static_identity(value):
    """What tells static values apart: their type too (1 and 1.0 trace
    differently), and for floats their text (-0.0 is not 0.0)."""
    return (type(value), repr(value)) if type(value) is float else (type(value), value)


def _static_hash(value, what):
    try:
        return hash(value)
    except TypeError:
        raise TypeError(
            f"jit: {what} is a static value, so it must be hashable, but {type(value).__name__} {_short(value)} "
            f"is not (pass a tuple instead of a list, or make it an array argument){_at()}"
        ) from None


def _as_int_tuple(value, what):
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{what} must be an int or a sequence of ints, got {_short(value)}{_at()}") from None


class Jitted:
    """A function traced once per signature and graph, run as compiled code."""

    def __init__(self, fn, options, numbers_static=False):
        """`options`: kn.jit's keyword arguments. `numbers_static`: Python
        numbers in the arguments are static values (the transformations'
        own jit, where they stay Python values as they would without jit)."""
        if not callable(fn):
            raise TypeError(f"jit: expected a function, got {type(fn).__name__}{_at()}")
        _functools.update_wrapper(self, fn, updated=())
        self._fn = fn
        self._numbers_static = numbers_static
        try:
            parameters = list(_inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            parameters = []
        positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        static_argnames = options["static_argnames"]
        static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        static_argnums = set(_as_int_tuple(options["static_argnums"], "static_argnums"))
        # A static argument may be passed by position or by name, as in JAX.
        for name_ in static_argnames:
            if name_ in positional:
                static_argnums.add(positional.index(name_))
        self._static_argnums = frozenset(static_argnums)
        self._static_argnames = frozenset(static_argnames) | {
            positional[i] for i in static_argnums if 0 <= i < len(positional)
        }
        self._donate_argnums = frozenset(_as_int_tuple(options["donate_argnums"], "donate_argnums"))
        self._positional = positional
        # Per signature: the guards of its latest traces, or _UNGUARDED.
        self._guards = {}
        self._structures = {}  # structure code -> what _flatten returns after the leaves
        self._guard_misses = 0
        self.unguarded_reason = None
        self._core = _kiln._JitCore(
            options["name"] or _function_name(fn),
            int(options["recompile_limit"]),
            str(options["on_storm"]),
            options["dynamic_dims"],
            bool(options["automatic_dynamic"]),
            options["compile_mode"],
            str(options["device"]),
        )

    def _kiln_wrapped(self):
        """The function a guard walks into (kn.jit inside a jitted function)."""
        return self._fn

    def __get__(self, instance, owner=None):
        # A jitted method binds like the function it wraps.
        if instance is None:
            return self
        return _functools.partial(self, instance)

    def _argument_name(self, index):
        return self._positional[index] if index < len(self._positional) else f"args[{index}]"

    def _split(self, args, kwargs):
        """The call's arguments apart: (dynamic positional, dynamic keyword,
        static positional as (index, value, hash), static keyword as (name, value, hash))."""
        static_args = []
        dynamic_args = []
        for i, a in enumerate(args):
            if i in self._static_argnums:
                _static_hash(a, f"argument {self._argument_name(i)}")
                static_args.append((i, _static_identity(a), a))
                dynamic_args.append(None)
            else:
                dynamic_args.append(a)
        static_kwargs = []
        dynamic_kwargs = {}
        for k, v in kwargs.items():
            if k in self._static_argnames:
                _static_hash(v, f"argument {k}")
                static_kwargs.append((k, _static_identity(v), v))
            else:
                dynamic_kwargs[k] = v
        return dynamic_args, dynamic_kwargs, static_args, static_kwargs

    def _flatten(self, args, kwargs):
        if not kwargs and not self._static_argnums:
            # The common call, containers of arrays: flattened in C++, and what
            # the rest of flattening makes of the structure is remembered.
            flat = _flatten_arrays(args)
            if flat is not None:
                leaves, code = flat
                known = self._structures.get(code)
                if known is None:
                    if len(self._structures) >= _STRUCTURES_KEPT:
                        self._structures.clear()
                    known = self._structures[code] = self._flatten_general(args, kwargs)[2:]
                return (leaves, leaves) + known
        return self._flatten_general(args, kwargs)

    def _flatten_general(self, args, kwargs):
        dynamic_args, dynamic_kwargs, static_args, static_kwargs = self._split(args, kwargs)
        leaves, treedef = tree_flatten((tuple(dynamic_args), dynamic_kwargs))
        arrays = []
        positions = []  # per leaf: the index of its array, or -1 for a static leaf
        static_leaves = []
        for leaf in leaves:
            if type(leaf) is Array:
                positions.append(len(arrays))
                arrays.append(leaf)
            elif self._dynamic_leaf(leaf):
                positions.append(len(arrays))
                arrays.append(_kn.asarray(leaf))
            else:
                positions.append(-1)
                _static_hash(leaf, "a non-array leaf of an argument")
                static_leaves.append(_static_identity(leaf))
        donated = self._donated_mask(args, dynamic_args, positions) if self._donate_argnums else []
        key = (treedef, tuple(positions), tuple(static_leaves), tuple(static_args), tuple(static_kwargs))
        # Every static value was checked hashable above; the core takes a signed 64-bit hash.
        static_hash = (hash(key) + (1 << 63)) % (1 << 64) - (1 << 63)
        return arrays, leaves, positions, treedef, static_hash, static_args, static_kwargs, key, donated

    def _trace_fn(self, leaves, positions, treedef, static_args, static_kwargs):
        fn = self._fn

        def trace(placeholders):
            rebuilt = [placeholders[p] if p >= 0 else leaf for leaf, p in zip(leaves, positions)]
            dynamic_args, kwargs = treedef.unflatten(rebuilt)
            args = list(dynamic_args)
            for i, _, value in static_args:
                args[i] = value
            kwargs = dict(kwargs)
            for k, _, value in static_kwargs:
                kwargs[k] = value
            result = fn(*args, **kwargs)
            return _output_leaves(result, f"jitted function '{self._core.name}'")

        return trace

    def _dynamic_leaf(self, leaf):
        """Whether a leaf that is not a kn.Array becomes one: Python numbers
        (weakly typed scalars: a new value is no new graph) and NumPy or
        DLPack arrays."""
        if isinstance(leaf, _NUMBERS):
            return not self._numbers_static
        return hasattr(leaf, "__array_interface__") or hasattr(leaf, "__dlpack__")

    def _describe_fn(self, args, kwargs):
        def describe():
            tokens = []
            next_array = 0
            named = [(self._argument_name(i), a, i in self._static_argnums) for i, a in enumerate(args)]
            named += [(k, kwargs[k], k in self._static_argnames) for k in sorted(kwargs)]
            for name, value, static in named:
                if static:
                    tokens.append(("static", name, f"static {_short(value)}", _static_hash(value, name) % (1 << 63)))
                    continue
                leaves, treedef = tree_flatten(value)
                if treedef.kind != "leaf":
                    tokens.append(("node", name, repr(treedef), hash(treedef) % (1 << 63), len(leaves)))
                for path, leaf in zip(tree_paths(treedef, name), leaves):
                    if type(leaf) is Array or self._dynamic_leaf(leaf):
                        tokens.append(("array", path, next_array))
                        next_array += 1
                    else:
                        tokens.append(("static", path, f"static {_short(leaf)}", hash(leaf) % (1 << 63)))
            return tokens

        return describe

    def _donated_mask(self, args, dynamic_args, positions):
        """Per array leaf: whether its argument is donated."""
        for i in self._donate_argnums:
            if i < 0 or i >= len(args):
                raise ValueError(
                    f"jit: donate_argnums of '{self._core.name}' names argument {i}, but the call has {len(args)} "
                    f"positional argument{'s' if len(args) != 1 else ''}{_at()}"
                )
        mask = []
        next_leaf = 0
        for i, a in enumerate(dynamic_args):
            count = len(tree_flatten(a)[0])
            mask.extend([i in self._donate_argnums] * sum(1 for p in positions[next_leaf : next_leaf + count] if p >= 0))
            next_leaf += count
        return mask + [False] * (sum(1 for p in positions if p >= 0) - len(mask))

    def __call__(self, *args, **kwargs):
        if _tracing_active():
            # Inside another trace (grad, vmap, an enclosing jit) the function is inlined.
            return self._fn(*args, **kwargs)
        arrays, leaves, positions, treedef, static_hash, static_args, static_kwargs, key, donated = self._flatten(
            args, kwargs
        )
        guard_key = (key, self._core.signature(arrays, static_hash))
        guards = self._guards.get(guard_key)
        if guards:
            for guard in guards:
                captures = guard.captures()
                if captures is not None:
                    outputs, skeleton = self._core.replay(guard.replay, arrays, static_hash, donated, captures)
                    return _unflatten(skeleton, outputs)
        trace = self._trace_fn(leaves, positions, treedef, static_args, static_kwargs)
        describe = self._describe_fn(args, kwargs)
        if guards is _UNGUARDED:
            outputs, skeleton = self._core.call(arrays, static_hash, donated, trace, describe, False)
            return skeleton.unflatten(outputs)
        recorder = _guards.TraceRecorder()

        def recorded(placeholders):
            with recorder:
                return trace(placeholders)

        outputs, skeleton, replay = self._core.call(arrays, static_hash, donated, recorded, describe, True)
        self._remember_guard(guard_key, guards, recorder, replay, static_args, static_kwargs, leaves, positions)
        return skeleton.unflatten(outputs)

    def _remember_guard(self, guard_key, guards, recorder, replay, static_args, static_kwargs, leaves, positions):
        roots = [self._fn]
        roots += [value for _, _, value in static_args] + [value for _, _, value in static_kwargs]
        roots += [leaf for leaf, p in zip(leaves, positions) if p < 0]
        try:
            guard = _guards.build(roots, recorder, replay)
        except _guards.Unguardable as why:
            self._guards[guard_key] = _UNGUARDED
            self.unguarded_reason = str(why)
            return
        guards = guards or []
        guards.insert(0, guard)
        del guards[_GUARDS_PER_SIGNATURE:]
        self._guards[guard_key] = guards
        self._guard_misses += 1
        if self._guard_misses > _GUARD_MISS_LIMIT and self._guard_misses > self._core.stats().hits:
            # What the function reads changes at almost every call (a counter,
            # a clock): probing it costs more than it saves.
            self._guards[guard_key] = _UNGUARDED
            self.unguarded_reason = "what it reads changed at most calls"

    def lower(self, *args, **kwargs):
        """The graph this call traces to (printable IR naming the Python line of every node)."""
        arrays, leaves, positions, treedef, static_hash, static_args, static_kwargs, _, _ = self._flatten(args, kwargs)
        trace = self._trace_fn(leaves, positions, treedef, static_args, static_kwargs)
        return self._core.lower(arrays, static_hash, trace)

    def stats(self):
        return self._core.stats()

    def cache_size(self):
        return self._core.cache_size()

    def last_miss_explanation(self):
        return self._core.last_miss_explanation()

    def __repr__(self):
        return f"<kn.jit of {_function_name(self._fn)}>"


def jit(
    fn=None,
    *,
    static_argnums=(),
    static_argnames=(),
    donate_argnums=(),
    dynamic_dims=None,
    automatic_dynamic=True,
    recompile_limit=8,
    on_storm="warn",
    name=None,
    compile_mode=None,
    device="cpu",
):
    """Traces `fn` once per signature and graph and runs it as compiled code;
    also a decorator (`@kn.jit` or `@kn.jit(static_argnums=1)`).

    compile_mode: "background" (a new graph's first calls run op by op while
    its optimized code compiles on kiln's compile thread), "sync" (the first
    call waits for it), or None for what KILN_COMPILE says (background).

    device: "cpu", or "cuda" for an NVIDIA GPU: arguments already there are
    read in place, results stay there until read (x.to_device moves arrays)."""
    options = {key: value for key, value in locals().items() if key != "fn"}
    if fn is None:
        return lambda f: Jitted(f, options)
    return Jitted(fn, options)
