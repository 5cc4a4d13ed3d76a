"""Counters that prove what the backend did: ops launched, CPU fallbacks by op, host syncs by
reason."""

from . import _C


def metrics() -> dict:
    """``{"ops_launched": int, "fallbacks": {op: count}, "syncs": {reason: count}}``."""
    return _C._metrics()


def reset_metrics() -> None:
    _C._reset_metrics()
