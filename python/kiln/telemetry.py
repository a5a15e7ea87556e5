"""kn.telemetry: what the cache does, as events (the C++ telemetry's).

    with kn.telemetry.subscribe(lambda e: print(e.kind, e.function, e.reason)):
        step(params, batch)

Event kinds: trace, compile, cache_hit, persistent_hit, execute, storm.
"""

from . import _kiln

Event = _kiln._telemetry.Event
global_cache_stats = _kiln.global_cache_stats


def subscribe(callback):
    """Calls callback(event) for every event until the returned subscription
    is closed (or leaves its `with` block). Callbacks may run on kiln's threads."""
    return _kiln._telemetry.subscribe(callback)
