"""kn.while_loop, kn.cond, kn.switch, kn.fori_loop and kn.scan: results
against plain Python/NumPy loops, eager and under kn.jit, with pytree carries;
that they compile as loops (a small graph, one compile); closures; grad
(against PyTorch autograd of the unrolled loop), jvp and vmap through them;
and errors naming both sides and the user's line.

Each failing call stays on the line right after its `with raises_at(...)`.
"""

import collections
import re

import numpy as np
import pytest
import torch

import kiln as kn
from conftest import check, raises_at

Point = collections.namedtuple("Point", "pos vel")


def f32(a):
    return kn.asarray(np.asarray(a, dtype=np.float32))


def f64(a):
    return kn.asarray(np.asarray(a, dtype=np.float64))


def i32(a):
    return kn.asarray(np.asarray(a, dtype=np.int32))


def compiled(f):
    """Executables a jitted function built or loaded (the persistent cache turns compiles into loads)."""
    stats = f.stats()
    return stats.compiles + stats.persistent_hits


def collatz_steps_python(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def collatz_steps(n):
    def body(c):
        m, steps = c
        return kn.where(m % 2 == 0, m // 2, 3 * m + 1), steps + 1

    return kn.while_loop(lambda c: c[0] != 1, body, (n, kn.zeros((), dtype=kn.int32)))[1]


def newton_sqrt(a):
    """sqrt(a) by Newton's method until |x^2 - a| is small, and the number of steps."""

    def body(c):
        x, steps = c
        return 0.5 * (x + a / x), steps + 1

    return kn.while_loop(lambda c: kn.abs(c[0] * c[0] - a) > 1e-10 * a, body, (a, kn.zeros((), dtype=kn.int32)))


# ---- while_loop ------------------------------------------------------------------------------


def test_while_loop_halving_counts_like_python():
    x0 = f32([40.0, 3.0])
    out_x, out_steps = kn.while_loop(
        lambda c: kn.max(c[0]) >= 1.0, lambda c: (c[0] * 0.5, c[1] + 1), (x0, kn.zeros((), dtype=kn.int32))
    )
    x, steps = np.array([40.0, 3.0], np.float32), 0
    while x.max() >= 1.0:
        x, steps = x * np.float32(0.5), steps + 1
    check(out_x, x)
    check(out_steps, np.int32(steps))
    # A condition false at the start runs the body no times.
    untouched = kn.while_loop(lambda c: kn.sum(c) < 0, lambda c: c * 100, f32([1.0, 2.0]))
    check(untouched, np.array([1.0, 2.0], np.float32))


def test_while_loop_collatz_in_jit_data_dependent_trip_count():
    f = kn.jit(collatz_steps)
    for n in [1, 6, 7, 27, 97]:
        check(f(i32(n)), np.int32(collatz_steps_python(n)))
    # The trip count changes with the data, never the graph: one compile.
    assert compiled(f) == 1


def test_while_loop_newton_converges_in_jit():
    f = kn.jit(newton_sqrt)
    for a in [2.0, 9.0, 1e4]:
        root, steps = f(f64(a))
        check(root, np.sqrt(np.float64(a)), rtol=1e-9)
        assert 1 <= int(steps) < 40
    # Eager gives the same steps as jit.
    root, steps = newton_sqrt(f64(1e4))
    assert int(steps) == int(f(f64(1e4))[1])
    assert compiled(f) == 1


def test_while_loop_namedtuple_carry_keeps_its_type():
    x = f32([0.0, 1.0, 2.0])
    out = kn.while_loop(lambda s: s.pos[0] < 10, lambda s: Point(s.pos + s.vel, s.vel), Point(x, x + 1))
    assert type(out) is Point
    pos, vel = np.array([0.0, 1.0, 2.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    while pos[0] < 10:
        pos = pos + vel
    check(out.pos, pos)
    check(out.vel, vel)


def test_while_loop_python_numbers_in_carry():
    count, value = kn.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, 2.0))
    assert int(count) == 5
    assert float(value) == pytest.approx(2.0 * 1.5**5, rel=1e-6)
    assert count.dtype == kn.int32 and value.dtype == kn.float32


# ---- cond and switch -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pred, taken",
    [(True, True), (False, False), ("array True", True), ("array 0", False), ("array 7", True)],
)
def test_cond_predicates(pred, taken):
    pred = {"array True": kn.asarray(True), "array 0": i32(0), "array 7": i32(7)}.get(pred, pred)
    x = f32([1.0, -2.0, 3.0])
    out = kn.cond(pred, lambda a: a * 10, lambda a: a - 1, x)
    base = np.array([1.0, -2.0, 3.0], np.float32)
    check(out, base * 10 if taken else base - 1)


def test_cond_several_operands_and_tuple_result():
    a, b = f32([1.0, 2.0]), f32([10.0, 20.0])
    hi, lo = kn.cond(kn.sum(a) > kn.sum(b), lambda p, q: (p, q), lambda p, q: (q, p), a, b)
    check(hi, np.array([10.0, 20.0], np.float32))
    check(lo, np.array([1.0, 2.0], np.float32))


def test_cond_dict_result_and_no_operands():
    out = kn.cond(False, lambda: {"a": f32(1.0), "b": [f32(2.0)]}, lambda: {"a": f32(-1.0), "b": [f32(-2.0)]})
    assert set(out) == {"a", "b"} and isinstance(out["b"], list)
    check(out["a"], np.float32(-1.0))
    check(out["b"][0], np.float32(-2.0))


def test_cond_in_jit_compiles_once_for_both_branches():
    f = kn.jit(lambda p, x: kn.cond(p, lambda a: a * 2, lambda a: a + 100, x))
    x = f32([0.0, 1.0, 2.0])
    check(f(True, x), np.array([0.0, 2.0, 4.0], np.float32))
    check(f(False, x), np.array([100.0, 101.0, 102.0], np.float32))
    check(f(kn.asarray(True), x), np.array([0.0, 2.0, 4.0], np.float32))
    assert compiled(f) == 1
    g = kn.jit(lambda x: kn.cond(kn.sum(x) > 0, lambda a: a * 2, lambda a: -a, x))
    check(g(f32([1.0, 2.0])), np.array([2.0, 4.0], np.float32))
    check(g(f32([-1.0, -2.0])), np.array([1.0, 2.0], np.float32))
    assert compiled(g) == 1


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_clamps_the_index(index):
    x = f32([1.0, 2.0])
    branches = [lambda a: a, lambda a: a * 2, lambda a: -a]
    expected = [np.array([1.0, 2.0]), np.array([2.0, 4.0]), np.array([-1.0, -2.0])][min(max(index, 0), 2)]
    check(kn.switch(index, branches, x), expected.astype(np.float32))
    check(kn.switch(i32(index), branches, x), expected.astype(np.float32))


def test_switch_in_jit_one_compile_for_every_index():
    f = kn.jit(lambda i, x: kn.switch(i, [lambda a: a * 2, lambda a: a + 100, lambda a: -a], x))
    x = f32([0.0, 1.0, 2.0])
    base = np.array([0.0, 1.0, 2.0], np.float32)
    for i, expected in [(0, base * 2), (1, base + 100), (2, -base), (-5, base * 2), (9, -base)]:
        check(f(i, x), expected)
    assert compiled(f) == 1


def test_switch_single_branch_and_tuple_operands():
    out = kn.switch(3, [lambda a, b: (a + b, a * b)], f32(2.0), f32(5.0))
    assert isinstance(out, tuple) and len(out) == 2
    check(out[0], np.float32(7.0))
    check(out[1], np.float32(10.0))


# ---- fori_loop -------------------------------------------------------------------------------


@pytest.mark.parametrize("lo, hi", [(0, 5), (3, 9), (4, 4), (7, 2)])
def test_fori_loop_python_bounds_match_python(lo, hi):
    x = f32([1.0, 2.0, 3.0])
    out = kn.fori_loop(lo, hi, lambda i, c: c * 0.5 + i.astype(kn.float32), x)
    expected = np.array([1.0, 2.0, 3.0], np.float32)
    for i in range(lo, hi):
        expected = expected * np.float32(0.5) + np.float32(i)
    check(out, expected)


@pytest.mark.parametrize("lo, hi", [(0, 5), (2, 6), (5, 2)])
def test_fori_loop_array_bounds_match_python(lo, hi):
    x = f32([1.0, 2.0])
    out = kn.fori_loop(i32(lo), i32(hi), lambda i, c: c + i.astype(kn.float32) ** 2, x)
    check(out, np.array([1.0, 2.0], np.float32) + sum(i * i for i in range(lo, hi)))
    jitted = kn.jit(lambda lo, hi, x: kn.fori_loop(lo, hi, lambda i, c: c + i.astype(kn.float32) ** 2, x))
    check(jitted(lo, hi, x), np.array([1.0, 2.0], np.float32) + sum(i * i for i in range(lo, hi)))


def test_fori_loop_nested_dict_list_tuple_carry():
    x = f32([0.0, 1.0, 2.0])

    def body(i, c):
        return {"a": c["a"] + 1, "b": [c["b"][0] * 2, (c["b"][1][0] - 1,)]}

    out = kn.fori_loop(0, 3, body, {"a": x, "b": [x, (x,)]})
    assert isinstance(out, dict) and isinstance(out["b"], list) and isinstance(out["b"][1], tuple)
    base = np.array([0.0, 1.0, 2.0], np.float32)
    check(out["a"], base + 3)
    check(out["b"][0], base * 8)
    check(out["b"][1][0], base - 3)


def test_fori_loop_python_numbers_in_carry():
    count, value = kn.fori_loop(0, 3, lambda i, c: (c[0] + 1, c[1] * 2.0), (1, 1.5))
    assert int(count) == 4 and float(value) == 12.0
    assert count.dtype == kn.int32 and value.dtype == kn.float32


def test_fori_loop_python_int_carry_plus_index():
    # The canonical loop: sum of i for i in range(5), started from a Python 0.
    out = kn.fori_loop(0, 5, lambda i, total: total + i, 0)
    assert int(out) == 10


def test_fori_loop_nested_loops():
    out = kn.fori_loop(0, 3, lambda i, c: kn.fori_loop(0, 4, lambda j, d: d + (i * j).astype(kn.float32), c), f32(0))
    check(out, np.float32(sum(i * j for i in range(3) for j in range(4))))


# ---- scan ------------------------------------------------------------------------------------


def test_scan_carry_and_ys_match_python():
    data = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    carry, ys = kn.scan(lambda c, v: (c + v, c * v), f32(0.0), f32(data))
    c, expected = np.float32(0.0), []
    for v in data:
        expected.append(c * v)
        c = c + v
    check(carry, c)
    check(ys, np.array(expected, np.float32))


def test_scan_reverse():
    data = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    carry, ys = kn.scan(lambda c, v: (c * 2 + v, c), f32(0.0), f32(data), reverse=True)
    c, expected = np.float32(0.0), np.zeros(4, np.float32)
    for k in reversed(range(4)):
        expected[k] = c
        c = c * 2 + data[k]
    check(carry, np.float32(c))
    check(ys, expected)


def test_scan_without_xs_uses_length():
    carry, ys = kn.scan(lambda c, _: ((c[0] + c[1], c[0]), c[0]), (i32(0), i32(1)), None, length=10)
    fib = [0, 1]
    while len(fib) < 12:
        fib.append(fib[-1] + fib[-2])
    check(ys, np.array(fib[:10], np.int32))
    check(carry[0], np.int32(fib[10]))
    check(carry[1], np.int32(fib[9]))
    carry, ys = kn.scan(lambda c, _: (c + 1, c), f32(0), None, length=0)
    check(carry, np.float32(0))
    assert ys.shape == (0,)


def test_scan_pytree_xs_and_ys():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.array([1.0, 2.0, 3.0], np.float32)

    def step(c, x):
        total = c["total"] + x["a"] * x["b"][0]
        return {"total": total}, (total, {"row_sum": kn.sum(x["a"]), "b": [x["b"][0] * 2]})

    carry, (totals, extra) = kn.scan(step, {"total": kn.zeros((2,), dtype=kn.float32)}, {"a": f32(a), "b": [f32(b)]})
    expected = np.cumsum(a * b[:, None], axis=0)
    check(carry["total"], expected[-1])
    check(totals, expected)
    check(extra["row_sum"], a.sum(axis=1))
    assert isinstance(extra["b"], list)
    check(extra["b"][0], b * 2)


def test_scan_ys_none_and_namedtuple_carry():
    xs = np.array([0.5, 0.25, 1.0], np.float32)
    out, ys = kn.scan(lambda s, v: (Point(s.pos + s.vel * v, s.vel), None), Point(f32(0.0), f32(2.0)), f32(xs))
    assert ys is None and type(out) is Point
    check(out.pos, np.float32(2.0 * xs.sum()))


def test_scan_in_jit_matches_eager_and_numpy():
    rng = np.random.default_rng(0)
    xs = rng.uniform(-1, 1, (20, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3)).astype(np.float32)

    def rnn(w, xs):
        return kn.scan(lambda h, x: (kn.tanh(h @ w + x), kn.sum(h)), kn.zeros((3,), dtype=kn.float32), xs)

    h, expected_ys = np.zeros(3, np.float32), []
    for x in xs:
        expected_ys.append(h.sum())
        h = np.tanh(h @ w + x)
    for fn in (rnn, kn.jit(rnn)):
        last, ys = fn(f32(w), f32(xs))
        check(last, h, rtol=1e-5, atol=1e-5)
        check(ys, np.array(expected_ys, np.float32), rtol=1e-5, atol=1e-5)


def test_control_flow_nested_cond_in_scan_in_jit():
    xs = np.array([1.0, 2.0, 0.5, 3.0], np.float32)

    def f(xs):
        return kn.scan(lambda c, v: (kn.cond(v > 1.5, lambda a: a + v, lambda a: a - v, c), c), f32(0.0), xs)

    c, expected = np.float32(0.0), []
    for v in xs:
        expected.append(c)
        c = c + v if v > 1.5 else c - v
    carry, ys = kn.jit(f)(f32(xs))
    check(carry, c)
    check(ys, np.array(expected, np.float32))


# ---- they compile as loops, not unrolled ---------------------------------------------------


def test_fori_loop_of_1000_steps_is_a_small_graph():
    x = f32([1.0, 2.0, 3.0, 4.0])
    f = kn.jit(lambda x: kn.fori_loop(0, 1000, lambda i, c: c * 0.999 + 1.0, x))
    graph = f.lower(x)
    text = str(graph)
    assert graph.num_nodes < 10
    assert len(text.splitlines()) < 30
    assert "length=1000" in text
    short = kn.jit(lambda x: kn.fori_loop(0, 10, lambda i, c: c * 0.999 + 1.0, x)).lower(x)
    assert short.num_nodes == graph.num_nodes
    expected = np.array([1.0, 2.0, 3.0, 4.0], np.float64)
    for _ in range(1000):
        expected = expected * 0.999 + 1.0
    check(f(x), expected.astype(np.float32), rtol=1e-4)


def test_scan_and_while_graphs_do_not_grow_with_trip_count():
    long_xs = f32(np.ones((5000, 2)))
    scan_f = kn.jit(lambda xs: kn.scan(lambda c, x: (c + x, c), kn.zeros((2,), dtype=kn.float32), xs))
    graph = scan_f.lower(long_xs)
    assert graph.num_nodes < 10 and len(str(graph).splitlines()) < 30
    check(scan_f(long_xs)[0], np.full(2, 5000.0, np.float32))
    while_graph = kn.jit(collatz_steps).lower(i32(27))
    assert while_graph.num_nodes < 10 and len(str(while_graph).splitlines()) < 40


def test_fori_loop_array_bounds_new_trip_count_does_not_recompile():
    f = kn.jit(lambda x, n: kn.fori_loop(kn.asarray(0), n, lambda i, c: c + 1.0, x))
    x = f32([0.0, 1.0])
    for n in [3, 10, 0, 1000]:
        check(f(x, n), np.array([n, n + 1], np.float32))
    assert compiled(f) == 1
    assert f.stats().calls == 4


def test_changed_captured_numbers_are_seen_under_jit():
    n = 3
    f = kn.jit(lambda x: kn.fori_loop(0, n, lambda i, c: c + 1, x))
    x = f32([0.0])
    check(f(x), np.array([3.0], np.float32))
    n = 7  # a captured trip count that changes is a new graph, never a stale one
    check(f(x), np.array([7.0], np.float32))
    assert compiled(f) == 2
    state = {"scale": 2.0}
    g = kn.jit(lambda x: kn.fori_loop(0, 3, lambda i, c: c * state["scale"], x))
    check(g(f32([1.0])), np.array([8.0], np.float32))
    state["scale"] = 3.0  # a number read inside the body
    check(g(f32([1.0])), np.array([27.0], np.float32))


def test_changed_trip_count_explanation_shows_lengths():
    n = 3
    f = kn.jit(lambda x: kn.fori_loop(0, n, lambda i, c: c + 1, x))
    f(f32([0.0]))
    n = 7
    f(f32([0.0]))
    explanation = f.last_miss_explanation()
    numbers = set(re.findall(r"\b\d+\b", re.sub(r"\S+\.py:\d+", "", explanation)))
    assert {"3", "7"} <= numbers, explanation


# ---- closures --------------------------------------------------------------------------------


def test_body_reads_outer_concrete_array():
    w = f32([1.0, 10.0, 100.0])
    f = lambda x: kn.fori_loop(0, 4, lambda i, c: c * 0.5 + w, x)  # noqa: E731
    expected = np.zeros(3, np.float32)
    for _ in range(4):
        expected = expected * np.float32(0.5) + np.array([1.0, 10.0, 100.0], np.float32)
    check(f(kn.zeros((3,), dtype=kn.float32)), expected)
    jitted = kn.jit(f)
    check(jitted(kn.zeros((3,), dtype=kn.float32)), expected)
    assert jitted.lower(kn.zeros((3,), dtype=kn.float32)).num_captures >= 1


def test_body_reads_outer_traced_values_in_jit():
    @kn.jit
    def f(x, y):
        s = kn.sum(y)
        c = kn.fori_loop(0, 3, lambda i, c: c + s + x, x)
        flipped = kn.cond(s > 0, lambda a: a * s, lambda a: a - s, c)
        total, _ = kn.scan(lambda t, v: (t + v * s, None), f32(0.0), y)
        return flipped, total

    x, y = np.array([0.0, 1.0, 2.0], np.float32), np.array([1.0, 1.0, 1.0], np.float32)
    flipped, total = f(f32(x), f32(y))
    s = y.sum()
    check(flipped, (x + 3 * (s + x)) * s)
    check(total, np.float32((y * s).sum()))
    y2 = -y
    flipped, _ = f(f32(x), f32(y2))
    s2 = y2.sum()
    check(flipped, (x + 3 * (s2 + x)) - s2)
    assert compiled(f) == 1


@pytest.mark.parametrize("jitted", [False, True])
def test_random_keys_split_inside_fori_loop(jitted):
    def body(i, c):
        key, acc = c
        key, sub = kn.random.split(key)
        return key, acc + kn.random.uniform(sub, (3,))

    def run(key):
        return kn.fori_loop(0, 4, body, (key, kn.zeros((3,), dtype=kn.float32)))

    key, acc = (kn.jit(run) if jitted else run)(kn.random.key(7))
    k, expected = kn.random.key(7), np.zeros(3, np.float32)
    draws = []
    for _ in range(4):
        k, sub = kn.random.split(k)
        draw = np.asarray(kn.random.uniform(sub, (3,)))
        draws.append(draw)
        expected = expected + draw
    check(acc, expected, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(key), np.asarray(k))
    # every step drew fresh numbers
    assert len({tuple(d.tolist()) for d in draws}) == 4


# ---- differentiation -------------------------------------------------------------------------


def _torch_grad(loss, *values):
    tensors = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    grads = torch.autograd.grad(loss(*tensors), tensors)
    return [g.numpy() for g in grads]


def test_grad_fori_loop_static_bounds_matches_torch():
    w = np.array([0.3, -0.2, 0.7, 1.1], np.float64)

    def kiln_loss(w):
        return kn.sum(kn.fori_loop(0, 6, lambda i, c: kn.tanh(c * w + 0.1 * i.astype(kn.float64)), w))

    def torch_loss(w):
        c = w
        for i in range(6):
            c = torch.tanh(c * w + 0.1 * i)
        return c.sum()

    (expected,) = _torch_grad(torch_loss, w)
    check(kn.grad(kiln_loss)(f64(w)), expected)
    check(kn.jit(kn.grad(kiln_loss))(f64(w)), expected)


@pytest.mark.parametrize("reverse", [False, True])
def test_grad_scan_matches_torch(reverse):
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (3, 3))
    xs = rng.uniform(-1, 1, (7, 3))
    h0 = rng.uniform(-1, 1, 3)

    def kiln_loss(w, xs, h0):
        h, ys = kn.scan(lambda h, x: (kn.sin(h @ w + x), kn.sum(h * h)), h0, xs, reverse=reverse)
        return kn.sum(h) + kn.sum(ys)

    def torch_loss(w, xs, h0):
        h, total = h0, 0.0
        order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
        for k in order:
            total = total + (h * h).sum()
            h = torch.sin(h @ w + xs[k])
        return h.sum() + total

    expected = _torch_grad(torch_loss, w, xs, h0)
    got = kn.grad(kiln_loss, argnums=(0, 1, 2))(f64(w), f64(xs), f64(h0))
    for g, e in zip(got, expected):
        check(g, e)


