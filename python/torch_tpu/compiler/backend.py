"""The ``tpu`` Dynamo backend: aot_autograd to Core ATen, each graph one program.

Dynamo hands the backend a graph of torch calls. aot_autograd turns it into Core ATen graphs,
functionalized, with a forward and (when autograd needs one) a backward graph split by the
min-cut partitioner, which recomputes cheap pointwise results in the backward instead of saving
them. Each ATen graph runs through the same tpu kernels as eager code, but recorded on the
calling thread (``_C._CompiledGraphRegion``), so that leaving it hands the whole graph to the
active executor as one program: its structure keys the executor's cache, shared with fused
eager mode, so a graph is planned and compiled once and every later run is a cache hit."""

import functools
import os
import re

import torch

from .. import _C
from . import stats


def tpu_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """``torch.compile(model, backend="tpu")``'s compiler: returns the callable Dynamo runs in
    place of the traced frame. A graph with symbolic sizes runs padded to a few bucket sizes
    (bucketing.py) where every op of it can be kept from mixing padding into valid results;
    otherwise it runs unpadded, one program per size, and the reason is counted."""
    from . import bucketing  # imports sympy: not at `import torch_tpu`, only once compiling

    stats.count_dynamo_graph()
    if os.environ.get("TORCH_TPU_SHAPE_BUCKETS") == "0":  # a program per shape, unpadded
        return _aot_autograd(unpadded_reason="TORCH_TPU_SHAPE_BUCKETS=0")(
            gm, example_inputs, **kwargs)
    # A size whose padding some op would mix into valid results (a layer norm's width) is left
    # unpadded, and the graph tried again with the others.
    excluded, refusal = set(), None
    while True:
        try:
            plan = bucketing.plan_dynamo_graph(gm, example_inputs, frozenset(excluded))
            if plan is None:
                break
            compiled = _compile_bucketed(gm, example_inputs, plan, kwargs, refusal)
            stats.count_bucketed_graph()
            return compiled
        except bucketing.Unbucketable as reason:
            refusal = reason
            if not reason.symbols or reason.symbols <= excluded:
                break
            excluded |= reason.symbols
        except torch._dynamo.exc.TorchDynamoException:
            raise  # Dynamo's own control flow (a restart of its analysis), not a failure
        except Exception as error:  # noqa: BLE001  (unpadded, the graph is still exact)
            refusal = f"bucketing failed: {type(error).__name__}: {error}"
            break
    if refusal is not None:
        stats.count_unbucketable_graph(str(refusal))
    return _aot_autograd(unpadded_reason=str(refusal) if refusal else None)(
        gm, example_inputs, **kwargs)


def _aot_autograd(partition=None, inference_compiler=None, bucketed=False,
                  unpadded_reason=None):
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    compile_graph = functools.partial(_compile_aten_graph, bucketed=bucketed,
                                      unpadded_reason=unpadded_reason)
    # A new AotAutograd each time: it rewrites its own keyword arguments when called.
    return aot_autograd(
        fw_compiler=compile_graph,
        bw_compiler=compile_graph,
        inference_compiler=inference_compiler or compile_graph,
        decompositions=_decompositions(),
        partition_fn=partition or min_cut_rematerialization_partition,
        # In-place updates of an inference graph's inputs (an optimizer step, a KV cache) stay
        # in its program instead of running as eager copies after it.
        keep_inference_input_mutations=True,
    )


_LENGTHS_INPUT = "tpu_bucket_lengths"


def _compile_bucketed(gm, example_inputs, plan, kwargs, refusal):
    """Compiles `gm` with one more input, the actual sizes, and masks in its ATen graphs;
    returns the call that pads inputs and narrows outputs around it. `refusal`: why some of
    its sizes are left unpadded (None when none is)."""
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._guards import detect_fake_mode

    from . import bucketing, padding_masks

    with detect_fake_mode(example_inputs):
        lengths = torch.empty(len(plan.symbols), dtype=torch.int64, device=plan.device)
    last_input = [node for node in gm.graph.nodes if node.op == "placeholder"][-1]
    with gm.graph.inserting_after(last_input):
        node = gm.graph.placeholder(_LENGTHS_INPUT)
    node.meta["example_value"] = node.meta["val"] = lengths
    node._dynamo_source = None  # not from user code (as the DDP optimizer's own inputs)
    gm.recompile()
    position = len(example_inputs)
    padded_dims = {entry.position: {dim for dim, _ in entry.dims} for entry in plan.inputs}

    def masked_partition(joint, joint_inputs, **partition_kwargs):
        padding_masks.mask_padding(joint, position, plan.symbols, padded_dims)
        return min_cut_rematerialization_partition(joint, joint_inputs, **partition_kwargs)

    def masked_inference(graph, inputs):
        padding_masks.mask_padding(graph, position, plan.symbols, padded_dims)
        return _compile_aten_graph(graph, inputs, bucketed=True)

    compiler = _aot_autograd(masked_partition, masked_inference, bucketed=True)
    try:
        compiled = compiler(gm, [*example_inputs, lengths], **kwargs)
    finally:
        _drop_lengths_input(gm)  # Dynamo reads its graph's inputs again after the backend
    graph_number = stats.compile_metrics()["graphs_compiled"]
    return bucketing.PaddedCall(plan, compiled, functools.partial(
        stats.warn_past_a_few_sizes, graph_number, str(refusal)))


