"""Pytrees: the nested containers that transformed functions take and return.

Tuples, lists, dicts (keys in sorted order), None, namedtuples and dataclasses
are containers; classes registered with register_pytree_node are too. Every
other object is a leaf. A TreeDef is the structure without the leaves: it is
hashable and compares by value, so it can be part of a cache key.
"""

import dataclasses as _dataclasses

__all__ = [
    "TreeDef",
    "register_pytree_node",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_paths",
]

# cls -> (flatten(obj) -> (children, aux), unflatten(aux, children) -> obj)
_registry = {}

_LEAF = "leaf"


class TreeDef:
    """The structure of a pytree: a node kind, its static data and its children."""

    __slots__ = ("kind", "data", "children", "num_leaves", "_hash")

    def __init__(self, kind, data, children):
        self.kind = kind  # "leaf", "none", a container type, or a registered class
        self.data = data  # dict keys, namedtuple/dataclass fields, a registered class's aux data
        self.children = children
        self.num_leaves = 1 if kind is _LEAF else sum(c.num_leaves for c in children)
        self._hash = None

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.kind, self.data, self.children))
        return self._hash

    def __eq__(self, other):
        if self is other:
            return True
        return (
            isinstance(other, TreeDef)
            and self.kind == other.kind
            and self.data == other.data
            and self.children == other.children
        )

    def __repr__(self):
        if self.kind is _LEAF:
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind is tuple:
            return "(" + inner + ("," if len(self.children) == 1 else "") + ")"
        if self.kind is list:
            return "[" + inner + "]"
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.data, self.children)) + "}"
        return f"{getattr(self.kind, '__name__', self.kind)}({inner})"

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)


def register_pytree_node(cls, flatten, unflatten):
    """Makes instances of `cls` containers: flatten(obj) returns (children,
    aux_data), with aux_data hashable; unflatten(aux_data, children) rebuilds one."""
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree_node: expected a class, got {cls!r}")
    if cls in (tuple, list, dict, type(None)):
        raise ValueError(f"register_pytree_node: {cls.__name__} is already a container")
    _registry[cls] = (flatten, unflatten)
    _leaf_types.discard(cls)


def _is_namedtuple(cls):
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _dataclass_fields(cls):
    # Read directly (not through dataclasses.fields): flattening runs inside
    # traces, where every Python function it calls is code a guard must reach.
    names = cls.__dict__.get("_kiln_fields")
    if names is None:
        names = tuple(f.name for f in _dataclasses.fields(cls))
        try:
            cls._kiln_fields = names
        except (AttributeError, TypeError):
            pass
    return names


def _flatten(tree, leaves, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF_DEF
    cls = type(tree)
    if cls in _leaf_types:
        leaves.append(tree)
        return _LEAF_DEF
    if cls is tuple or cls is list:
        return TreeDef(cls, None, tuple(_flatten(c, leaves, is_leaf) for c in tree))
    if cls is dict:
        try:
            keys = tuple(sorted(tree))
        except TypeError:
            raise TypeError(f"pytree: dict keys must be sortable, got {list(tree)!r}") from None
        return TreeDef(dict, keys, tuple(_flatten(tree[k], leaves, is_leaf) for k in keys))
    if tree is None:
        return _NONE_DEF
    registered = _registry.get(cls)
    if registered is not None:
        children, aux = registered[0](tree)
        return TreeDef(cls, aux, tuple(_flatten(c, leaves, is_leaf) for c in children))
    if _is_namedtuple(cls):
        return TreeDef(cls, None, tuple(_flatten(c, leaves, is_leaf) for c in tree))
    if hasattr(cls, "__dataclass_fields__"):
        names = _dataclass_fields(cls)
        return TreeDef(cls, names, tuple(_flatten(getattr(tree, n), leaves, is_leaf) for n in names))
    _leaf_types.add(cls)
    leaves.append(tree)
    return _LEAF_DEF


# Classes known to be leaves (arrays, numbers): found once, then one set lookup.
_leaf_types = set()


_LEAF_DEF = TreeDef(_LEAF, None, ())
_NONE_DEF = TreeDef("none", None, ())


def tree_flatten(tree, is_leaf=None):
    """(leaves in order, TreeDef)."""
    leaves = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _build(treedef, leaves):
    kind = treedef.kind
    if kind is _LEAF:
        return next(leaves)
    if kind == "none":
        return None
    children = [_build(c, leaves) for c in treedef.children]
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return children
    if kind is dict:
        return dict(zip(treedef.data, children))
    registered = _registry.get(kind)
    if registered is not None:
        return registered[1](treedef.data, children)
    if _is_namedtuple(kind):
        return kind(*children)
    # A dataclass is rebuilt field by field: __init__ and __post_init__ would
    # see tracers and run validation meant for user-made values.
    obj = kind.__new__(kind)
    for name, value in zip(treedef.data, children):
        object.__setattr__(obj, name, value)
    return obj


def tree_unflatten(treedef, leaves):
    """The tree of structure `treedef` with `leaves` in order."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree_unflatten: the structure {treedef!r} holds {treedef.num_leaves} leaves, got {len(leaves)}"
        )
    return _build(treedef, iter(leaves))


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    """f applied to every leaf of `tree` (and the matching leaves of `rest`,
    which must have tree's structure)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: the trees differ in structure: {treedef!r} and {r_def!r}")
        others.append(r_leaves)
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def _paths(treedef, prefix, out):
    kind = treedef.kind
    if kind is _LEAF:
        out.append(prefix)
        return
    if kind is dict:
        keys = [f"[{k!r}]" for k in treedef.data]
    elif isinstance(kind, type) and hasattr(kind, "__dataclass_fields__"):
        keys = [f".{n}" for n in treedef.data]
    elif isinstance(kind, type) and _is_namedtuple(kind):
        keys = [f".{n}" for n in kind._fields]
    else:
        keys = [f"[{i}]" for i in range(len(treedef.children))]
    for key, child in zip(keys, treedef.children):
        _paths(child, prefix + key, out)


def tree_paths(treedef, root=""):
    """Each leaf's path ("params['w']", "state.step"), in leaf order."""
    out = []
    _paths(treedef, root, out)
    return out