def test_grad_through_cond_and_switch_matches_torch():
    for value in [2.0, -3.0]:
        w = np.float64(value)
        got = kn.grad(lambda w: kn.cond(w > 0, lambda a: a * a * a, lambda a: kn.sin(a), w))(f64(w))
        (expected,) = _torch_grad(lambda t: t**3 if value > 0 else torch.sin(t), w)
        check(got, expected)
    got = kn.grad(lambda w: kn.switch(2, [lambda a: a, lambda a: a * a, lambda a: kn.exp(a) * a], w))(f64(0.5))
    (expected,) = _torch_grad(lambda t: torch.exp(t) * t, np.float64(0.5))
    check(got, expected)


def test_grad_fori_loop_with_int_counter_in_carry():
    def loss(w):
        init = (kn.zeros((), dtype=kn.int32), f64(1.0))
        counter, value = kn.fori_loop(0, 3, lambda i, c: (c[0] + 1, c[1] * w), init)
        return value * counter.astype(kn.float64)

    # 3 * w^3 -> 9 w^2
    check(kn.grad(loss)(f64(2.0)), np.float64(36.0))


def test_jvp_through_while_loop_matches_finite_difference():
    a, eps = 3.0, 1e-6
    (root, steps), (tangent, _) = kn.jvp(newton_sqrt, (f64(a),), (f64(1.0),))
    check(root, np.sqrt(np.float64(a)), rtol=1e-9)
    fd = (float(newton_sqrt(f64(a + eps))[0]) - float(newton_sqrt(f64(a - eps))[0])) / (2 * eps)
    assert float(tangent) == pytest.approx(fd, rel=1e-5)
    assert float(tangent) == pytest.approx(0.5 / np.sqrt(a), rel=1e-6)


