"""The three places where torch_tpu replaces a function of torch's own, because PyTorch offers
no registration point for what they do. Everything else registers through PyTorch's APIs
(the PrivateUse1 rename, the device module, the torch.backends entry point, c10d's
Backend.register_backend, the dispatcher). Each patch is installed once and keeps the
original's behaviour outside what the reason names.

- ``torch.autograd._engine_run_backward``: fused mode flushes at the end of a backward pass
  (DESIGN §4: the backward graph becomes one cached program). PyTorch gives a backend no hook at
  the end of a backward pass; this is the one function that ``Tensor.backward``,
  ``torch.autograd.backward`` and ``torch.autograd.grad`` all call. In other modes the wrapper
  only asks the mode's policy.
- ``torch.autograd.graph.disable_saved_tensors_hooks``: fused mode installs default
  saved-tensor hooks (its recipes, _saved_recipes.py), and torch.func's transforms refuse to
  run under any default hooks. PyTorch has no way to mark hooks as the backend's own, so the
  context manager sets ours aside for its block.
- ``torch._TorchCompileInductorWrapper.__call__``: ``torch.compile(model)``'s default backend.
  PyTorch sends a graph on "tpu" to Inductor's Pallas code generator, which needs JAX and
  compiles for JAX's TPU arrays, not for torch_tpu's chips; Inductor has no registration point
  that hands a device's graphs to another compiler. A graph with a tpu tensor among its inputs or
  values goes to the ``tpu`` backend (torch_tpu.compiler); every other graph, and so every
  process that never puts a tensor on tpu, reaches Inductor as before.
"""

import functools

import torch
import torch.autograd

from . import _C, _saved_recipes


def install() -> None:
    _flush_after_backward()
    _set_recipes_aside_for_torch_func()
    _route_default_compile_on_tpu()


def _flush_after_backward() -> None:
    original = torch.autograd._engine_run_backward
    if getattr(original, "_torch_tpu_patch", False):
        return

    @functools.wraps(original)
    def run_backward_then_flush(*args, **kwargs):
        result = original(*args, **kwargs)
        if _C._mode_flushes_after_backward():
            _C._flush_all("backward")
        return result

    run_backward_then_flush._torch_tpu_patch = True
    torch.autograd._engine_run_backward = run_backward_then_flush


def _set_recipes_aside_for_torch_func() -> None:
    original = torch.autograd.graph.disable_saved_tensors_hooks
    if getattr(original, "_torch_tpu_patch", False):
        return

    @functools.wraps(original)
    def disable_saved_tensors_hooks(error_message: str):
        return _saved_recipes.set_aside(original, error_message)

    disable_saved_tensors_hooks._torch_tpu_patch = True
    torch.autograd.graph.disable_saved_tensors_hooks = disable_saved_tensors_hooks


def _route_default_compile_on_tpu() -> None:
    wrapper_class = torch._TorchCompileInductorWrapper
    original = wrapper_class.__call__
    if getattr(original, "_torch_tpu_patch", False):
        return

    @functools.wraps(original)
    def compile_graph(self, model_, inputs_, **kwargs):
        if _graph_on_tpu(model_, inputs_):
            from .compiler import tpu_backend
            return tpu_backend(model_, inputs_)
        return original(self, model_, inputs_, **kwargs)

    compile_graph._torch_tpu_patch = True
    wrapper_class.__call__ = compile_graph


def _graph_on_tpu(gm, example_inputs) -> bool:
    def on_tpu(value) -> bool:
        return isinstance(value, torch.Tensor) and value.device.type == "tpu"

    if any(on_tpu(value) for value in example_inputs):
        return True
    # A graph may also make its tpu tensors itself (torch.randn(..., device="tpu")).
    return any(on_tpu(node.meta.get("example_value")) for node in gm.graph.nodes)
