"""kn.jit: the cache's promises in Python. Every test counts compiles exactly:
the seed documents' traps (a closure over this step's batch, a counter on a
module, a global threshold, .item() in a step, sequence lengths that change
every batch, jit() inside the loop) are tests here.

KILN_CACHE is turned off for this file so that "compiled" means compiled in
this process (the persistent cache would turn compiles into loads).
"""

import dataclasses
import os
import threading
from collections import namedtuple

os.environ["KILN_CACHE"] = "off"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import kiln as kn  # noqa: E402
from conftest import caller_line, check, raises_at  # noqa: E402


def compiles():
    return kn.global_cache_stats().compiles


def f32(data):
    return kn.asarray(np.asarray(data, dtype=np.float32))


# ---- The API ------------------------------------------------------------------------------------


def test_jit_as_function_and_decorator():
    def affine(x, y):
        return x * 2.0 + y

    jitted = kn.jit(affine)
    x, y = f32([1, 2, 3]), f32([1, 1, 1])
    check(jitted(x, y), np.array([3, 5, 7], np.float32))

    @kn.jit
    def decorated(x):
        return kn.tanh(x)

    check(decorated(x), np.tanh(np.array([1, 2, 3], np.float32)))

    @kn.jit(static_argnums=1)
    def power(x, n):
        return x**n

    check(power(x, 3), np.array([1, 8, 27], np.float32))
    assert decorated.__name__ == "decorated"


def test_stats_hits_and_cache_size():
    @kn.jit
    def f(x):
        return x + 1

    x = f32([1, 2])
    for _ in range(5):
        f(x)
    stats = f.stats()
    assert (stats.calls, stats.hits, stats.misses) == (5, 4, 1)
    assert stats.compiles + stats.persistent_hits == 1
    assert f.cache_size() == 1
    f(f32([1, 2, 3]))
    assert f.stats().misses == 2
    assert "dimension 0 changed: 2 -> 3" in f.last_miss_explanation()


def test_numbers_are_weak_dynamic_scalars():
    @kn.jit
    def scale(x, s):
        return x * s

    x = f32([1, 2])
    before = compiles()
    for s in (1.0, 2.5, -3.0, 7.0):
        check(scale(x, s), np.array([1, 2], np.float32) * np.float32(s))
    assert compiles() - before == 1
    assert scale(x, 2).dtype == kn.float32  # a weak int does not promote


def test_static_argnums_and_argnames():
    @kn.jit(static_argnames="mode")
    def pick(x, mode):
        return x * 2 if mode == "double" else x + 100

    x = f32([1.0])
    before = compiles()
    check(pick(x, mode="double"), np.array([2], np.float32))
    check(pick(x, mode="shift"), np.array([101], np.float32))
    check(pick(x, "double"), np.array([2], np.float32))  # by position: the same static argument
    assert compiles() - before == 2
    assert "mode" in pick.last_miss_explanation()


def test_pytree_arguments_and_results():
    Point = namedtuple("Point", "x y")

    @dataclasses.dataclass
    class State:
        w: object
        step: object

    @kn.jit
    def f(tree, point, state):
        return {"sum": tree["a"] + tree["b"][0], "point": Point(point.y, point.x), "state": State(state.w * 2, None)}

    tree = {"b": [f32([1, 2])], "a": f32([10, 20])}
    out = f(tree, Point(f32([1.0]), f32([2.0])), State(f32([3.0]), None))
    check(out["sum"], np.array([11, 22], np.float32))
    assert isinstance(out["point"], Point)
    check(out["point"].x, np.array([2], np.float32))
    assert isinstance(out["state"], State) and out["state"].step is None
    check(out["state"].w, np.array([6], np.float32))


def test_register_pytree_node():
    class Pair:
        def __init__(self, first, second):
            self.first, self.second = first, second

    kn.register_pytree_node(Pair, lambda p: ((p.first, p.second), None), lambda _, children: Pair(*children))
    swapped = kn.jit(lambda p: Pair(p.second, p.first * 2))(Pair(f32([1.0]), f32([5.0])))
    assert isinstance(swapped, Pair)
    check(swapped.first, np.array([5], np.float32))
    check(swapped.second, np.array([2], np.float32))
    leaves, treedef = kn.tree_flatten({"z": Pair(1, 2), "a": (3, None)})
    assert leaves == [3, 1, 2]
    assert kn.tree_unflatten(treedef, [30, 10, 20])["z"].second == 20