def test_jvp_through_fori_loop_with_array_bounds_matches_finite_difference():
    def f(w):
        return kn.fori_loop(i32(0), i32(4), lambda i, c: kn.sin(c) * w, f64(0.8))

    w, eps = 1.3, 1e-6
    value, tangent = kn.jvp(f, (f64(w),), (f64(1.0),))
    fd = (float(f(f64(w + eps))) - float(f(f64(w - eps)))) / (2 * eps)
    assert float(tangent) == pytest.approx(fd, rel=1e-6)


def test_grad_through_while_loop_is_refused_naming_the_loop():
    def loss(w):
        init = (kn.zeros((), dtype=kn.int32), w)
        return kn.sum(kn.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * w), init)[1])

    loop_line = loss.__code__.co_firstlineno + 2
    with raises_at(kn.Error, "[while_loop]", "reverse-mode", "jvp", line=loop_line):
        kn.grad(loss)(f32([1.0, 2.0]))


# ---- vmap ------------------------------------------------------------------------------------


def test_vmap_cond_lanes_take_different_branches():
    data = np.array([-2.0, -0.5, 1.0, 3.0], np.float32)
    out = kn.vmap(lambda v: kn.cond(v > 0, lambda a: a * 10, lambda a: a - 1, v))(f32(data))
    check(out, np.array([v * 10 if v > 0 else v - 1 for v in data], np.float32))


