"""The ``tpu`` Dynamo backend: aot_autograd to Core ATen, each graph one program.

Dynamo hands the backend a graph of torch calls. aot_autograd turns it into Core ATen graphs,
functionalized, with a forward and (when autograd needs one) a backward graph split by the
min-cut partitioner, which recomputes cheap pointwise results in the backward instead of saving
them. Each ATen graph runs through the same tpu kernels as eager code, but recorded on the
calling thread (``_C._CompiledGraphRegion``), so that leaving it hands the whole graph to the
active executor as one program: its structure keys the executor's cache, shared with fused
eager mode, so a graph is planned and compiled once and every later run is a cache hit."""

import functools

import torch

from .. import _C
from . import stats


def tpu_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """``torch.compile(model, backend="tpu")``'s compiler: returns the callable Dynamo runs in
    place of the traced frame."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    stats.count_dynamo_graph()
    # A new AotAutograd each time: it rewrites its own keyword arguments when called.
    compiler = aot_autograd(
        fw_compiler=_compile_aten_graph,
        bw_compiler=_compile_aten_graph,
        decompositions=_decompositions(),
        partition_fn=min_cut_rematerialization_partition,
        # In-place updates of an inference graph's inputs (an optimizer step, a KV cache) stay
        # in its program instead of running as eager copies after it.
        keep_inference_input_mutations=True,
    )
    return compiler(gm, example_inputs, **kwargs)


@functools.cache
def _decompositions() -> dict:
    """Core ATen's decompositions, less those the executors run better as they are."""
    from torch._decomp import core_aten_decompositions
    table = dict(core_aten_decompositions())
    # Both executors run CPU flash attention as one op (the host: ATen's kernel; PJRT: its own
    # lowering). PyTorch 2.13's decomposition of it also returns a logsumexp of the wrong shape
    # ([B, H, L, S] instead of [B, H, L]), which the backward kernel then reads: gradients
    # through attention came out wrong (test_compile.py's decoder test).
    table.pop(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    return table


def _compile_aten_graph(gm: torch.fx.GraphModule, example_inputs):
    """aot_autograd's forward, backward and inference compiler: the graph runs as one program.
    The executor compiles the program when it first runs (its shapes are the inputs'), and
    from its cache afterwards."""
    stats.count_aten_graph()

    def run_as_program(args):
        stats.count_graph_run()
        with _C._CompiledGraphRegion():
            return gm(*args)

    # Boxed: aot_autograd passes the argument list itself, which the graph may clear as it goes.
    run_as_program._boxed_call = True
    return run_as_program
