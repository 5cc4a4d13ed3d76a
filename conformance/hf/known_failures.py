"""Every known Hugging Face sweep gap, in one place, each with its reason: model type ->
reason. The CI tier does not count these as regressions; fixing one means deleting it here."""

KNOWN_FAILURES: dict[str, str] = {}