def test_vmap_while_loop_lanes_stop_at_different_steps():
    ns = [1, 6, 7, 27, 3]
    expected = np.array([collatz_steps_python(n) for n in ns], np.int32)
    check(kn.vmap(collatz_steps)(i32(ns)), expected)
    check(kn.jit(kn.vmap(collatz_steps))(i32(ns)), expected)


def test_vmap_scan_per_lane():
    data = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    carry, ys = kn.vmap(lambda xs: kn.scan(lambda c, v: (c * 0.5 + v, c * v), f32(0.0), xs))(f32(data))
    for lane in range(3):
        c, expected = np.float32(0.0), []
        for v in data[lane]:
            expected.append(c * v)
            c = c * np.float32(0.5) + v
        check(carry[lane], c)
        check(ys[lane], np.array(expected, np.float32))


def test_vmap_fori_loop_array_bounds_and_switch_per_lane():
    ns = np.array([0, 1, 2, 3], np.int32)
    data = np.array([-2.0, -1.0, 2.0, 3.0], np.float32)
    out = kn.vmap(lambda n, v: kn.fori_loop(kn.asarray(0), n, lambda i, c: c * 2, v))(i32(ns), f32(data))
    check(out, (data * 2.0**ns).astype(np.float32))
    idx = np.array([0, 1, 2, 5], np.int32)
    out = kn.vmap(lambda i, v: kn.switch(i, [lambda a: a, lambda a: a * 2, lambda a: -a], v))(i32(idx), f32(data))
    check(out, np.array([[v, v * 2, -v][min(i, 2)] for i, v in zip(idx, data)], np.float32))


