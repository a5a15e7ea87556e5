"""kn.distributed: collectives over kiln's own MPI world (run the script
under `mpirun -np N python3 script.py`; without mpirun it is a world of one).
Eager and inside jit, where they are compiled into the executable and
differentiable. Ranks whose jitted graphs differ get a kn.Error, never a hang."""

from . import _kiln
from ._tree import tree_flatten

_d = _kiln._distributed

init = _d.init
rank = _d.rank
world_size = _d.world_size
barrier = _d.barrier


def rank_array():
    """This rank as a 0-d int32 array (traced inside jit: one graph for every rank)."""
    return _d.rank_array()


def all_reduce(x, op="sum"):
    """x reduced over every rank (op: "sum", "mean", "max", "min")."""
    return _d.all_reduce(x, op)


def all_gather(x, axis=0):
    """Every rank's x concatenated along `axis`, in rank order."""
    return _d.all_gather(x, axis)


def reduce_scatter(x, axis=0, op="sum"):
    """x reduced over every rank, this rank's part along `axis` kept."""
    return _d.reduce_scatter(x, axis, op)


def broadcast(x, root=0):
    """root's x on every rank."""
    return _d.broadcast(x, root)


def average_gradients(gradients, bucket_bytes=32 << 20):
    """The mean over ranks of every array leaf of a pytree, in buckets of about `bucket_bytes`."""
    leaves, treedef = tree_flatten(gradients)
    return treedef.unflatten(_d.average_leaves(leaves, bucket_bytes))
