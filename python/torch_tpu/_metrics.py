"""Counters that prove what the backend did: ops launched, CPU fallbacks by op, host syncs by
reason."""

from . import _C


def metrics() -> dict:
    """``{"ops_launched": int, "fallbacks": {op: count}, "syncs": {reason: count},
    "shape_cache": {"hits": int, "misses": int, "entries": int}}``. A training loop in steady
    state should show no new shape-cache misses."""
    return _C._metrics()


def reset_metrics() -> None:
    _C._reset_metrics()
