"""Every known OpInfo conformance gap, in one place, each with its reason.

The sweep still runs these; the report marks them as known, and the CI tier does not count
them as regressions. Fixing one means deleting its entry here.
"""

# Ops whose outputs are uninitialized memory on every device: only dtypes and shapes compare.
METADATA_ONLY = {
    "empty": "uninitialized output",
    "empty_like": "uninitialized output",
    "empty_strided": "uninitialized output",
    "empty_permuted": "uninitialized output",
    "new_empty": "uninitialized output",
    "new_empty_strided": "uninitialized output",
    "torch.empty": "uninitialized output",
}

# (op id, dtype) -> reason. Filled from the sweep's findings; "*" matches every dtype.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def known_reason(op: str, dtype: str) -> str | None:
    return KNOWN_FAILURES.get((op, dtype)) or KNOWN_FAILURES.get((op, "*"))
