"""What the collective checks share: the registry they fill, and each rank's input.

Inputs are small integers (exact in bfloat16/float16 and under every reduction), drawn from
the rank, so each rank can compute every other rank's input and the exact expected result.
"""

from __future__ import annotations

import torch

from worker_utils import Ctx, Registry

checks = Registry()

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "int64": torch.int64}
OPS = ["SUM", "AVG", "MIN", "MAX", "PRODUCT"]
GLOO_NO_STARTCOALESCING = "gloo does not implement startCoalescing (NCCL-style coalescing)"


def rank_input(rank: int, n: int, dtype: torch.dtype, op: str = "SUM", salt: int = 0) -> torch.Tensor:
    """Rank ``rank``'s input (CPU): integers in 1..5 (1..2 for PRODUCT, so products stay exact)."""
    i = torch.arange(n, dtype=torch.int64)
    if op == "PRODUCT":
        vals = (i + rank + salt) % 2 + 1
    else:
        vals = (i * 7 + rank * 3 + salt) % 5 + 1
    return vals.to(dtype)


def reduce_all(inputs: list[torch.Tensor], op: str) -> torch.Tensor:
    """The exact reduction of CPU tensors, computed in float64 and cast back."""
    stacked = torch.stack([t.to(torch.float64) for t in inputs])
    out = {"SUM": lambda s: s.sum(0), "AVG": lambda s: s.mean(0), "MIN": lambda s: s.amin(0),
           "MAX": lambda s: s.amax(0), "PRODUCT": lambda s: s.prod(0)}[op](stacked)
    return out.to(inputs[0].dtype)


def all_inputs(ctx: Ctx, n: int, dtype: torch.dtype, op: str = "SUM", salt: int = 0):
    return [rank_input(r, n, dtype, op, salt) for r in range(ctx.world)]
