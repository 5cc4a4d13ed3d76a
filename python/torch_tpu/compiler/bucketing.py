"""Shape bucketing: a graph with symbolic sizes runs at a few padded sizes, not at every size.

The executors compile static shapes, so a graph traced with symbolic sizes (``dynamic=True``,
``mark_dynamic``, Dynamo's automatic dynamic shapes) would compile a program for every distinct
size it meets. Instead, each symbolic size ``s`` runs padded to its bucket, the next power of
two (capped by the largest value Dynamo allows it): a sweep of lengths 1..N compiles about
log2(N) programs.

- The Dynamo graph gets one more input, ``lengths``: the actual sizes, as an int64 tpu tensor,
  so that one program serves every size of its bucket (values are run-time operands, not
  structure).
- Its inputs are padded with zeros at the end of each symbolic dimension and its outputs
  narrowed back, outside the compiled graph, so that autograd pads and narrows their gradients.
- Inside, on the Core ATen graph (the joint forward/backward graph before it is partitioned, or
  the inference graph), positions past the actual sizes carry values that must not reach valid
  ones: wherever an op mixes positions along a padded dimension (a sum, a mean, a max, a
  softmax, a matrix product's contraction, an embedding gradient), its operands are masked
  first (zero, or -inf for max-like ops), and a mean divides by the actual count. Where a size
  is used as a number, the actual size is used. Causal attention needs no mask for its valid
  queries; its operands' padding is zeroed so that the backward's sums stay finite.
- An op this pass does not know, acting on a padded dimension, makes the graph unbucketable
  (:class:`Unbucketable`, with the op named): it then runs unpadded, one program per size, as
  the backend warns. Nothing is padded silently where it could change a result.
"""

from dataclasses import dataclass

import operator

import sympy
import torch

aten = torch.ops.aten
prims = torch.ops.prims
_INT64_MAX = 2 ** 63 - 1


class Unbucketable(Exception):
    """The graph cannot run padded; the message says why (an op and the dimension it mixes).
    `symbols`: the bucketed sizes whose padding that op would mix (empty: all of them)."""

    def __init__(self, message: str, symbols=frozenset()):
        super().__init__(message)
        self.symbols = frozenset(symbols)


def bucket_of(size: int, upper: int | None) -> int:
    """The padded size for `size`: the next power of two, at most `upper` (Dynamo's bound)."""
    bucket = 1 << max(size - 1, 0).bit_length()
    return min(bucket, upper) if upper is not None else bucket


# ---------------------------------------------------------------------------------------------
# The Dynamo graph: which inputs are padded, which outputs narrowed.


@dataclass
class InputPadding:
    position: int
    dims: list          # [(dim, symbol index)] for a tensor; [] for anything else
    symint_of: int | None = None  # a SymInt input that is exactly symbol k: passed the bucket


@dataclass
class BucketPlan:
    symbols: list       # sympy Symbols, in `lengths` order
    uppers: list        # each symbol's largest allowed value (None: unbounded)
    inputs: list        # InputPadding per Dynamo input
    outputs: list       # per output: ("tensor", [(dim, symbol index)]) or ("symint", expr) or None
    sources: list       # per symbol: (input position, dim or None) to read its actual value from
    unpadded: list      # (input position, dim or None) of each symbolic size left unpadded
    device: torch.device  # where the padded tensors are: `lengths` goes there too


