"""Guards: how a jitted call knows, without running the Python function
again, that running it would trace the graph an earlier call ran.

While a call traces, a profiler records which Python code runs and which C
functions that code calls. Afterwards the function's environment is walked:
every global, closure cell, default, module attribute and object attribute
that the code that ran could name, and every item of the containers among
them. Each place becomes a probe with what it held: Python numbers, strings
and other immutable values by value, arrays by dtype and shape (an array is
an implicit input: its contents are read afresh at every call), everything
else by identity. A later call with the same signature whose probes all
hold runs the executable directly, with the arrays the probes now hold.

A trace proves nothing, and the call re-runs the function every time (as
kiln::jit does for a stateful C++ callable), when the code that ran:
- writes state (an attribute, a global, an outer variable, a subscript),
  since skipping it would skip its effect;
- calls a C function that may read state no probe sees (time, random
  number generators, files, getattr with a computed name), or runs Python
  code that the walk did not reach;
- captured an array no probe holds, or reads more state than a walk should.
"""

import builtins as _builtins
import dis as _dis
import functools as _functools
import math as _math
import os as _os
import sys as _sys
import types as _types

from . import _kiln

Array = _kiln.Array
_identity = _kiln._identity
_type_key = _kiln._type_key

_PACKAGE = _os.path.dirname(__file__) + _os.sep
_STDLIB = _os.path.dirname(_os.__file__) + _os.sep
_MAX_PROBES = 4096
_MAX_CONTAINER = 512
_MAX_NDARRAY_BYTES = 1 << 16


class Unguardable(Exception):
    """Why a trace cannot be guarded: the call re-runs the function instead."""


_MISSING = object()
_kiln._set_guard_missing(_MISSING)
_check_probes = _kiln._check_probes

# Probe kinds: where a value is read from.
_DICT, _CELL, _LEN, _ATTR, _ITEM, _KEYS = range(6)
# Modes: how it is compared.
_ID, _EQ, _ARRAY, _NDARRAY, _SAME_ARRAY = range(5)

_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), type(Ellipsis), range, slice)

# Builtins that read nothing but their arguments.
_PURE_BUILTINS = frozenset(
    "abs all any ascii bin callable chr divmod enumerate filter format hash hex isinstance issubclass iter len "
    "map max min oct ord pow repr reversed round sorted sum zip".split()
)
_READING_METHODS = frozenset(
    "get items keys values copy index count __getitem__ __contains__ __len__ __iter__ __reversed__ "
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __repr__ __format__ __sizeof__ __reduce__ "
    "isdisjoint issubset issuperset union intersection difference symmetric_difference".split()
)
# Opcodes that write state outside the frame's own locals.
_WRITES = frozenset(
    {"STORE_ATTR", "DELETE_ATTR", "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE"}
)


def _kiln_own(filename):
    return filename.startswith(_PACKAGE)




def _run_by_kiln(frame):
    """Whether `frame` is standard-library code that kiln's own code called
    (directly or through more of the standard library): it reads no user state."""
    while frame is not None and frame.f_code.co_filename.startswith(_STDLIB):
        frame = frame.f_back
        if frame is not None and _kiln_own(frame.f_code.co_filename):
            return True
    return False