def test_lower_names_python_lines():
    line = caller_line() + 3

    def f(x):
        return kn.exp(x) * 3.0

    graph = kn.jit(f).lower(f32([1, 2]))
    text = str(graph)
    assert f"test_jit.py:{line}" in text
    assert "exp" in text and graph.num_nodes >= 3


def test_keyword_arguments_and_methods():
    class Layer:
        def __init__(self):
            self.w = f32([2.0, 3.0])

        @kn.jit
        def __call__(self, x, *, bias):
            return x * self.w + bias

    layer = Layer()
    check(layer(f32([1, 1]), bias=1.0), np.array([3, 4], np.float32))
    layer.w = f32([10.0, 10.0])  # rebinding an attribute array: new data, no compile
    before = compiles()
    check(layer(f32([1, 1]), bias=1.0), np.array([11, 11], np.float32))
    assert compiles() == before


def test_nested_jit_is_inlined():
    inner = kn.jit(lambda x: x * 2)
    outer = kn.jit(lambda x: inner(x) + 1)
    check(outer(f32([1, 2])), np.array([3, 5], np.float32))
    assert inner.stats().calls == 0


def test_donate_argnums():
    step = kn.jit(lambda p, g: p - 0.1 * g, donate_argnums=0)
    params = f32([1.0, 2.0])
    new = step(params, f32([1.0, 1.0]))
    check(new, np.array([0.9, 1.9], np.float32))
    with raises_at(kn.DonatedArrayError, "donated"):
        params + 1


def test_dynamic_dims_marked():
    f = kn.jit(lambda x: kn.sum(x * x, axis=0), dynamic_dims=[(0, 0)])
    before = compiles()
    for n in (3, 5, 9, 17):
        data = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
        check(f(kn.asarray(data)), (data * data).sum(axis=0))
    assert compiles() - before == 1


# ---- The seed documents' traps ------------------------------------------------------------------


def loss(params, batch):
    return kn.mean((batch @ params) ** 2)


def test_closure_over_each_steps_batch_with_jit_inside_the_loop():
    # The Nx trap: a closure over this step's batch, jitted inside the loop.
    params = f32(np.ones((4, 1)))
    rng = np.random.default_rng(0)
    before = compiles()
    for _ in range(6):
        batch = rng.standard_normal((8, 4)).astype(np.float32)
        step = kn.jit(lambda p: loss(p, kn.asarray(batch)))
        expected = np.mean((batch @ np.ones((4, 1), np.float32)) ** 2)
        check(step(params), np.float32(expected))
    assert compiles() - before == 1


def test_closure_over_an_array_rebinds_without_recompiling():
    batch = f32(np.ones((8, 4)))

    @kn.jit
    def step(p):
        return loss(p, batch)

    params = f32(np.ones((4, 1)))
    check(step(params), np.float32(16.0))
    before = compiles()
    for k in range(2, 6):
        batch = f32(np.full((8, 4), float(k)))
        check(step(params), np.float32((4.0 * k) ** 2))
    assert compiles() == before
    assert step.stats().traces == 1  # guarded: the function never ran again


def test_counter_on_a_module_keeps_python_semantics():
    # The torch_xla trap: a Python counter on a module, updated in the step.
    class Module:
        def __init__(self):
            self.w = f32([1.0, 2.0])
            self.overflow_total = 0

        def step(self, x):
            self.overflow_total += 1
            return x * self.w + self.overflow_total

    module = Module()
    step = kn.jit(module.step)
    x = f32([1.0, 1.0])
    before = compiles()
    for k in range(1, 8):
        check(step(x), np.array([1 + k, 2 + k], np.float32))
    assert module.overflow_total == 7  # every call ran the Python code
    assert compiles() - before == 2  # the second value lifted the number to a runtime input
    assert "writes state" in step.unguarded_reason


THRESHOLD = 0.5


def test_global_threshold_is_never_stale_and_explained():
    global THRESHOLD
    line = caller_line() + 4

    @kn.jit
    def clip(x):
        return kn.where(x > THRESHOLD, x, 0.0)

    x = f32([0.2, 0.6, 1.2])
    check(clip(x), np.array([0, 0.6, 1.2], np.float32))
    before = compiles()
    try:
        for threshold, expected in ((1.0, [0, 0, 1.2]), (0.1, [0.2, 0.6, 1.2]), (0.7, [0, 0, 1.2])):
            THRESHOLD = threshold
            check(clip(x), np.array(expected, np.float32))
    finally:
        THRESHOLD = 0.5
    assert compiles() - before == 1
    explanation = clip.last_miss_explanation()
    assert f"test_jit.py:{line}" in explanation and "0.5 -> 1" in explanation