def test_vmap_of_grad_through_scan():
    ws = np.array([1.0, 2.0, -0.5], np.float32)
    xs = np.ones((3, 3), np.float32)
    per_lane = kn.vmap(kn.grad(lambda w, xs: kn.scan(lambda c, v: (c * w + v, c), f32(0.0), xs)[0]))
    # c = w^2 + w + 1 -> 2w + 1
    check(per_lane(f32(ws), f32(xs)), 2 * ws + 1)


# ---- errors ----------------------------------------------------------------------------------


def test_cond_branches_with_different_structures():
    x = f32([1.0, 2.0])
    with raises_at(TypeError, "cond", "the true branch", "the false branch", "structure"):
        kn.cond(True, lambda a: (a, a), lambda a: a, x)


@pytest.mark.parametrize(
    "other, fragments",
    [
        (lambda a: a[:1], ("float32[1]", "float32[2]")),
        (lambda a: a.astype(kn.int32), ("int32[2]", "float32[2]")),
    ],
    ids=["shape", "dtype"],
)
def test_cond_branches_with_different_shapes_or_dtypes(other, fragments):
    x = f32([1.0, 2.0])
    with raises_at(TypeError, "cond", "the true branch", "the false branch", *fragments):
        kn.cond(kn.asarray(True), other, lambda a: a, x)


