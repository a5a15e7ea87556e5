"""kn.random: counter-based random numbers from explicit keys (JAX's model:
the same key gives the same numbers, in eager code and compiled code alike)."""

from . import _kiln

_random = _kiln._random


def key(seed):
    return _random.key(int(seed))


def split(key, num=2):
    """`num` new keys as an int32[num, 2] array (index it, or unpack it)."""
    return _random.split(key, num)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    return _random.uniform(key, shape, dtype, minval, maxval)


def normal(key, shape=(), dtype=None):
    return _random.normal(key, shape, dtype)


def randint(key, shape, minval, maxval, dtype=None):
    return _random.randint(key, shape, minval, maxval, dtype)


def bernoulli(key, p=0.5, shape=()):
    return _random.bernoulli(key, p, shape)


def gumbel(key, shape=(), dtype=None):
    return _random.gumbel(key, shape, dtype)


def laplace(key, shape=(), dtype=None):
    return _random.laplace(key, shape, dtype)


def truncated_normal(key, lower, upper, shape=(), dtype=None):
    return _random.truncated_normal(key, lower, upper, shape, dtype)


def categorical(key, logits, axis=-1):
    return _random.categorical(key, logits, axis)


def permutation(key, x, axis=0):
    return _random.permutation(key, x, axis)


def shuffle(key, x, axis=0):
    return _random.shuffle(key, x, axis)


def choice(key, a, shape=(), replace=True, p=None):
    return _random.choice(key, a, shape, replace, p)


def multivariate_normal(key, mean, cov, shape=()):
    return _random.multivariate_normal(key, mean, cov, shape)
