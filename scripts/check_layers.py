"""Fails when a C++ file includes a header of a layer above its own (DESIGN §2: each layer
uses only the layers below it). The build runs it before compiling anything, so a backwards
include fails the build; `python scripts/check_layers.py` runs it by hand.

Layers, lowest first. A file belongs to the longest folder prefix listed here."""

import pathlib
import re
import sys

LAYERS = [
    "runtime",         # torch-free chips, memory, streams, events
    "ir",              # torch-free program IR
    "executors",       # the executor interface and the null executor (executors/*.h, *.cpp)
    "engine",          # modes, recording, program assembly, executable cache, metrics
    "executors/host",  # the host executor: CPU kernel calls, fused kernels, planning
    "executors/pjrt",  # the PJRT executor: plugin loading, client, StableHLO lowering (may
                       # fall back to the host executor's kernels)
    "privateuse1",     # device integration: guard, hooks, allocators, generator, autocast
    "ops",             # ATen ops -> recorded nodes and kernel calls
    "distributed",     # the tpu_dist c10d backend
    "python",          # the pybind11 module
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of(path: str) -> int | None:
    best = None
    for rank, layer in enumerate(LAYERS):
        if path.startswith(layer + "/") and (best is None or len(layer) > len(LAYERS[best])):
            best = rank
    return best


def violations(csrc: pathlib.Path) -> list[str]:
    found = []
    for source in sorted(csrc.rglob("*")):
        if source.suffix not in (".h", ".cpp"):
            continue
        own = layer_of(source.relative_to(csrc).as_posix())
        if own is None:
            continue
        for included in INCLUDE.findall(source.read_text()):
            target = layer_of(included)
            if target is not None and target > own:
                found.append(f"{source.relative_to(csrc)} ({LAYERS[own]}) includes {included} "
                             f"({LAYERS[target]}, a layer above)")
    return found


def main() -> int:
    csrc = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent / "csrc")
    found = violations(csrc)
    for line in found:
        print(f"layering: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