def plan_dynamo_graph(gm: torch.fx.GraphModule, example_inputs,
                      excluded=frozenset()) -> BucketPlan | None:
    """What padding the Dynamo graph needs, or None when no size in it is symbolic (sizes in
    `excluded` are not padded: each of their values runs a program of its own). Raises
    Unbucketable for forms this pass does not pad (a derived input size, an input written in
    place, a non-contiguous input, an output size that is not a plain symbol)."""
    symbols, sources, inputs, devices = [], [], [], []
    # Dynamo hands the backend real example tensors; their symbolic sizes are on its inputs.
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    example_inputs = [node.meta.get("example_value", value)
                      for node, value in zip(placeholders, example_inputs)]
    shape_env = _shape_env(example_inputs)

    def canonical(size):
        # Two sizes found equal while tracing are one symbol; padded apart, they would differ.
        expr = size.node.expr
        return shape_env.replace(expr) if shape_env is not None else expr

    unpadded = {}

    def index_of(symbol, source):
        if symbol in excluded:
            unpadded.setdefault(symbol, source)
            return None
        if symbol not in symbols:
            symbols.append(symbol)
            sources.append(source)
        return symbols.index(symbol)

    for position, value in enumerate(example_inputs):
        if isinstance(value, torch.SymInt):
            expr = canonical(value)
            if isinstance(expr, sympy.Symbol):
                inputs.append(InputPadding(position, [], index_of(expr, (position, None))))
            elif expr.free_symbols - excluded:
                raise Unbucketable(f"input {position} is the derived size {expr}",
                                   expr.free_symbols - excluded)
            else:
                inputs.append(InputPadding(position, []))
            continue
        dims = []
        if isinstance(value, torch.Tensor):
            for dim, size in enumerate(value.shape):
                if not isinstance(size, torch.SymInt):
                    continue
                expr = canonical(size)
                if not isinstance(expr, sympy.Symbol):
                    if expr.free_symbols - excluded:
                        raise Unbucketable(f"input {position} has the derived size {expr}",
                                           expr.free_symbols - excluded)
                    continue
                symbol = index_of(expr, (position, dim))
                if symbol is not None:
                    dims.append((dim, symbol))
            if dims and not _statically_contiguous(value):
                raise Unbucketable(f"input {position} is not contiguous")
            if dims:
                devices.append(value.device)
        inputs.append(InputPadding(position, dims))
    if not symbols:
        return None
    if not devices or any(device != devices[0] or device.type != "tpu" for device in devices):
        raise Unbucketable("the padded inputs are not all on one tpu device")
    _refuse_input_mutations(gm)
    uppers = [_upper_bound(shape_env, symbol) for symbol in symbols]
    outputs = [_output_narrowing(node, symbols, excluded, canonical)
               for node in _output_nodes(gm)]
    return BucketPlan(symbols, uppers, inputs, outputs, sources, list(unpadded.values()),
                      devices[0])


def _statically_contiguous(value) -> bool:
    from torch.fx.experimental.symbolic_shapes import guard_or_false
    expected = 1
    for size, stride in reversed(list(zip(value.shape, value.stride()))):
        if not guard_or_false(size == 1) and not guard_or_false(stride == expected):
            return False
        expected = expected * size
    return True


_VIEW_METHODS = {"view", "reshape", "transpose", "permute", "narrow", "select", "unsqueeze",
                 "squeeze", "expand", "t", "flatten", "unflatten", "__getitem__", "view_as",
                 "contiguous", "detach", "as_strided", "movedim", "swapaxes", "split", "chunk"}


_IN_PLACE_OPERATORS = {operator.setitem, operator.iadd, operator.isub, operator.imul,
                       operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow,
                       operator.iand, operator.ior, operator.ixor, operator.ilshift,
                       operator.irshift, operator.imatmul}


def _refuse_input_mutations(gm) -> None:
    """A padded input is a copy: an in-place write into it (or a view of it) would be lost, and
    an output that is an input or a view of one would no longer alias it."""
    aliases = {node for node in gm.graph.nodes if node.op == "placeholder"}
    for node in gm.graph.nodes:
        if node.op not in ("call_method", "call_function") or not node.args:
            continue
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        if node.args[0] not in aliases:
            continue
        if name in _VIEW_METHODS or node.target is operator.getitem:
            aliases.add(node)
        elif node.target in _IN_PLACE_OPERATORS or (name.endswith("_")
                                                     and not name.endswith("__")):
            raise Unbucketable(f"{name} writes into an input in place")
    for output in _output_nodes(gm):
        if output in aliases:
            raise Unbucketable("an output is an input or a view of one")


def _shape_env(example_inputs):
    for value in example_inputs:
        if isinstance(value, torch.SymInt):
            return value.node.shape_env
        if isinstance(value, torch.Tensor):
            for size in value.shape:
                if isinstance(size, torch.SymInt):
                    return size.node.shape_env
    return None


def _upper_bound(shape_env, symbol):
    value_range = getattr(shape_env, "var_to_range", {}).get(symbol)
    upper = getattr(value_range, "upper", None)
    if upper is None or not getattr(upper, "is_Integer", isinstance(upper, int)):
        return None  # unbounded (sympy's infinity)
    upper = int(upper)
    return upper if upper < _INT64_MAX // 2 else None


