"""kn.jit's tiers: in background mode (the default) a new graph's first calls
run op by op while its optimized code compiles on kiln's compile thread, with
the same results bit for bit; compile_mode="sync" waits for the compile.

KILN_CACHE is off so that every graph here compiles in this process.
"""

import os
import threading

os.environ["KILN_CACHE"] = "off"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import kiln as kn  # noqa: E402


def step(w, x):
    h = kn.tanh(x @ w + 0.5)
    return kn.sum(kn.exp(-h) * h, axis=1) + kn.log(kn.sum(h * h) + 1.0)


def arguments(seed):
    rng = np.random.default_rng(seed)
    w = kn.asarray(rng.standard_normal((64, 48)).astype(np.float32))
    x = kn.asarray(rng.standard_normal((200, 64)).astype(np.float32))
    return w, x


def bits(array):
    return np.asarray(array).tobytes()


def test_first_calls_match_the_optimized_code_bit_for_bit():
    w, x = arguments(1)
    expected = bits(kn.jit(step, compile_mode="sync")(w, x))
    kn.clear_graph_cache()
    tiered = kn.jit(step, compile_mode="background")
    first = bits(tiered(w, x))
    kn.wait_for_background_compiles()
    later = bits(tiered(w, x))
    assert first == expected and later == expected
    stats = tiered.stats()
    assert stats.compiles == 1 and stats.calls == 2
    assert stats.calls_before_optimized >= 1, "the first call ran before its optimized code was ready"
    assert stats.compile_seconds > 0


def test_sync_mode_never_runs_op_by_op():
    w, x = arguments(2)
    f = kn.jit(step, compile_mode="sync")
    f(w, x)
    f(w, x)
    assert f.stats().calls_before_optimized == 0


def test_telemetry_says_which_tier_serves_calls():
    w, x = arguments(3)
    kn.clear_graph_cache()
    events = []
    with kn.telemetry.subscribe(lambda e: events.append((e.kind, e.tier))):
        kn.jit(step, name="tiers", compile_mode="background")(w, x)
        kn.wait_for_background_compiles()
    compile_events = [event for event in events if event[0].startswith("compile")]
    assert compile_events == [
        ("compile_started", "optimized"),
        ("compile", "op by op"),
        ("compile_ready", "optimized"),
    ]


def test_threads_share_the_first_tier_and_its_replacement():
    w, x = arguments(4)
    expected = bits(kn.jit(step, compile_mode="sync")(w, x))
    kn.clear_graph_cache()
    shared = kn.jit(step, compile_mode="background")
    results = []

    def call():
        for _ in range(5):
            results.append(bits(shared(w, x)))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 20
    assert shared.stats().compiles == 1


def test_an_unknown_compile_mode_is_refused():
    with pytest.raises(ValueError, match="compile_mode"):
        kn.jit(step, compile_mode="eventually")