def test_item_in_a_step_raises_at_its_line():
    @kn.jit
    def step(x):
        with raises_at(kn.ConcretizationError, "traced", "kn.where", "kn.cond"):
            x.sum().item()
        return x

    step(f32([1.0]))


@pytest.mark.parametrize("convert", ["float", "int", "bool", "if", "np.asarray"])
def test_concretization_errors(convert):
    def step(x):
        s = x.sum()
        if convert == "float":
            with raises_at(kn.ConcretizationError, "traced"):
                float(s)
        elif convert == "int":
            with raises_at(kn.ConcretizationError, "traced"):
                int(s)
        elif convert == "bool":
            with raises_at(kn.ConcretizationError, "traced"):
                bool(s)
        elif convert == "if":
            with raises_at(kn.ConcretizationError, "traced"):
                1 if s > 0 else 0
        else:
            with raises_at(kn.ConcretizationError, "traced"):
                np.asarray(s)
        return x

    kn.jit(step)(f32([1.0]))


def test_sequence_lengths_that_change_every_batch():
    @kn.jit
    def pooled(tokens):
        return kn.mean(kn.tanh(tokens), axis=0)

    before = compiles()
    for length in (7, 9, 12, 5, 31, 8, 16):
        data = np.linspace(-1, 1, length * 3, dtype=np.float32).reshape(length, 3)
        check(pooled(kn.asarray(data)), np.tanh(data).mean(axis=0))
    assert compiles() - before == 2  # the first length, then one shape-generic executable


def test_changed_global_dict_list_and_numpy_values():
    config = {"scale": 2.0}
    offsets = [1.0]
    table = np.array([1.0, 2.0], np.float32)

    @kn.jit
    def f(x):
        return x * config["scale"] + offsets[0] + kn.asarray(table)

    x = f32([1.0, 1.0])
    check(f(x), np.array([4, 5], np.float32))
    config["scale"] = 3.0
    check(f(x), np.array([5, 6], np.float32))
    offsets[0] = 10.0
    check(f(x), np.array([14, 15], np.float32))
    table[1] = 100.0
    check(f(x), np.array([14, 113], np.float32))


def test_guarded_hits_do_not_rerun_python():
    runs = []
    scale = f32([2.0])

    def body(x):
        runs.append(None)  # a call into list.append on a captured list: Python code with effects
        return x * scale

    pure = kn.jit(lambda x: x * scale + 1)
    effects = kn.jit(body)
    x = f32([1.0])
    for _ in range(5):
        pure(x)
        effects(x)
    assert pure.stats().traces == 1, pure.unguarded_reason
    assert len(runs) == 5  # the effect happens at every call, as in Python


def test_telemetry_sees_compiles_and_hits():
    events = []
    f = kn.jit(lambda x: x - 3, name="telemetry_probe")
    with kn.telemetry.subscribe(lambda e: events.append((e.kind, e.function))):
        f(f32([1.0]))
        f(f32([1.0]))
    kinds = [k for k, name in events if name == "telemetry_probe"]
    assert "compile" in kinds and "cache_hit" in kinds


def test_storms():
    jit_line = caller_line() + 1
    f = kn.jit(lambda x: x + 1, on_storm="error", recompile_limit=2, automatic_dynamic=False)
    f(kn.ones(2))
    f(kn.ones(3))
    # A storm names the line of the kn.jit whose cache stormed.
    with raises_at(kn.StormError, "storm", "recompile_limit", "3 -> 4", line=jit_line):
        f(kn.ones(4))
    generalizing = kn.jit(lambda x: x * 2, on_storm="generalize", recompile_limit=2, automatic_dynamic=False)
    before = compiles()
    for n in range(2, 9):
        check(generalizing(kn.ones(n)), np.full(n, 2, np.float32))
    assert compiles() - before <= 3


def test_leaked_tracer():
    kept = []

    @kn.jit
    def leaky(x):
        kept.append(x)
        return x + 1

    leaky(f32([1.0]))
    with raises_at(kn.LeakedTracerError, "after that trace ended"):
        kept[0] * 2