class TraceRecorder:
    """Records, during a trace, the user code that ran and the C functions it called."""

    def __init__(self):
        self.codes = set()
        self.c_calls = []
        self.active = False

    def _profile(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            if not _kiln_own(code.co_filename) and not _run_by_kiln(frame):
                self.codes.add(code)
        elif event == "c_call":
            if not _kiln_own(frame.f_code.co_filename) and not _run_by_kiln(frame):
                self.c_calls.append((arg, frame.f_code.co_filename, frame.f_lineno))

    def __enter__(self):
        # A profiler of the user's own (cProfile) is left alone: the call is not guarded.
        previous = _sys.getprofile()
        # A recorder of kiln's own left behind by a trace that never ended is replaced.
        if previous is None or isinstance(getattr(previous, "__self__", None), TraceRecorder):
            _sys.setprofile(self._profile)
            self.active = True
        return self

    def __exit__(self, *exc):
        if self.active:
            _sys.setprofile(None)
        return False


_SIMPLE_PUSHES = frozenset({"LOAD_FAST", "LOAD_CONST", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME"})
_BUILDS = frozenset({"BUILD_MAP", "BUILD_LIST", "BUILD_CONST_KEY_MAP"})


def _fresh_locals(code, instructions):
    """Local variables (not parameters) only ever bound to a dict or list
    that the frame builds itself: writing into them changes no outside state
    (unless the container escapes, which takes a write or a call a guard sees)."""
    parameters = set(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    fresh, other = set(), set(parameters)
    for k, instruction in enumerate(instructions):
        if instruction.opname in ("STORE_FAST", "DELETE_FAST"):
            built = k > 0 and instruction.opname == "STORE_FAST" and instructions[k - 1].opname in _BUILDS
            (fresh if built else other).add(instruction.argval)
    return fresh - other


def _stores_into(instructions, k):
    """The local a STORE_SUBSCR at k writes into, when the container and the
    key were each pushed by one instruction (`d[k] = v`); else None."""
    if k >= 2 and instructions[k - 1].opname in _SIMPLE_PUSHES and instructions[k - 2].opname == "LOAD_FAST":
        return instructions[k - 2].argval
    return None


@_functools.lru_cache(maxsize=4096)
def _code_facts(code):
    """(names the code and its nested code can read, whether any of it
    writes outside state, the code and its nested code objects)."""
    names = set(code.co_names)
    writes = False
    nested = [code]
    freevars = set(code.co_freevars)
    instructions = list(_dis.get_instructions(code))
    fresh = _fresh_locals(code, instructions)
    for k, instruction in enumerate(instructions):
        name = instruction.opname
        if name == "STORE_SUBSCR" and _stores_into(instructions, k) in fresh:
            continue  # `out[key] = value` into a dict or list the frame built itself
        if name in _WRITES:
            writes = True
        elif name in ("STORE_DEREF", "DELETE_DEREF") and instruction.argval in freevars:
            writes = True
    for const in code.co_consts:
        if isinstance(const, _types.CodeType):
            inner_names, inner_writes, inner_nested = _code_facts(const)
            names |= inner_names
            writes |= inner_writes
            nested.extend(inner_nested)
    return frozenset(names), writes, tuple(nested)


class _Walker:
    """Walks a function's environment into probes."""

    def __init__(self, names, executed):
        self.names = names
        self.executed = executed  # the code objects the trace ran
        self.probes = []
        self.seen = set()
        self.keep = []  # holders stay alive while their ids are in `seen`
        self.codes = set()
        self.arrays = {}  # array identity -> probe index

    def probe(self, kind, holder, key, value):
        if isinstance(value, Array):
            first = self.arrays.get(_identity(value))
            if first is None:
                mode, expected = _ARRAY, _type_key(value)
                self.arrays[_identity(value)] = len(self.probes)
            else:
                # One array in two places (tied weights): the trace has one
                # implicit input for both, so both must still hold one array.
                mode, expected = _SAME_ARRAY, first
        elif type(value) in _IMMUTABLE:
            mode, expected = _EQ, value
        elif type(value).__name__ == "ndarray" and hasattr(value, "tobytes"):
            if value.nbytes > _MAX_NDARRAY_BYTES:
                raise Unguardable(f"it reads a NumPy array of {value.nbytes} bytes, whose contents may change")
            mode, expected = _NDARRAY, (value, value.dtype.str, value.shape, hash(value.tobytes()))
        else:
            mode, expected = _ID, value
        self.probes.append((kind, holder, key, mode, expected))
        if len(self.probes) > _MAX_PROBES:
            raise Unguardable(f"it reads more than {_MAX_PROBES} places")
        if mode == _ID:
            self.walk(value)

    def walk(self, obj):
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        self.keep.append(obj)
        kind = type(obj)
        if kind is _types.FunctionType:
            if obj.__dict__:
                self.attributes(obj.__dict__)  # helper.scale = ...
            filename = obj.__code__.co_filename
            if _kiln_own(filename):
                # kiln's own code reads no user state but what its closure holds
                # (the user's function inside kn.grad, kn.vmap, ...).
                self.closure(obj)
            elif obj.__code__ in self.executed:
                self.function(obj)
            # A function the trace did not run is held by identity alone: what
            # it would read cannot have shaped the graph, and it will not run
            # while everything the code that ran read is unchanged.
        elif kind is _types.MethodType:
            self.walk(obj.__func__)
            self.probe(_ATTR, obj, "__self__", obj.__self__)
        elif isinstance(obj, (tuple, frozenset)):  # namedtuples too
            for item in obj:
                if type(item) not in _IMMUTABLE:
                    self.walk(item)
        elif isinstance(obj, list):
            if len(obj) > _MAX_CONTAINER:
                raise Unguardable(f"it reads a list of {len(obj)} items")
            self.probes.append((_LEN, obj, None, _EQ, len(obj)))
            for i, item in enumerate(obj):
                self.probe(_ITEM, obj, i, item)
            if kind is not list:
                self.instance(obj, contents_walked=True)
        elif isinstance(obj, dict):  # OrderedDict, defaultdict and user subclasses too
            if len(obj) > _MAX_CONTAINER:
                raise Unguardable(f"it reads a dict of {len(obj)} items")
            # The keys in order: iterating a dict follows its insertion order.
            self.probes.append((_KEYS, obj, None, _EQ, tuple(obj)))
            for key in list(obj):
                self.probe(_DICT, obj, key, dict.__getitem__(obj, key))
            if kind is not dict:
                self.instance(obj, contents_walked=True)
        elif kind is _types.ModuleType:
            self.namespace(obj.__dict__)
        elif _kiln_class(kind) or (isinstance(obj, type) and _kiln_class(obj)):
            wrapped = getattr(kind, "_kiln_wrapped", None)
            if wrapped is not None and not isinstance(obj, type):
                self.walk(wrapped(obj))
        elif kind is _functools.partial:
            if type(obj.func) is not _types.FunctionType:
                raise Unguardable(f"it calls functools.partial of {obj.func!r}, whose reads the guard cannot see")
            self.walk(obj.func)
            self.walk(obj.args)
            self.walk(obj.keywords)
        elif kind in (staticmethod, classmethod):
            self.walk(obj.__func__)
        elif kind is property:
            for accessor in (obj.fget, obj.fset, obj.fdel):
                if accessor is not None:
                    self.walk(accessor)
        elif isinstance(obj, set):
            raise Unguardable("it reads a set, whose contents the guard does not follow")
        elif isinstance(obj, type):
            self.cls(obj)
        elif kind is _types.BuiltinFunctionType or kind is _types.CellType:
            pass
        else:
            self.instance(obj)

    def namespace(self, mapping):
        """A module's or class's names that the code may read."""
        for name in self.names:
            value = mapping.get(name, _MISSING)
            if value is not _MISSING:
                self.probe(_DICT, mapping, name, value)

    def function(self, fn):
        names, _, nested = _code_facts(fn.__code__)
        self.codes.update(nested)
        self.probe(_ATTR, fn, "__code__", fn.__code__)
        scope = fn.__globals__
        builtins_scope = scope.get("__builtins__", _builtins)
        if isinstance(builtins_scope, _types.ModuleType):
            builtins_scope = builtins_scope.__dict__
        for name in names:
            value = scope.get(name, _MISSING)
            if value is not _MISSING:
                self.probe(_DICT, scope, name, value)
                continue
            # An absent global is a probe too: defining it later shadows a builtin.
            self.probes.append((_DICT, scope, name, _ID, _MISSING))
            if name in builtins_scope:
                self.probe(_DICT, builtins_scope, name, builtins_scope[name])
        self.closure(fn)
        self.probe(_ATTR, fn, "__defaults__", fn.__defaults__)
        self.probe(_ATTR, fn, "__kwdefaults__", fn.__kwdefaults__)

    def closure(self, fn):
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:
                value = _MISSING
            self.probe(_CELL, cell, None, value)

    def cls(self, cls):
        if not cls.__flags__ & (1 << 9):  # a static (C) type: its namespace cannot change
            return
        self.probe(_ATTR, cls, "__mro__", cls.__mro__)  # reassigned __bases__ makes a new one
        if type(cls) is not type:
            self.walk(type(cls))  # a metaclass's attributes read through the class
        for klass in cls.__mro__:
            if klass is object or not klass.__flags__ & (1 << 9):
                continue
            namespace = klass.__dict__
            self.probes.append((_LEN, namespace, None, _EQ, len(namespace)))
            for name, value in list(namespace.items()):
                if isinstance(value, (_types.FunctionType, staticmethod, classmethod, property)):
                    self.walk(value)  # code any method may run (operators included)
                elif name in self.names:
                    self.probe(_DICT, namespace, name, value)

    def attributes(self, attributes):
        """An object's __dict__: the names the code may read, and its size
        (any attribute added or removed changes what the code may find)."""
        self.probes.append((_LEN, attributes, None, _EQ, len(attributes)))
        for name in self.names:
            value = attributes.get(name, _MISSING)
            if value is not _MISSING:
                self.probe(_DICT, attributes, name, value)

    def instance(self, obj, contents_walked=False):
        kind = type(obj)
        if not contents_walked and _c_type(kind) and (
            hasattr(kind, "__next__") or hasattr(kind, "__setitem__") or hasattr(kind, "append") or callable(obj)
        ) and kind.__name__ != "ufunc":
            # A C object with contents of its own (an iterator, a deque, an
            # array.array) or that calls other code unseen (operator.attrgetter).
            raise Unguardable(f"it reads a {kind.__module__}.{kind.__qualname__}, whose contents the guard cannot follow")
        self.probe(_ATTR, obj, "__class__", kind)
        self.walk(kind)
        attributes = getattr(obj, "__dict__", None)
        if attributes is not None and "__dict__" in self.names:
            self.walk(attributes)  # read as a dict: every item
        if attributes is not None:
            self.attributes(attributes)
        for klass in type(obj).__mro__:
            for slot in getattr(klass, "__slots__", ()):
                if slot in self.names:
                    self.probe(_ATTR, obj, slot, getattr(obj, slot, _MISSING))


@_functools.lru_cache(maxsize=1024)
def _c_type(cls):
    """Whether no class of cls's MRO has Python code (its behaviour is C's)."""
    def python_code(value):
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        elif isinstance(value, property):
            value = value.fget
        return isinstance(value, _types.FunctionType)

    return not any(python_code(value) for klass in cls.__mro__ if klass is not object for value in vars(klass).values())


def _kiln_class(cls):
    module = getattr(cls, "__module__", None) or ""
    return module == "kiln" or module.startswith("kiln.")


def _allowed_c_call(function, environment):
    module = getattr(function, "__module__", None)
    if module is not None and (module == "kiln" or module.startswith("kiln.")):
        return True
    owner = getattr(function, "__self__", None)
    name = getattr(function, "__name__", "")
    if owner is _builtins:
        return name in _PURE_BUILTINS
    if owner is _math:
        return True
    if type(owner) in _IMMUTABLE or isinstance(owner, (tuple, frozenset)):
        return True
    if isinstance(owner, (list, dict, set)):
        return name in _READING_METHODS or id(owner) not in environment
    return False


class Guard:
    """One traced call's probes, and how to rebuild its implicit inputs."""

    __slots__ = ("probes", "sources", "replay")

    def __init__(self, probes, sources, replay):
        self.probes = probes
        self.sources = sources  # per capture: a probe index, or the array itself (a constant)
        self.replay = replay

    def captures(self):
        """The implicit inputs for a call now, or None if a probe changed."""
        arrays = _check_probes(self.probes)
        if arrays is None:
            return None
        return [arrays[s] if type(s) is int else s for s in self.sources]


def build(roots, recorder, replay):
    """The guard of a traced call, or Unguardable with the reason."""
    if not recorder.active:
        raise Unguardable("a profiler is set")
    names = set()
    for code in recorder.codes:
        code_names, writes, _ = _code_facts(code)
        if writes:
            raise Unguardable(f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno}) writes state")
        names |= code_names
    walker = _Walker(frozenset(names), recorder.codes)
    for root in roots:
        if type(root) not in _IMMUTABLE:
            walker.walk(root)
    for code in recorder.codes:
        if code not in walker.codes:
            raise Unguardable(
                f"it runs {code.co_qualname} ({code.co_filename}:{code.co_firstlineno}), which the guard cannot reach"
            )
    for function, filename, line in recorder.c_calls:
        if not _allowed_c_call(function, walker.seen):
            raise Unguardable(
                f"it calls {getattr(function, '__qualname__', function)!r} ({filename}:{line}), which may read "
                "other state"
            )
    sources = []
    for capture, constant in zip(replay.captures, replay.constant):
        if constant:
            sources.append(capture)
            continue
        index = walker.arrays.get(_identity(capture))
        if index is None:
            raise Unguardable("it captures an array that no global, closure or attribute holds")
        sources.append(index)
    return Guard(tuple(walker.probes), sources, replay)