def _output_nodes(gm):
    output = next(node for node in gm.graph.nodes if node.op == "output")
    values = output.args[0]
    return list(values) if isinstance(values, (list, tuple)) else [values]


def _output_narrowing(node, symbols, excluded, canonical):
    value = node.meta.get("example_value") if isinstance(node, torch.fx.Node) else node
    if isinstance(value, torch.SymInt):
        expr = canonical(value)
        return ("symint", expr) if expr.free_symbols - excluded else None
    if not isinstance(value, torch.Tensor):
        return None
    dims = []
    for dim, size in enumerate(value.shape):
        if not isinstance(size, torch.SymInt):
            continue
        expr = canonical(size)
        if expr.free_symbols - excluded:
            if expr not in symbols:
                raise Unbucketable(f"an output has the derived size {expr}",
                                   expr.free_symbols - excluded)
            dims.append((dim, symbols.index(expr)))
    return ("tensor", dims)


# ---------------------------------------------------------------------------------------------
# Running: pad the inputs, pass the actual sizes, narrow the outputs.


class PaddedCall:
    """Calls the compiled graph with its inputs padded to their buckets and `lengths` appended,
    and narrows its outputs to the actual sizes."""

    def __init__(self, plan: BucketPlan, compiled, on_unpadded_sizes):
        self._plan, self._compiled = plan, compiled
        self._lengths = {}  # actual sizes -> their tpu tensor, reused across calls
        # Sizes left unpadded still compile a program per value: `on_unpadded_sizes(n)` hears
        # each new set of their values, the n-th.
        self._on_unpadded_sizes, self._unpadded_seen = on_unpadded_sizes, set()

    def __call__(self, *args):
        plan = self._plan
        actual = [_size(args, source) for source in plan.sources]
        if plan.unpadded:
            unpadded = tuple(_size(args, source) for source in plan.unpadded)
            if unpadded not in self._unpadded_seen:
                self._unpadded_seen.add(unpadded)
                self._on_unpadded_sizes(len(self._unpadded_seen))
        buckets = [bucket_of(size, upper) for size, upper in zip(actual, plan.uppers)]
        padded = list(args)
        for entry in plan.inputs:
            if entry.symint_of is not None:
                padded[entry.position] = buckets[entry.symint_of]
            elif entry.dims:
                padded[entry.position] = _padded(args[entry.position], entry.dims, buckets)
        outputs = self._compiled(*padded, self._lengths_tensor(tuple(actual)))
        return self._narrowed(outputs, actual)

    def _lengths_tensor(self, actual):
        tensor = self._lengths.get(actual)
        if tensor is None:
            if len(self._lengths) > 64:
                self._lengths.clear()
            tensor = self._lengths[actual] = torch.tensor(actual, dtype=torch.int64,
                                                                 device=self._plan.device)
        return tensor

    def _narrowed(self, outputs, actual):
        single = not isinstance(outputs, (list, tuple))
        values = [outputs] if single else list(outputs)
        values_by_symbol = dict(zip(self._plan.symbols, actual))
        for k, narrowing in enumerate(self._plan.outputs[:len(values)]):
            if narrowing is None or values[k] is None:
                continue
            kind, spec = narrowing
            if kind == "symint":
                values[k] = int(spec.subs(values_by_symbol))
            elif spec:
                value = values[k]
                for dim, symbol in spec:
                    if value.shape[dim] != actual[symbol]:
                        value = value.narrow(dim, 0, actual[symbol])
                values[k] = value.contiguous()
        if single:
            return values[0]
        return type(outputs)(values) if isinstance(outputs, tuple) else values


def _size(args, source):
    position, dim = source
    return int(args[position]) if dim is None else int(args[position].shape[dim])


def _padded(tensor, dims, buckets):
    pads = [0] * (2 * tensor.dim())
    for dim, symbol in dims:
        # F.pad lists (left, right) pairs from the last dimension backwards.
        pads[2 * (tensor.dim() - 1 - dim) + 1] = buckets[symbol] - tensor.shape[dim]
    if not any(pads):
        return tensor
    return torch.nn.functional.pad(tensor, pads)
