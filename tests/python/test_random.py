"""kn.random: functional keys (JAX's style). Shapes, dtypes, determinism for a
key, independence of split keys, ranges and moments."""

import numpy as np
import pytest

import kiln as kn
from conftest import check

N = 20000  # moments of this many draws: standard errors near 0.007


def key(seed=0):
    return kn.random.key(seed)


def test_key_is_an_int32_pair():
    k = key(42)
    assert isinstance(k, kn.Array)
    assert k.shape == (2,)
    assert k.dtype in (kn.int32, kn.uint32)


def test_same_key_same_numbers_and_different_seeds_differ():
    a = np.asarray(kn.random.normal(key(1), (100,)))
    b = np.asarray(kn.random.normal(key(1), (100,)))
    c = np.asarray(kn.random.normal(key(2), (100,)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_split():
    k = key(3)
    ks = kn.random.split(k)
    assert ks.shape == (2, 2) and ks.dtype == k.dtype
    ks4 = kn.random.split(k, 4)
    assert ks4.shape == (4, 2)
    rows = [tuple(r) for r in np.asarray(ks4).tolist()]
    assert len(set(rows)) == 4
    assert tuple(np.asarray(k).tolist()) not in rows
    draws = [np.asarray(kn.random.uniform(ks4[i], (50,))) for i in range(4)]
    for i in range(4):
        for j in range(i):
            assert not np.array_equal(draws[i], draws[j])
    # deterministic
    np.testing.assert_array_equal(np.asarray(kn.random.split(k, 4)), np.asarray(ks4))


@pytest.mark.parametrize("shape", [(), (3,), (2, 5), (0, 4)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_uniform_and_normal_shapes_and_dtypes(shape, dtype):
    kd_ = getattr(kn, dtype)
    u = kn.random.uniform(key(4), shape, dtype=kd_)
    n = kn.random.normal(key(4), shape, dtype=kd_)
    assert u.shape == shape and u.dtype == kd_
    assert n.shape == shape and n.dtype == kd_


def test_uniform_defaults_to_float32_and_shape_as_list():
    u = kn.random.uniform(key(5), [3, 2])
    assert u.dtype == kn.float32 and u.shape == (3, 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_range_and_moments(dtype):
    u = np.asarray(kn.random.uniform(key(6), (N,), dtype=getattr(kn, dtype)))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    assert abs(u.var() - 1 / 12) < 0.005
    v = np.asarray(kn.random.uniform(key(6), (N,), minval=-2.0, maxval=3.0))
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.05


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_moments(dtype):
    z = np.asarray(kn.random.normal(key(7), (N,), dtype=getattr(kn, dtype))).astype(np.float64)
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.03
    assert abs(z.std() - 1.0) < 0.03
    assert abs(np.mean(z ** 3)) < 0.1
    assert abs(np.mean(z ** 4) - 3.0) < 0.2


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int8"])
def test_randint(dtype):
    r = kn.random.randint(key(8), (N,), -3 if not dtype.startswith("u") else 2, 9, dtype=getattr(kn, dtype))
    assert r.dtype == getattr(kn, dtype) and r.shape == (N,)
    v = np.asarray(r)
    lo = -3 if not dtype.startswith("u") else 2
    assert v.min() == lo and v.max() == 8
    counts = np.bincount(v - lo)
    assert counts.min() > N / (9 - lo) * 0.85


def test_randint_default_dtype_is_int32():
    assert kn.random.randint(key(9), (4,), 0, 10).dtype == kn.int32


def test_bernoulli():
    b = kn.random.bernoulli(key(10), 0.3, (N,))
    assert b.dtype == kn.bool_ and b.shape == (N,)
    assert abs(np.asarray(b).mean() - 0.3) < 0.02


def test_categorical():
    logits = np.log(np.array([0.1, 0.2, 0.7], np.float32))
    c = kn.random.categorical(key(11), kn.asarray(np.broadcast_to(logits, (N, 3)).copy()), axis=-1)
    assert c.shape == (N,) and c.dtype in (kn.int32, kn.int64)
    freq = np.bincount(np.asarray(c), minlength=3) / N
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.02)


def test_permutation_and_shuffle():
    p = np.asarray(kn.random.permutation(key(12), 50))
    assert sorted(p.tolist()) == list(range(50))
    assert p.tolist() != list(range(50))
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    got = np.asarray(kn.random.permutation(key(13), kn.asarray(x)))
    assert got.shape == x.shape
    assert sorted(got[:, 0].tolist()) == x[:, 0].tolist()
    np.testing.assert_array_equal(got[:, 1], got[:, 0] + 1)  # rows move whole


def test_choice():
    c = np.asarray(kn.random.choice(key(14), 5, (N,)))
    assert c.min() == 0 and c.max() == 4
    w = np.asarray(kn.random.choice(key(15), 10, (10,), replace=False))
    assert sorted(w.tolist()) == list(range(10))
    p = kn.asarray(np.array([0.0, 0.5, 0.5], np.float32))
    d = np.asarray(kn.random.choice(key(16), 3, (1000,), p=p))
    assert (d != 0).all()


def test_other_distributions():
    g = np.asarray(kn.random.gumbel(key(17), (N,))).astype(np.float64)
    assert abs(g.mean() - 0.5772) < 0.05
    lap = np.asarray(kn.random.laplace(key(18), (N,))).astype(np.float64)
    assert abs(lap.mean()) < 0.05 and abs(lap.var() - 2.0) < 0.15
    t = np.asarray(kn.random.truncated_normal(key(19), -1.0, 2.0, (N,)))
    assert t.min() > -1.0 and t.max() < 2.0


def test_multivariate_normal():
    mean = np.array([1.0, -2.0])
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    d = np.asarray(kn.random.multivariate_normal(key(20), kn.asarray(mean), kn.asarray(cov), (N,)))
    assert d.shape == (N, 2)
    np.testing.assert_allclose(d.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(d.T), cov, atol=0.08)


def test_key_from_large_seed_and_determinism_across_calls():
    k = kn.random.key(2**40 + 7)
    check(kn.random.uniform(k, (3,)), np.asarray(kn.random.uniform(kn.random.key(2**40 + 7), (3,))))