def test_switch_branches_that_differ_name_both():
    x = f32([1.0, 2.0])
    with raises_at(TypeError, "switch", "branch 0", "branch 2", "float64[2]", "float32[2]"):
        kn.switch(0, [lambda a: a, lambda a: a, lambda a: a.astype(kn.float64)], x)


def test_cond_error_inside_jit_names_the_line():
    def f(x):
        return kn.cond(x[0] > 0, lambda a: {"y": a}, lambda a: {"z": a}, x)

    cond_line = f.__code__.co_firstlineno + 1
    with raises_at(TypeError, "the true branch", "the false branch", "'y'", "'z'", line=cond_line):
        kn.jit(f)(f32([1.0]))


def test_scan_body_changing_the_carry_shape():
    xs = f32([1.0, 2.0, 3.0])
    with raises_at(TypeError, "scan", "the carry the body returns", "the initial carry", "float32[2]", "float32[]"):
        kn.scan(lambda c, v: (kn.stack([c, v]), c), kn.zeros((), dtype=kn.float32), xs)


def test_while_loop_body_changing_carry_structure():
    x = f32([1.0])
    with raises_at(TypeError, "while_loop", "the body's result", "the initial carry", "[*, *]", "(*, *)"):
        kn.while_loop(lambda c: c[0] < 3, lambda c: [c[0] + 1, c[1]], (kn.asarray(0), x))


