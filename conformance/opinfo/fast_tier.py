"""The CI tier of the OpInfo sweep: a fixed sample of op ids (filled below)."""

FAST_OPS: set[str] = set()