def _drop_lengths_input(gm) -> None:
    for node in gm.graph.nodes:
        if node.op == "placeholder" and node.target == _LENGTHS_INPUT:
            gm.graph.erase_node(node)
            gm.recompile()
            return


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


def _compile_aten_graph(gm: torch.fx.GraphModule, example_inputs, bucketed=False,
                        unpadded_reason=None):
    """aot_autograd's forward, backward and inference compiler: the graph runs as one program.
    The executor compiles the program when it first runs (its shapes are the inputs'), and
    from its cache afterwards. While issue sites are recorded (Debug mode,
    ``set_record_python_lines``), each op is issued at the user's line it was traced from."""
    graph_number = stats.count_aten_graph()
    # Built on first need: only runs that record issue sites read the nodes' stack traces.
    with_sites = functools.cache(lambda: _SiteNamingInterpreter(gm))
    shapes = _ShapeSpecializations(graph_number, example_inputs, bucketed, unpadded_reason)

    def run_as_program(args):
        stats.count_graph_run()
        if shapes.symbolic:
            shapes.note(args)
        with _C._CompiledGraphRegion():
            if _C._issue_sites_recorded():
                return with_sites().run(*args)
            return gm(*args)

    # Boxed: aot_autograd passes the argument list itself, which the graph may clear as it goes.
    run_as_program._boxed_call = True
    return run_as_program


class _SiteNamingInterpreter(torch.fx.Interpreter):
    """Runs a graph node by node, each op issued at the line of user code Dynamo traced it from
    (its ``stack_trace``), so that an error raised at a later sync point names that line."""

    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm)
        self._sites = {node: _user_site(node.meta.get("stack_trace")) for node in gm.graph.nodes}

    def run_node(self, node):
        _C._set_issue_site(self._sites.get(node))
        try:
            return super().run_node(node)
        finally:
            _C._set_issue_site(None)


_FRAME_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _user_site(stack_trace):
    """``"file.py:12 in forward"`` for the innermost frame of user code in a node's stack trace
    (as eager ops name theirs: torch's and torch_tpu's own frames are skipped), or None."""
    frames = [(file, int(line), function)
              for file, line, function in _FRAME_LINE.findall(stack_trace or "")]
    return _C._user_issue_site(frames)


class _ShapeSpecializations:
    """A graph with symbolic shapes runs with concrete ones, and each distinct set of them is a
    program of its own: the executors compile static shapes. Each new one is counted (and
    explained when TORCH_TPU_EXPLAIN_RECOMPILES=1). A bucketed graph meets only its buckets'
    sizes; an unbucketable one meets every size, and past a few a warning says so."""

    def __init__(self, graph_number: int, example_inputs, bucketed: bool, unpadded_reason):
        self._graph_number = graph_number
        self._unpadded_reason = unpadded_reason
        self._positions = [k for k, value in enumerate(example_inputs) if _is_symbolic(value)]
        self.symbolic = bool(self._positions)
        self._bucketed = bucketed
        self._seen = set()

    def note(self, args) -> None:
        key = tuple(tuple(args[k].shape) if isinstance(args[k], torch.Tensor) else args[k]
                    for k in self._positions)
        if key not in self._seen:
            self._seen.add(key)
            stats.count_shape_specialization(self._graph_number, key, len(self._seen),
                                             self._bucketed, self._unpadded_reason)


def _is_symbolic(value) -> bool:
    if isinstance(value, torch.SymInt):
        return True
    return isinstance(value, torch.Tensor) and any(
        isinstance(size, torch.SymInt) for size in value.shape)
