"""Fused mode's rematerialization: while the mode is ``fused``, autograd's default saved-tensor
hooks let it keep a recipe (a pointwise op and its inputs, which autograd keeps anyway)
instead of the op's result, and backward recomputes the result (csrc/privateuse1/
saved_recipes.h). ``TORCH_TPU_FUSED_RECOMPUTE=0`` turns this off.

The hooks are installed on the thread that selects fused mode (autograd's default hooks are
per thread); on other threads fused mode saves tensors as Strict does. torch.func's transforms
refuse to run under any default hooks (``disable_saved_tensors_hooks``): while one runs, these
step aside, and tensors saved inside it are kept as they are."""

import contextlib
import os

import torch

from . import _C

_installed = False


def _wanted() -> bool:
    return _C._mode_recomputes_saved_results() and os.environ.get("TORCH_TPU_FUSED_RECOMPUTE", "1") != "0"


def follow_mode() -> None:
    """Installs the hooks when the current mode recomputes saved results (fused), removes them
    otherwise."""
    _apply(_wanted())


def remove() -> None:
    """Removes the hooks whatever the mode (at interpreter exit)."""
    _apply(False)


def _apply(wanted: bool) -> None:
    global _installed
    if wanted == _installed:
        return
    if wanted:
        torch._C._autograd._push_saved_tensors_default_hooks(_C._pack_saved, _C._unpack_saved)
    else:
        torch._C._autograd._pop_saved_tensors_default_hooks()
    _C._set_saved_recipes_enabled(wanted)
    _installed = wanted


def _ours_on_top() -> bool:
    top = torch._C._autograd._top_saved_tensors_default_hooks(False)
    return top is not None and top[0] is _C._pack_saved


@contextlib.contextmanager
def set_aside(original_disable, error_message: str):
    """``original_disable(error_message)`` (torch.autograd.graph.disable_saved_tensors_hooks),
    with fused mode's hooks set aside for the block: torch.func enters it, and a user's own
    hooks still make it raise, as without us (installed by _torch_patches.py)."""
    stepped_aside = _installed and _ours_on_top()
    if stepped_aside:
        torch._C._autograd._pop_saved_tensors_default_hooks()
    try:
        with original_disable(error_message):
            yield
    finally:
        if stepped_aside:
            torch._C._autograd._push_saved_tensors_default_hooks(_C._pack_saved, _C._unpack_saved)


def stats() -> dict:
    """``{"recipes": int, "recomputed": int}`` since the process started (for tests)."""
    return _C._saved_recipe_stats()