def test_fori_loop_body_changing_dtype():
    x = f32([1.0, 2.0])
    with raises_at(TypeError, "fori_loop", "the body's result", "the initial carry", "float64[2]", "float32[2]"):
        kn.fori_loop(0, 3, lambda i, c: c.astype(kn.float64), x)


def test_while_predicate_that_is_not_a_scalar():
    x = f32([1.0, 2.0])
    with raises_at(kn.Error, "[while_loop]", "condition", "0-d", "bool[2]"):
        kn.while_loop(lambda c: c < 3, lambda c: c + 1, x)


@pytest.mark.parametrize(
    "pred, shown", [("vector", "bool[3]"), ("float", "f32[]")], ids=["not-0-d", "not-bool-or-int"]
)
def test_cond_predicate_that_is_not_a_scalar_bool_or_int(pred, shown):
    pred = kn.asarray([True, False, True]) if pred == "vector" else kn.asarray(1.5)
    with raises_at(kn.Error, "[cond]", "predicate", "0-d", shown):
        kn.cond(pred, lambda a: a, lambda a: -a, f32([1.0]))


def test_scan_without_xs_and_without_length():
    with raises_at(kn.Error, "[scan]", "no length"):
        kn.scan(lambda c, v: (c, c), f32(0.0), None)


