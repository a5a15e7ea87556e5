"""kn.telemetry: what the cache does, as events (the C++ telemetry's).

    with kn.telemetry.subscribe(lambda e: print(e.kind, e.function, e.reason)):
        step(params, batch)

Event kinds: trace, compile, cache_hit, persistent_hit, execute, storm.

The structured trace writes the whole cache history to a directory, for
`kiln report DIR -o report.html` (KILN_TRACE=DIR does the same from the start):

    kn.telemetry.start_trace("traces")
    train()
    kn.telemetry.stop_trace()
"""

from . import _kiln

Event = _kiln._telemetry.Event
global_cache_stats = _kiln.global_cache_stats


def subscribe(callback):
    """Calls callback(event) for every event until the returned subscription
    is closed (or leaves its `with` block). Callbacks may run on kiln's threads."""
    return _kiln._telemetry.subscribe(callback)


def start_trace(directory):
    """Appends every trace, compile (with its phase times), explanation, storm,
    dynamic-dimension decision, eviction and graph to
    DIRECTORY/kiln-trace-PID.jsonl until stop_trace() or exit."""
    _kiln._telemetry.start_trace(str(directory))


def stop_trace():
    """Writes each function's hit counts and closes the trace file."""
    _kiln._telemetry.stop_trace()


def trace_file():
    """The file the running trace appends to; "" when none runs."""
    return _kiln._telemetry.trace_file()


def start_profile(file):
    """Records the execution timeline (each kernel, BLAS call, compile phase
    and collective, per thread) until stop_profile() or exit, then writes it
    to FILE as Chrome trace-event JSON (Perfetto, chrome://tracing).
    KILN_PROFILE=FILE does the same from the start."""
    _kiln._telemetry.start_profile(str(file))


def stop_profile():
    """Writes the timeline recorded since start_profile()."""
    _kiln._telemetry.stop_profile()
