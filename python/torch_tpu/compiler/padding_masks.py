"""Masks that keep a bucketed graph's padding out of its valid results (see bucketing.py).

Each tensor of the Core ATen graph is described dimension by dimension as a tuple of *factors*,
outermost first: a dimension of size ``b*s`` flattened from ``[b, s]`` is ``(b, s)``. A factor
whose size involves a bucketed symbol is padded: along it, positions below the factor's actual
size are valid, the rest padding. Ops that keep positions apart along a dimension (pointwise
ops, views, a matrix product's rows and columns, a norm over other dimensions) carry the factors
through; ops that mix positions along a padded factor get operands masked first; any other op
touching a padded factor raises Unbucketable naming it.
"""

import math
import operator

import sympy
import torch
from torch._guards import detect_fake_mode
from torch._prims_common import compute_elementwise_output_logical_to_physical_perm

from .bucketing import Unbucketable
from .padding_rules import (CREATION, HANDLERS, LIKE, MAX_LIKE, SAME_AS_FIRST, SHAPE_SCALARS,
                            SUM_LIKE, fresh_factors, keepdim_of, product, reduced_dims, shape_of)

aten = torch.ops.aten


def mask_padding(gm: torch.fx.GraphModule, lengths_position: int, symbols: list,
                 padded_dims: dict) -> None:
    """Rewrites `gm` (a joint or inference Core ATen graph whose placeholder number
    `lengths_position` holds the actual sizes of `symbols`) so that padded positions never reach
    valid results. `padded_dims`: the dimensions the caller pads, per input position. Raises
    Unbucketable when an op cannot be made safe."""
    masking = _Masking(gm, lengths_position, symbols)
    masking.check_inputs(padded_dims)
    masking.run()
    gm.graph.eliminate_dead_code()  # masks a rule built but did not need
    gm.graph.lint()
    gm.recompile()