def test_scan_leading_extents_disagree():
    with raises_at(kn.Error, "[scan]", "leading extent", "[0]", "[1]", "4", "2"):
        kn.scan(lambda c, v: (c, None), f32(0.0), [f32(np.ones(4)), f32(np.ones(2))])
    with raises_at(kn.Error, "[scan]", "leading extent", "length", "7"):
        kn.scan(lambda c, v: (c, None), f32(0.0), f32(np.ones(4)), length=7)


def test_scan_body_that_does_not_return_a_pair():
    with raises_at(TypeError, "scan", "(carry, y)"):
        kn.scan(lambda c, v: c + v, f32(0.0), f32([1.0, 2.0]))


def test_switch_with_no_branches():
    with raises_at(ValueError, "switch", "no branches"):
        kn.switch(0, [], f32([1.0]))


def test_non_array_leaf_in_a_carry_is_refused():
    with raises_at(TypeError, "while_loop", "str", "register_pytree_node"):
        kn.while_loop(lambda c: c[0] < 1, lambda c: c, (kn.asarray(0), "label"))


def _kn_names(message):
    return set(re.findall(r"\bkn\.([A-Za-z_][A-Za-z_0-9]*)", message))


def test_scan_error_hint_names_only_python_api():
    with raises_at(kn.Error, "[scan]") as r:
        kn.scan(lambda c, v: (c, c), f32(0.0), None)
    missing = {name for name in _kn_names(str(r.value)) if not hasattr(kn, name)}
    assert not missing, f"the hint names kn.{missing}, which kn lacks:\n{r.value}"


def test_weak_carry_mismatch_is_accepted_or_explained_in_python():
    # JAX promotes a weakly typed carry (a Python 0.0) to the body's float32;
    # kiln may refuse it instead, but then its hint must be Python.
    try:
        carry, ys = kn.scan(lambda c, v: (c + v, c), 0.0, f32([1.0, 2.0]))
    except kn.Error as error:
        message = str(error)
        assert "C++" not in message and "0.0f" not in message, message
        missing = {name for name in _kn_names(message) if not hasattr(kn, name)}
        assert not missing, f"the hint names kn.{missing}, which kn lacks:\n{message}"
    else:
        assert float(carry) == 3.0
        np.testing.assert_array_equal(np.asarray(ys), [0.0, 1.0])
