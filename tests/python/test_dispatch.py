"""Asynchronous dispatch from Python: jitted calls and large eager operations
return at once; NumPy conversion, item(), printing and block_until_ready
wait; errors of queued work surface there, with the user's line;
KILN_DISPATCH=sync gives the same bits; a NumPy array kiln borrows may change
after a call without changing its result.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln as kn

ROWS, COLUMNS = 64, 512  # 2^15 elements: worth queueing


def layer(x, w):
    return kn.tanh((x @ w) * 0.5) + kn.mean(x, axis=1, keepdims=True)


def data(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((ROWS, COLUMNS)).astype(np.float32)
    w = (rng.standard_normal((COLUMNS, COLUMNS)) * 0.05).astype(np.float32)
    return x, w


def run(script, **env):
    environment = dict(os.environ, KILN_CACHE="off", **env)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                            env=environment, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_queued_results_wait_where_they_are_read():
    x, w = data(1)
    f = kn.jit(layer)
    y = f(kn.asarray(x), kn.asarray(w))
    z = f(y, kn.asarray(w)) + 1.0
    assert z.block_until_ready() is z
    expected = np.asarray(f(f(kn.asarray(x), kn.asarray(w)), kn.asarray(w)))
    np.testing.assert_array_equal(np.asarray(z), expected + np.float32(1.0))
    assert float(kn.sum(z).item()) == pytest.approx(float(np.sum(expected + 1.0)), rel=1e-5)
    assert "Array" in repr(z) or "array" in repr(z)
    kn.synchronize()


def test_a_borrowed_numpy_array_changed_after_the_call_does_not_change_the_result():
    x, w = data(2)
    f = kn.jit(layer)
    expected = np.asarray(f(kn.asarray(x.copy()), kn.asarray(w)))
    borrowed = x.copy()
    y = f(kn.asarray(borrowed), kn.asarray(w))
    borrowed[:] = 7.0  # the call may not have run yet
    np.testing.assert_array_equal(np.asarray(y), expected)


def test_errors_of_queued_work_surface_at_the_first_wait_with_the_line():
    out = run("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (64 << 30, 64 << 30))
        import kiln as kn
        huge = kn.jit(lambda v: kn.broadcast_to(v, (1 << 38,)) * 2.0)
        y = huge(kn.ones((1,)))          # queued: no error yet
        following = y * 3.0 + 1.0         # reads what fails: queued, fails alike
        made = kn.zeros((1 << 38,))       # line 8 of this script
        for array in (y, following):
            try:
                array.block_until_ready()
                raise SystemExit("no error")
            except kn.AllocationError as error:
                print("waited:", str(error).splitlines()[0])
        try:
            made.block_until_ready()
        except kn.AllocationError as error:
            print("zeros:", str(error).splitlines()[0])
        try:
            kn.synchronize()
            raise SystemExit("synchronize raised nothing")
        except kn.AllocationError:
            print("synchronize raised")
        kn.synchronize()
        print("then nothing")
    """)
    lines = out.splitlines()
    assert lines[0] == lines[1], out
    assert "1099511627776 bytes" in lines[0]
    assert lines[2].startswith("zeros: [zeros]") and ":8)" in lines[2], out
    assert lines[3:] == ["synchronize raised", "then nothing"], out


TRAINING = """
    import hashlib
    import numpy as np
    import kiln as kn
    rng = np.random.default_rng(0)
    w = kn.asarray((rng.standard_normal((512, 512)) * 0.05).astype(np.float32))
    b = kn.zeros((64, 512))
    def loss(w, b, x):
        return kn.mean(kn.square(kn.tanh((x @ w) * 0.5) + b))
    def update(w, b, x):
        gw, gb = kn.grad(loss, argnums=(0, 1))(w, b, x)
        return w - 0.01 * gw, b - 0.01 * gb
    step = kn.jit(update, donate_argnums=(0, 1))
    for i in range(10):
        x = kn.asarray(rng.standard_normal((64, 512)).astype(np.float32))
        w, b = step(w, b, x)
    print(hashlib.sha256(np.asarray(w).tobytes() + np.asarray(b).tobytes()).hexdigest())
"""


def test_kiln_dispatch_sync_gives_the_same_bits():
    assert run(TRAINING) == run(TRAINING, KILN_DISPATCH="sync")
