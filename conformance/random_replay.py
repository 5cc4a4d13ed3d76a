"""A float64 rerun of a float32 CPU run that draws the float32 run's random numbers.

The sweeps judge rounding against CPU's own distance from the float64 result. A module or op
that draws random numbers (dropout, noise) draws other numbers in float64, so that reference
would differ by more than rounding. Recording each random op's result in the float32 run and
copying it into the float64 run's (same op, same order) makes the float64 run the same
computation, only rounded less: bernoulli masks are 0 and 1 in any dtype, and other draws keep
their float32 values.
"""

from __future__ import annotations

import functools

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class Unreplayable(Exception):
    """The rerun's random ops are not the recorded run's (another op, or one returning more
    than one tensor): it has no float64 reference."""


@functools.cache
def _draws(func) -> bool:
    """An op that draws random numbers: one taking a Generator (`Generator?`)."""
    return any(str(arg.type) in ("Generator", "Optional[Generator]") for arg in func._schema.arguments)


class RecordDraws(TorchDispatchMode):
    """Records every random op's result, in call order."""

    def __init__(self):
        super().__init__()
        self.draws: list[tuple[object, torch.Tensor]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if _draws(func):
            if not isinstance(result, torch.Tensor):
                raise Unreplayable(f"{func} returns more than one tensor")
            self.draws.append((func.overloadpacket, result.detach().clone()))
        return result


class ReplayDraws(TorchDispatchMode):
    """Runs every random op, then overwrites its result with the recorded one (converted to
    the result's dtype). Raises Unreplayable where the ops differ; `complete()` says whether
    every recorded draw was used."""

    def __init__(self, recorded: RecordDraws):
        super().__init__()
        self._draws = list(recorded.draws)
        self._next = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if not _draws(func):
            return result
        if self._next >= len(self._draws) or self._draws[self._next][0] is not func.overloadpacket:
            raise Unreplayable(f"{func} is not the recorded run's next random op")
        values = self._draws[self._next][1]
        self._next += 1
        if not isinstance(result, torch.Tensor) or result.shape != values.shape:
            raise Unreplayable(f"{func} drew another shape than the recorded run")
        with torch.no_grad():
            result.copy_(values)
        return result

    def complete(self) -> bool:
        return self._next == len(self._draws)