def test_non_array_result_names_the_leaf():
    with pytest.raises(TypeError, match=r"returned str 'label' at result\[1\]"):
        kn.jit(lambda x: (x, "label"))(f32([1.0]))


def test_bad_options():
    with pytest.raises(ValueError, match="on_storm"):
        kn.jit(lambda x: x, on_storm="explode")
    with pytest.raises(TypeError, match="hashable"):
        kn.jit(lambda x, n: x, static_argnums=1)(f32([1.0]), [1, 2])


# ---- Threads ------------------------------------------------------------------------------------


def test_many_threads_one_compile_right_results():
    @kn.jit
    def f(x):
        return kn.tanh(x) * 3.0 + 1.0

    inputs = [np.random.default_rng(i).standard_normal(32).astype(np.float32) for i in range(8)]
    results = [None] * 8
    errors = []

    def worker(i):
        try:
            for _ in range(50):
                results[i] = np.asarray(f(kn.asarray(inputs[i])))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    before = compiles()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert compiles() - before == 1
    for i in range(8):
        np.testing.assert_allclose(results[i], np.tanh(inputs[i]) * 3 + 1, rtol=1e-5)
    assert f.stats().calls == 400


def test_one_cache_shared_with_cpp():
    x = f32([1.0, 2.0, 3.0])
    check(kn._kiln._cxx_jitted_affine(x), np.array([3, 5, 7], np.float32))  # compiled by kiln::jit in C++
    before = compiles()
    python_side = kn.jit(lambda v: v * 2.0 + 1.0)
    check(python_side(x), np.array([3, 5, 7], np.float32))
    assert compiles() == before  # the same graph: C++'s executable, found in the process-wide cache
    assert python_side.stats().misses == 1 and python_side.stats().compiles == 0


def test_lines_inside_grad_vmap_and_loop_bodies():
    line = caller_line() + 3

    def f(w):
        return kn.sum(kn.sin(w) ** 2)  # the forward line: its derivative's nodes name it too

    text = str(kn.jit(kn.grad(f)).lower(f32([1.0, 2.0])))
    assert f"test_jit.py:{line}" in text and "cos" in text
    body_line = caller_line() + 2
    looped = kn.jit(
        lambda c: kn.fori_loop(0, 10, lambda i, v: v * 1.5 + kn.exp(v), c)
    )
    assert f"test_jit.py:{body_line}" in str(looped.lower(f32([1.0])))
    lane_line = caller_line() + 1
    mapped = kn.jit(kn.vmap(lambda row: kn.max(row) - kn.min(row)))
    assert f"test_jit.py:{lane_line}" in str(mapped.lower(f32(np.ones((3, 4)))))


def test_writes_into_containers():
    config = {"offset": 1.0}

    @kn.jit
    def builds_its_own(x):
        out = {}
        out["double"] = x * 2
        out["shifted"] = x + config["offset"]
        return out

    @kn.jit
    def writes_outside(x):
        config["offset"] = config["offset"] + 1.0  # Python semantics: once per call
        return x

    x = f32([1.0])
    for _ in range(3):
        check(builds_its_own(x)["shifted"], np.array([1 + config["offset"]], np.float32))
    assert builds_its_own.stats().traces == 1  # a dict the function built is no outside state
    for _ in range(3):
        writes_outside(x)
    assert config["offset"] == 4.0 and "writes state" in writes_outside.unguarded_reason
    check(builds_its_own(x)["shifted"], np.array([5.0], np.float32))  # the guard saw the change