class _Masking:
    def __init__(self, gm, lengths_position, symbols):
        self.gm, self.graph = gm, gm.graph
        self.symbols = set(symbols)
        self.symbol_order = list(symbols)
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        self.lengths = placeholders[lengths_position]
        self.lengths_position = lengths_position
        lengths_value = self.lengths.meta.get("val")
        if (not isinstance(lengths_value, torch.Tensor) or lengths_value.dtype != torch.int64
                or tuple(lengths_value.shape) != (len(symbols),)):
            raise Unbucketable("the lengths input was not found in the ATen graph")
        self.device = lengths_value.device
        self.fake_mode = detect_fake_mode([n.meta.get("val") for n in placeholders])
        self.anchor = placeholders[-1]
        self.factors = {}
        self.symbol_nodes = {}
        self.cache = {}
        for node in placeholders:
            value = node.meta.get("val")
            if isinstance(value, torch.SymInt) and value.node.expr.is_Symbol:
                self.symbol_nodes.setdefault(value.node.expr, node)
        self.size_sources = {}
        for node in placeholders:
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor):
                for dim, size in enumerate(shape_of(value)):
                    if size.is_Symbol:
                        self.size_sources.setdefault(size, (node, dim))

    # -- building nodes -----------------------------------------------------------------------

    def meta(self, value):
        return value.meta.get("val") if isinstance(value, torch.fx.Node) else value

    def make(self, target, args, kwargs=None, before=None):
        kwargs = kwargs or {}
        if before is None:
            with self.graph.inserting_after(self.anchor):
                node = self.graph.call_function(target, args, kwargs)
            self.anchor = node
        else:
            with self.graph.inserting_before(before):
                node = self.graph.call_function(target, args, kwargs)
        meta_args = torch.fx.node.map_aggregate(args, self.meta)
        meta_kwargs = torch.fx.node.map_aggregate(kwargs, self.meta)
        with self.fake_mode:
            node.meta["val"] = target(*meta_args, **meta_kwargs)
        return node

    def bucket(self, expr):
        """An int, or a node computing `expr` from the bucketed sizes (a SymInt at run time)."""
        expr = sympy.expand(expr)
        if expr.is_Integer:
            return int(expr)
        key = ("bucket", expr)
        if key in self.cache:
            return self.cache[key]
        if expr.is_Symbol:
            if expr in self.symbol_nodes:
                return self.symbol_nodes[expr]
            if expr not in self.size_sources:
                raise Unbucketable(f"no input has the size {expr}")
            node, dim = self.size_sources[expr]
            result = self.make(aten.sym_size.int, (node, dim))
        elif expr.is_Add or expr.is_Mul:
            combine = operator.add if expr.is_Add else operator.mul
            terms = [self.bucket(term) for term in expr.args]
            result = terms[0]
            for term in terms[1:]:
                result = self.make(combine, (result, term))
        else:
            raise Unbucketable(f"the size {expr} is not a sum or product")
        self.cache[key] = result
        return result

    def actual(self, expr):
        """A 0-dim int64 tpu tensor node holding `expr` at the actual sizes."""
        expr = sympy.expand(expr)
        key = ("actual", expr)
        if key in self.cache:
            return self.cache[key]
        if expr.is_Integer:
            result = self.make(aten.scalar_tensor.default, (int(expr),),
                                {"dtype": torch.int64, "device": self.device})
        elif expr.is_Symbol and expr not in self.symbols:  # not padded: its run-time value
            result = self.make(aten.scalar_tensor.default, (self.bucket(expr),),
                                {"dtype": torch.int64, "device": self.device})
        elif expr.is_Symbol:
            result = self.make(aten.select.int, (self.lengths, 0, self.symbol_order.index(expr)))
        elif expr.is_Add or expr.is_Mul:
            constant = [t for t in expr.args if t.is_Integer]
            others = [t for t in expr.args if not t.is_Integer]
            result = self.actual(others[0])
            for term in others[1:]:
                tensor_op = aten.add.Tensor if expr.is_Add else aten.mul.Tensor
                result = self.make(tensor_op, (result, self.actual(term)))
            for term in constant:
                scalar_op = aten.add.Tensor if expr.is_Add else aten.mul.Tensor
                result = self.make(scalar_op, (result, int(term)))
        else:
            raise Unbucketable(f"the size {expr} is not a sum or product")
        self.cache[key] = result
        return result

    def padded(self, expr):
        return bool(sympy.sympify(expr).free_symbols & self.symbols)

    def symbols_of(self, value, dims=None):
        """The bucketed symbols in `value`'s dimensions `dims` (all when None)."""
        factors = self.factors.get(value) or []
        chosen = range(len(factors)) if dims is None else [d % len(factors) for d in dims]
        return {symbol for d in chosen for f in factors[d]
                for symbol in sympy.sympify(f).free_symbols & self.symbols}

    def _factor_padding(self, factor):
        """Bool [bucket(factor)]: True at positions past the factor's actual size."""
        key = ("factor", factor)
        if key not in self.cache:
            positions = self.make(aten.arange.default, (self.bucket(factor),),
                                   {"dtype": torch.int64, "device": self.device})
            self.cache[key] = self.make(aten.ge.Tensor, (positions, self.actual(factor)))
        return self.cache[key]

    def dim_padding(self, factors):
        """Bool [bucket(product)]: padding positions of a dimension made of `factors`."""
        key = ("dim", factors)
        if key in self.cache:
            return self.cache[key]
        if len(factors) == 1:
            result = self._factor_padding(factors[0])
        else:
            sizes = [self.bucket(f) for f in factors]
            result = None
            for k, factor in enumerate(factors):
                if not self.padded(factor):
                    continue
                shape = [1] * len(factors)
                shape[k] = sizes[k]
                piece = self.make(aten.view.default, (self._factor_padding(factor), shape))
                result = piece if result is None else self.make(aten.bitwise_or.Tensor,
                                                                 (result, piece))
            result = self.make(aten.expand.default, (result, sizes))
            result = self.make(aten.reshape.default, (result, [self.bucket(product(factors))]))
        self.cache[key] = result
        return result

    def masked(self, node, value, dims, fill, before):
        """`value` with its padding along `dims` replaced by `fill`, inserted before `before`."""
        factors = self.factors.get(value)
        if factors is None:
            return value
        rank = len(factors)
        padded_dims = tuple((dim, factors[dim]) for dim in sorted({d % rank for d in dims})
                            if any(self.padded(f) for f in factors[dim])) if rank else ()
        if not padded_dims:
            return value
        padding = self.tensor_padding(rank, padded_dims)
        dtype = self.meta(value).dtype
        if fill in (-1, 1) and not isinstance(fill, bool):
            limit = (torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype))
            fill = (-math.inf if fill < 0 else math.inf) if dtype.is_floating_point else (
                limit.min if fill < 0 else limit.max)
        # The result keeps `value`'s strides: ops after it were traced with them (a flash
        # attention's output is laid out as its query is, and views of that output follow).
        # masked_fill lays its result out by all its operands, the broadcast mask included, so
        # it fills `value` seen in its memory order and the result is permuted back.
        order, _ = compute_elementwise_output_logical_to_physical_perm(self.meta(value))
        if order == list(range(rank)):
            masked = self.make(aten.masked_fill.Scalar, (value, padding, fill), before=before)
        else:
            physical = self.make(aten.permute.default, (value, order), before=before)
            padding = self.make(aten.permute.default, (padding, order), before=before)
            filled = self.make(aten.masked_fill.Scalar, (physical, padding, fill), before=before)
            masked = self.make(aten.permute.default,
                               (filled, [order.index(d) for d in range(rank)]), before=before)
        self.factors[masked] = factors
        return masked

    def tensor_padding(self, rank, padded_dims):
        """Bool, broadcastable to a rank-`rank` tensor: True where any of `padded_dims` (pairs of
        dimension and factors) is at a padded position. Made once per form, in the preamble."""
        key = ("tensor", rank, padded_dims)
        if key not in self.cache:
            padding = None
            for dim, dim_factors in padded_dims:
                shape = [1] * rank
                shape[dim] = self.bucket(product(dim_factors))
                piece = self.make(aten.view.default, (self.dim_padding(dim_factors), shape))
                padding = piece if padding is None else self.make(aten.bitwise_or.Tensor,
                                                                   (padding, piece))
            self.cache[key] = padding
        return self.cache[key]

    def replace_arg(self, node, index, new):
        args = list(node.args)
        args[index] = new
        node.args = tuple(args)

    def mask_args(self, node, positions, dims_of, fill):
        for index in positions:
            value = node.args[index]
            if isinstance(value, torch.fx.Node) and value in self.factors:
                rank = len(self.factors[value])
                self.replace_arg(node, index,
                                  self.masked(node, value, dims_of(rank), fill, node))

    def touches_padding(self, value):
        factors = self.factors.get(value)
        return factors is not None and any(self.padded(f) for dim in factors for f in dim)

    def padded_dim(self, value, dim):
        factors = self.factors.get(value)
        return factors is not None and any(self.padded(f) for f in factors[dim % len(factors)])

    def check_inputs(self, padded_dims):
        """The graph's inputs must be padded where its sizes say: tracing may have found two
        sizes equal (one symbol in the graph) that the caller saw apart and padded apart."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        for position, node in enumerate(placeholders[:self.lengths_position]):
            value = node.meta.get("val")
            if not isinstance(value, torch.Tensor):
                continue
            sizes = shape_of(value)
            padded = {dim for dim, size in enumerate(sizes) if self.padded(size)}
            expected = padded_dims.get(position, set())
            if padded != expected:
                mismatched = padded ^ expected
                involved = set().union(*(sizes[d].free_symbols for d in mismatched))
                raise Unbucketable(f"input {position}'s sizes were found related to others "
                                   "while tracing", involved | self.symbols)

    # -- the walk -----------------------------------------------------------------------------

    def run(self):
        for node in list(self.graph.nodes):
            if node.op == "placeholder":
                value = node.meta.get("val")
                if isinstance(value, torch.Tensor):
                    self.factors[node] = fresh_factors(value)
            elif node.op == "call_function":
                self._visit(node)

    def _visit(self, node):
        self._visit_op(node)
        self._check_factors(node)

    def _check_factors(self, node):
        """A rule's factors must multiply to the sizes the graph records: a mismatch would make
        wrong masks, so it refuses the graph instead."""
        factors, value = self.factors.get(node), node.meta.get("val")
        pairs = list(zip(factors, value)) if isinstance(factors, tuple) and isinstance(
            value, (tuple, list)) else [(factors, value)]
        for dims, meta in pairs:
            if dims is None or not isinstance(meta, torch.Tensor):
                continue
            sizes = shape_of(meta)
            if len(dims) != len(sizes) or any(sympy.expand(product(dim) - size) != 0
                                               for dim, size in zip(dims, sizes)):
                raise Unbucketable(f"{node.target}: padding could not be followed through it",
                                   {s for dim in dims for f in dim
                                    for s in sympy.sympify(f).free_symbols} | self.symbols)

    def _visit_op(self, node):
        target = node.target
        if target is operator.getitem:
            source = self.factors.get(node.args[0])
            if isinstance(source, tuple):
                if source[node.args[1]] is not None:
                    self.factors[node] = source[node.args[1]]
            return
        if not isinstance(target, torch._ops.OpOverload) or not isinstance(
                node.meta.get("val"), (torch.Tensor, list, tuple)):
            return  # SymInt arithmetic and size queries: sizes, computed with the buckets
        self._use_actual_values(node)
        target = node.target
        handler = HANDLERS.get(target)
        if handler is not None:
            handler(self, node)
        elif target in SAME_AS_FIRST:
            self.factors[node] = self.factors.get(node.args[0]) or fresh_factors(node.meta["val"])
        elif torch.Tag.pointwise in target.tags or target in (aten.where.self,
                                                              aten.masked_fill.Scalar):
            if torch.Tag.nondeterministic_seeded in target.tags:
                raise Unbucketable(f"{target} draws random numbers")  # any padding changes them
            self._broadcast(node)
        elif target in LIKE:
            self.factors[node] = self.factors.get(node.args[0]) or fresh_factors(node.meta["val"])
        elif target in CREATION:
            self.factors[node] = fresh_factors(node.meta["val"])
        elif target in SUM_LIKE or target in (aten.mean.dim, aten.mean.default):
            self._reduce(node, SUM_LIKE.get(target, 0))
        elif target in MAX_LIKE:
            self._reduce(node, MAX_LIKE[target])
        else:
            self.opaque(node)

    def _use_actual_values(self, node):
        """A size used as a number (a mean's divisor in a backward graph) takes its actual value."""
        schema = node.target._schema
        for index, (argument, value) in enumerate(zip(schema.arguments, node.args)):
            meta = self.meta(value) if isinstance(value, torch.fx.Node) else None
            if not isinstance(meta, (torch.SymInt, torch.SymFloat)):
                continue
            if not self.padded(meta.node.expr):
                continue
            kind = argument.type.kind()
            if kind in ("IntType", "SymIntType", "ListType", "OptionalType"):
                continue  # a size or position: the bucket
            if node.target in SHAPE_SCALARS:
                continue
            if kind == "NumberType":  # a Scalar: the Tensor overload takes the 0-dim actual
                tensor_overload = getattr(node.target.overloadpacket, "Tensor", None)
                if tensor_overload is None:
                    raise Unbucketable(f"{node.target} takes the size {meta.node.expr} as a value",
                                       meta.node.expr.free_symbols & self.symbols)
                node.target = tensor_overload
            elif kind != "TensorType":
                raise Unbucketable(f"{node.target} takes the size {meta.node.expr} as a value",
                                   meta.node.expr.free_symbols & self.symbols)
            self.replace_arg(node, index, self.actual(meta.node.expr))

    def _broadcast(self, node):
        out_shape = shape_of(node.meta["val"])
        rank = len(out_shape)
        factors = []
        inputs = [a for a in node.args if isinstance(a, torch.fx.Node) and a in self.factors]
        for j in range(rank):
            aligned = [self.factors[value][j - (rank - len(self.factors[value]))]
                       for value in inputs if j - (rank - len(self.factors[value])) >= 0]
            aligned = [dim for dim in aligned if product(dim) != 1]
            self.require_same_padding(node, aligned)
            chosen = (out_shape[j],)
            for dim in aligned:
                if product(dim) == sympy.expand(out_shape[j]):
                    chosen = dim
                    break
            factors.append(chosen)
        self.factors[node] = factors

    def require_same_padding(self, node, dims):
        """Dimensions an op pairs position by position must be padded alike: sizes that tracing
        only knew equal as products (``b*s`` and ``b2*s2``) may have been padded apart."""
        if len({tuple(dim) for dim in dims}) <= 1:
            return
        if any(self.padded(f) for dim in dims for f in dim):
            involved = {symbol for dim in dims for f in dim
                        for symbol in sympy.sympify(f).free_symbols}
            raise Unbucketable(f"{node.target} pairs dimensions padded apart", involved)

    def _reduce(self, node, fill):
        source = node.args[0]
        factors = self.factors.get(source)
        if factors is None:
            self.factors[node] = fresh_factors(node.meta["val"]) if isinstance(
                node.meta["val"], torch.Tensor) else None
            return
        rank = len(factors)
        dims = reduced_dims(node, rank)
        keepdim = keepdim_of(node)
        kept = [(1,) if d in dims else factors[d] for d in range(rank)] if keepdim else \
            [factors[d] for d in range(rank) if d not in dims]
        result = kept if isinstance(node.meta["val"], torch.Tensor) else None
        self.factors[node] = (result, result) if isinstance(node.meta["val"], tuple) else result
        if not any(self.padded_dim(source, d) for d in dims):
            return
        self.replace_arg(node, 0, self.masked(node, source, dims, fill, node))
        if node.target in (aten.mean.dim, aten.mean.default):
            self._mean_as_sum(node, factors, dims, keepdim)

    def _mean_as_sum(self, node, factors, dims, keepdim):
        dtype = node.kwargs.get("dtype")
        count = product([f for d in dims for f in factors[d]])
        total = self.make(aten.sum.dim_IntList, (node.args[0], sorted(dims), keepdim),
                           {"dtype": dtype}, before=node)
        quotient = self.make(aten.div.Tensor, (total, self.actual(count)), before=node)
        node.replace_all_uses_with(quotient)
        self.factors[quotient] = self.factors[node]
        self.graph.erase_node(node)

    def opaque(self, node):
        tensors = [a for a in node.args if isinstance(a, torch.fx.Node)]
        for value in node.args:
            if isinstance(value, (list, tuple)):
                tensors += [a for a in value if isinstance(a, torch.fx.Node)]
        if any(self.touches_padding(a) for a in tensors):
            what = ("draws random numbers over" if torch.Tag.nondeterministic_seeded
                    in node.target.tags else "acts on")
            raise Unbucketable(f"{node.target} {what} a padded dimension",
                               set().union(*(self.symbols_of(a) for a in tensors)))
        meta = node.meta.get("val")
        if isinstance(meta, torch.Tensor):
            for size in shape_of(meta):
                if self.padded(size):
                    raise Unbucketable(f"{node.target} makes a padded dimension",
                                       sympy.sympify(size).free_symbols & self.symbols)
            self.factors[node] = fresh_factors(meta)