def test_kiln_log_speaks_python(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "step.py"
    script.write_text(
        "import kiln as kn\n"
        "scale = 2.0\n"
        "f = kn.jit(lambda x: x * scale)\n"
        "f(kn.ones(3))\n"
        "scale = 3.0\n"
        "f(kn.ones(3))\n"
        "f(kn.ones(4))\n"
    )
    env = dict(os.environ, KILN_LOG="recompiles", KILN_CACHE="off")
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert "compiles again" in result.stderr and "the number used at step.py:3 changed" in result.stderr
    assert "kn.pad_to_bucket" in result.stderr and "kiln::" not in result.stderr


def test_guards_follow_dict_order_subclasses_and_namedtuples():
    import collections

    order = collections.OrderedDict(a=1.0, b=2.0)

    class Config(dict):
        pass

    config = Config(scale=2.0)
    Holder = namedtuple("Holder", "table")
    holder = Holder({"k": 1.0})

    def f(x):
        out = x
        for value in order.values():  # iteration follows insertion order
            out = out * 10 + value
        return out * config["scale"] + holder.table["k"]

    jitted = kn.jit(f)
    x = f32([1.0])
    for change in (None, lambda: order.move_to_end("a"), lambda: config.update(scale=3.0),
                   lambda: holder.table.update(k=5.0), None):
        if change:
            change()
        check(jitted(x), np.asarray(f(x)))
    assert jitted.stats().traces == 4  # once, then once per change, never stale
    assert jitted.unguarded_reason is None


def test_never_stale_through_aliases_classes_c_objects_and_statics():
    import array
    import itertools
    import operator

    weight = f32([1.0, 1.0])
    tied = [weight, weight]  # one array in two places: the trace has one input for both
    tied_fn = kn.jit(lambda x: x * tied[0] + tied[1])

    class A:
        k = 1.0

    class B:
        k = 2.0

    obj = A()
    class_fn = kn.jit(lambda x: x * obj.k)
    counter = itertools.count(1)
    counter_fn = kn.jit(lambda x: x * next(counter))
    holder = array.array("d", [1.0])
    array_fn = kn.jit(lambda x: x * holder[0])

    class Config:
        pass

    config = Config()
    config.val = 1.0
    getter = operator.attrgetter("val")
    getter_fn = kn.jit(lambda x: x * getter(config))
    x = f32([1.0, 1.0])
    for fn in (tied_fn, class_fn, counter_fn, array_fn, getter_fn):
        fn(x)
    tied[1] = kn.zeros(2)
    obj.__class__ = B
    holder[0] = 5.0
    config.val = 5.0
    check(tied_fn(x), np.array([1, 1], np.float32))
    check(class_fn(x), np.array([2, 2], np.float32))
    check(counter_fn(x), np.array([2, 2], np.float32))  # next() runs at every call
    check(array_fn(x), np.array([5, 5], np.float32))
    check(getter_fn(x), np.array([5, 5], np.float32))
    scaled = kn.jit(lambda v, n: v * n, static_argnums=1)
    integers = kn.arange(2)
    assert scaled(integers, 1).dtype == kn.int32 and scaled(integers, 1.0).dtype == kn.float32
    divided = kn.jit(lambda v, n: v / n, static_argnums=1)
    assert np.asarray(divided(x, 0.0))[0] == np.inf and np.asarray(divided(x, -0.0))[0] == -np.inf


def test_the_structured_trace_names_python_lines(tmp_path):
    import json

    kn.telemetry.start_trace(tmp_path)
    path = kn.telemetry.trace_file()
    scaled = kn.jit(lambda x: x * 3.0 + 1.0)  # the line every record names
    line = caller_line() - 1
    for size in (3, 3, 3, 4):
        scaled(kn.ones(size))
    kn.wait_for_background_compiles()
    kn.telemetry.stop_trace()
    assert kn.telemetry.trace_file() == ""
    records = [json.loads(text) for text in open(path)]
    compiles = [r for r in records if r["kind"] == "compile"]
    assert len(compiles) == 2
    assert all(r["where"] == f"test_jit.py:{line}" for r in compiles), compiles
    assert "dimension 0 changed: 3 -> 4" in compiles[1]["reason"]
    graphs = [r for r in records if r["kind"] == "graph"]
    assert len(graphs) == 2 and f"test_jit.py:{line}" in graphs[0]["ir"]
    hits = [r["hits"] for r in records if r["kind"] == "calls"]
    assert hits == [2]


def test_the_execution_timeline_from_python(tmp_path):
    import json

    path = tmp_path / "timeline.json"
    kn.telemetry.start_profile(path)
    step = kn.jit(lambda x: kn.sum(kn.exp(x) * 2.0, axis=1))
    for _ in range(3):
        step(kn.ones((256, 256)))
    kn.wait_for_background_compiles()
    kn.telemetry.stop_profile()
    events = json.load(open(path))["traceEvents"]
    depth = {}
    for event in events:
        if event["ph"] in "BE":
            depth[event["tid"]] = depth.get(event["tid"], 0) + (1 if event["ph"] == "B" else -1)
            assert depth[event["tid"]] >= 0
    assert all(d == 0 for d in depth.values())
    names = {event.get("name") for event in events}
    assert "codegen" in names and any("exp" in str(name) for name in names), names
