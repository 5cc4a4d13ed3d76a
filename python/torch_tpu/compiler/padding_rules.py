"""How each Core ATen op carries padding (see padding_masks.py): which of its dimensions keep
positions apart, which mix them and so need their operands masked, and which make a graph
unbucketable. A rule reads and writes the pass's state through `masking`: `factors` of each
value, `padded_dim`, `masked`/`mask_args` to insert masks, `make` to add nodes."""

import math

import sympy
import torch

from .bucketing import Unbucketable

aten = torch.ops.aten
prims = torch.ops.prims
BIG = 2 ** 62

# Ops whose results keep their inputs' positions apart along every dimension.
SAME_AS_FIRST = {aten.clone.default, aten.alias.default, aten._to_copy.default,
                 aten.detach.default, prims.convert_element_type.default,
                 aten.lift_fresh_copy.default, aten.cumsum.default}
# Ops that make a tensor of the sizes they are given (padded where a size is).
CREATION = {aten.full.default, aten.zeros.default, aten.ones.default, aten.empty.memory_format,
            aten.empty_strided.default, aten.arange.default, aten.arange.start,
            aten.arange.start_step, aten.scalar_tensor.default, aten.new_zeros.default,
            aten.new_ones.default, aten.new_empty.default, aten.new_full.default}
LIKE = {aten.full_like.default, aten.zeros_like.default, aten.ones_like.default,
        aten.empty_like.default}
# Reductions, each with the value padding must hold so that it adds nothing (-1/1: the
# dtype's lowest or highest value, so that it never wins a maximum or minimum).
SUM_LIKE = {aten.sum.dim_IntList: 0, aten.sum.default: 0, aten.prod.dim_int: 1,
            aten.prod.default: 1, aten.any.dim: False, aten.any.dims: False,
            aten.any.default: False, aten.all.dim: True, aten.all.default: True}
MAX_LIKE = {aten.amax.default: -1, aten.max.dim: -1, aten.argmax.default: -1,
            aten.logsumexp.default: -1, aten.amin.default: 1, aten.min.dim: 1,
            aten.argmin.default: 1}
# Ops whose Scalar arguments are sizes, not values: they take the bucket.
SHAPE_SCALARS = {aten.arange.default, aten.arange.start, aten.arange.start_step}
_FLASH = aten._scaled_dot_product_flash_attention_for_cpu.default
_FLASH_BACKWARD = aten._scaled_dot_product_flash_attention_for_cpu_backward.default


def shape_of(value):
    """Sizes as sympy expressions."""
    return [sympy.sympify(s.node.expr) if isinstance(s, torch.SymInt) else sympy.Integer(s)
            for s in value.shape]


def fresh_factors(value):
    """One factor per dimension: its size."""
    return [(size,) for size in shape_of(value)]


def product(factors):
    """The size of a dimension made of `factors`."""
    return sympy.expand(math.prod(factors, start=sympy.Integer(1)))


def reduced_dims(node, rank):
    target = node.target
    dims = None
    if target in (aten.sum.dim_IntList, aten.mean.dim, aten.amax.default, aten.amin.default,
                  aten.logsumexp.default, aten.any.dims):
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    elif target in (aten.max.dim, aten.min.dim, aten.argmax.default, aten.argmin.default,
                    aten.prod.dim_int, aten.any.dim, aten.all.dim):
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        dims = None if dims is None else [dims]
    if not dims:
        return set(range(rank))
    return {d % rank for d in dims}


def keepdim_of(node):
    target = node.target
    if target in (aten.sum.default, aten.mean.default, aten.prod.default, aten.any.default,
                  aten.all.default):
        return False
    if len(node.args) > 2:
        return bool(node.args[2])
    return bool(node.kwargs.get("keepdim", False))


# -- ops with a rule of their own ---------------------------------------------------------------


def _regroup(masking, in_factors, out_shape, name):
    """The factors of a view of a tensor with `in_factors` to `out_shape`: each output dimension
    takes whole factors, outermost first; a static factor may split, a padded one may not."""
    described = [" * ".join(map(str, dim)) for dim in in_factors]
    refusal = Unbucketable(f"{name} regroups a padded dimension ([{', '.join(described)}] into "
                           f"{list(out_shape)})",
                           {s for dim in in_factors for f in dim
                            for s in sympy.sympify(f).free_symbols & masking.symbols})
    queue = [f for dim in in_factors for f in dim if f != 1]
    result = []
    for size in out_shape:
        size = sympy.expand(size)
        if size == 1:
            result.append((sympy.Integer(1),))
            continue
        taken = []
        while product(taken) != size:
            if not queue:
                raise refusal
            factor = queue.pop(0)
            rest = sympy.cancel(size / product(taken))
            if factor.is_Integer and rest.is_Integer and factor > rest and factor % rest == 0:
                queue.insert(0, sympy.Integer(factor // rest))
                factor = rest
            taken.append(factor)
        result.append(tuple(taken))
    if any(f != 1 for f in queue):
        raise refusal
    return result


def _view(masking, node):
    source = node.args[0]
    factors = masking.factors.get(source)
    out_shape = shape_of(node.meta["val"])
    if factors is None or not masking.touches_padding(source):
        masking.factors[node] = fresh_factors(node.meta["val"]) if factors is None else \
            _regroup_or_fresh(masking, factors, out_shape, node)
        return
    masking.factors[node] = _regroup(masking, factors, out_shape, str(node.target))


def _regroup_or_fresh(masking, factors, out_shape, node):
    try:
        return _regroup(masking, factors, out_shape, str(node.target))
    except Unbucketable:
        return [(size,) for size in out_shape]


def _permute(masking, node):
    factors = masking.factors[node.args[0]]
    rank = len(factors)
    if node.target is aten.permute.default:
        order = [d % rank for d in node.args[1]]
    elif node.target is aten.t.default:
        order = list(reversed(range(rank)))
    else:
        order = list(range(rank))
        a, b = node.args[1] % rank, node.args[2] % rank
        order[a], order[b] = order[b], order[a]
    masking.factors[node] = [factors[d] for d in order]


def _unsqueeze(masking, node):
    factors = list(masking.factors[node.args[0]])
    dim = node.args[1] % (len(factors) + 1)
    factors.insert(dim, (sympy.Integer(1),))
    masking.factors[node] = factors


def _squeeze(masking, node):
    factors = masking.factors[node.args[0]]
    in_shape = shape_of(masking.meta(node.args[0]))
    rank = len(factors)
    if len(node.args) > 1:
        dims = node.args[1] if isinstance(node.args[1], (list, tuple)) else [node.args[1]]
        dims = {d % rank for d in dims} if rank else set()
    else:
        dims = set(range(rank))
    masking.factors[node] = [f for d, f in enumerate(factors)
                             if not (d in dims and in_shape[d] == 1)]


def _expand(masking, node):
    factors = masking.factors[node.args[0]]
    out_shape = shape_of(node.meta["val"])
    lead = len(out_shape) - len(factors)
    result = [(size,) for size in out_shape[:lead]]
    for k, dim in enumerate(factors):
        size = out_shape[lead + k]
        result.append(dim if product(dim) == sympy.expand(size) else (size,))
    masking.factors[node] = result


def _slice(masking, node):
    source = node.args[0]
    factors = list(masking.factors[source])
    rank = len(factors)
    dim = (node.args[1] if len(node.args) > 1 else 0) % rank
    out_size = shape_of(node.meta["val"])[dim]
    if masking.padded_dim(source, dim):
        start = node.args[2] if len(node.args) > 2 else 0
        end = node.args[3] if len(node.args) > 3 else None
        step = node.args[4] if len(node.args) > 4 else 1
        start = 0 if start is None else start
        end_is_tail = end is None or isinstance(end, torch.fx.Node) or (
            isinstance(end, int) and (end < 0 or end >= BIG))
        if len(factors[dim]) != 1 or step != 1 or not isinstance(start, int) or start < 0 \
                or not end_is_tail or out_size.has(sympy.Min, sympy.Max):
            raise Unbucketable(f"{node.target} cuts a padded dimension",
                               masking.symbols_of(source, [dim]))
    factors[dim] = (out_size,)
    masking.factors[node] = factors


def _select(masking, node):
    source, dim, index = node.args[0], node.args[1], node.args[2]
    factors = list(masking.factors[source])
    dim = dim % len(factors)
    if masking.padded_dim(source, dim):
        if not isinstance(index, int) or len(factors[dim]) != 1:
            raise Unbucketable(f"{node.target} picks a position of a padded dimension",
                               masking.symbols_of(source, [dim]))
        if index < 0:  # counted from the actual end, not the padded one
            position = masking.make(aten.add.Tensor, (masking.actual(factors[dim][0]), index),
                                     before=node)
            position = masking.make(aten.view.default, (position, [1]), before=node)
            picked = masking.make(aten.index_select.default, (source, dim, position),
                                   before=node)
            squeezed = masking.make(aten.squeeze.dims, (picked, [dim]), before=node)
            node.replace_all_uses_with(squeezed)
            masking.graph.erase_node(node)
            node = squeezed
    del factors[dim]
    masking.factors[node] = factors


def _along_static_dim(masking, node, dim_index, index_arg=None):
    """An op that mixes positions along one dimension only (a split, a gather): fine while
    that dimension is not padded. Index operands are zeroed at their padding (always in range)."""
    source = node.args[0]
    factors = masking.factors.get(source)
    if factors is None:
        return masking.opaque(node)
    dim = node.args[dim_index] if len(node.args) > dim_index else 0
    dim %= len(factors)
    if masking.padded_dim(source, dim):
        raise Unbucketable(f"{node.target} mixes positions of a padded dimension",
                           masking.symbols_of(source, [dim]))
    if index_arg is not None:
        masking.mask_args(node, [index_arg], lambda rank: range(rank), 0)
    meta = node.meta["val"]

    def with_dim(value):
        result = list(factors) if index_arg is None else list(masking.factors.get(
            node.args[index_arg], factors))
        shape = shape_of(value)
        if len(result) != len(shape):
            return fresh_factors(value)
        result[dim] = (shape[dim],)
        return result

    if isinstance(meta, (list, tuple)):
        masking.factors[node] = tuple(with_dim(v) for v in meta)
    else:
        masking.factors[node] = with_dim(meta)


def _split(masking, node):
    _along_static_dim(masking, node, 2)


def _gather(masking, node):
    _along_static_dim(masking, node, 1, index_arg=2)


def _scatter(masking, node):
    _along_static_dim(masking, node, 1, index_arg=2)
    masking.factors[node] = masking.factors[node.args[0]]


def _scatter_into_slice(masking, node):
    """slice_scatter / select_scatter: `src` written into a slice of `self` along one dimension,
    which must not be padded (positions along the others stay apart)."""
    source = node.args[0]
    factors = masking.factors.get(source)
    if factors is None:
        return masking.opaque(node)
    dim = (node.args[2] if len(node.args) > 2 else 0) % len(factors)
    if masking.padded_dim(source, dim) and not _writes_a_tail(node, factors[dim]):
        raise Unbucketable(f"{node.target} writes into a padded dimension",
                           masking.symbols_of(source, [dim]))
    masking.factors[node] = factors


def _writes_a_tail(node, dim_factors):
    """slice_scatter(self, src, dim, c, end) with a constant start c, step 1 and the end at
    self's end (the gradient of x[:, c:]): src's valid prefix lands on self's valid positions
    from c on, and its padding on self's padding."""
    if node.target is not aten.slice_scatter.default or len(dim_factors) != 1:
        return False
    start = node.args[3] if len(node.args) > 3 else None
    end = node.args[4] if len(node.args) > 4 else None
    step = node.args[5] if len(node.args) > 5 else 1
    start = 0 if start is None else start
    tail = end is None or isinstance(end, torch.fx.Node) or (isinstance(end, int) and end >= BIG)
    if isinstance(end, torch.fx.Node):
        size = end.meta.get("val")
        tail = isinstance(size, torch.SymInt) and sympy.expand(
            sympy.sympify(size.node.expr) - dim_factors[0]) == 0
    return isinstance(start, int) and start >= 0 and step == 1 and tail


def _softmax(masking, node):
    _softmax_like(masking, node, -1)


def _softmax_like(masking, node, fill):
    source, dim = node.args[0], node.args[1]
    masking.factors[node] = masking.factors[source]
    if masking.padded_dim(source, dim):
        masking.mask_args(node, [0], lambda rank: [dim], fill)


def _softmax_backward(masking, node):
    grad, dim = node.args[0], node.args[2]
    masking.factors[node] = masking.factors[grad]
    if masking.padded_dim(grad, dim):
        masking.mask_args(node, [0, 1], lambda rank: [dim], 0)


def _cat(masking, node):
    tensors = node.args[0]
    dim = node.args[1] if len(node.args) > 1 else 0
    rank = len(node.meta["val"].shape)
    # Empty pieces add nothing (an empty cache's first entry; cat also skips 1-d empty tensors
    # whatever the others' rank): joining one tensor with them is that tensor.
    known = [t for t in tensors if t in masking.factors and len(masking.factors[t]) == rank
             and 0 not in shape_of(masking.meta(t))]
    if not known:
        return masking.opaque(node)
    dim %= rank
    if len(known) == 1:
        masking.factors[node] = masking.factors[known[0]]
        return
    if any(masking.padded_dim(t, dim) for t in known):
        raise Unbucketable(f"{node.target} joins along a padded dimension",
                           set().union(*(masking.symbols_of(t, [dim]) for t in known)))
    factors = list(masking.factors[known[0]])
    factors[dim] = (shape_of(node.meta["val"])[dim],)
    masking.factors[node] = factors


def _contraction(masking, node, a_index, b_index, batch):
    a, b = node.args[a_index], node.args[b_index]
    fa, fb = masking.factors[a], masking.factors[b]
    k_a, k_b = len(fa) - 1, len(fb) - 2
    masking.require_same_padding(node, [fa[k_a], fb[k_b]])
    if any(masking.padded(f) for f in fa[k_a]) or any(masking.padded(f) for f in fb[k_b]):
        masking.mask_args(node, [a_index], lambda rank: [k_a], 0)
        masking.mask_args(node, [b_index], lambda rank: [k_b], 0)
    masking.factors[node] = ([fa[0]] if batch else []) + [fa[-2], fb[-1]]


def _mm(masking, node):
    _contraction(masking, node, 0, 1, batch=False)


def _addmm(masking, node):
    _contraction(masking, node, 1, 2, batch=False)


def _bmm(masking, node):
    _contraction(masking, node, 0, 1, batch=True)


def _embedding(masking, node):
    weight, indices = node.args[0], node.args[1]
    if masking.touches_padding(weight):
        raise Unbucketable(f"{node.target} looks up a padded table", masking.symbols_of(weight))
    masking.mask_args(node, [1], lambda rank: range(rank), 0)
    masking.factors[node] = list(masking.factors[indices]) + [masking.factors[weight][-1]]


def _index_put(masking, node):
    target, indices = node.args[0], node.args[1]
    if masking.touches_padding(target):
        raise Unbucketable(f"{node.target} writes into a padded tensor",
                           masking.symbols_of(target))
    masked_indices = [masking.masked(node, i, range(len(masking.factors[i])), 0, node)
                      if isinstance(i, torch.fx.Node) and i in masking.factors else i
                      for i in indices]
    masking.replace_arg(node, 1, masked_indices)
    masking.mask_args(node, [2], lambda rank: range(rank), 0)
    masking.factors[node] = masking.factors[target]


def _index_tensor(masking, node):
    """x[i, j]: each output position reads where its index tensors point. Valid positions point
    at valid ones (an index past the actual size would raise in eager code); the index tensors'
    padding is zeroed so that it points somewhere in range. Output dimensions are plain sizes."""
    indices = node.args[1]
    masked = [masking.masked(node, i, range(len(masking.factors[i])), 0, node)
              if isinstance(i, torch.fx.Node) and i in masking.factors else i for i in indices]
    masking.replace_arg(node, 1, masked)
    sizes = shape_of(node.meta["val"])
    derived = [size for size in sizes if masking.padded(size) and not size.is_Symbol]
    if derived:
        raise Unbucketable(f"{node.target} makes the padded size {derived[0]}",
                           derived[0].free_symbols & masking.symbols)
    masking.factors[node] = [(size,) for size in sizes]


def _constant_pad(masking, node):
    """F.pad with a constant: along a padded dimension the added values must follow the actual
    end, not the padded one (a label shift's -100), so positions from there on are filled."""
    source, pads = node.args[0], node.args[1]
    value = node.args[2] if len(node.args) > 2 else 0
    factors = list(masking.factors[source])
    rank = len(factors)
    sizes = shape_of(node.meta["val"])
    ends = []
    for k in range(len(pads) // 2):
        dim = rank - 1 - k
        if masking.padded_dim(source, dim):
            if len(factors[dim]) != 1 or not isinstance(pads[2 * k], int):
                raise Unbucketable(f"{node.target} pads a padded dimension",
                                   masking.symbols_of(source, [dim]))
            ends.append((dim, factors[dim][0], pads[2 * k]))
    masking.factors[node] = [factors[d] if d < rank - len(pads) // 2 else (sizes[d],)
                             for d in range(rank)]
    if not ends:
        return
    padded = node
    users = list(node.users)
    for dim, factor, before in ends:
        # Positions at or past (left padding + actual size) hold the pad value.
        end = masking.actual(factor + before)
        positions = masking.make(aten.arange.default, (masking.bucket(sizes[dim]),),
                                 {"dtype": torch.int64, "device": masking.device}, before=None)
        past = masking.make(aten.ge.Tensor, (positions, end))
        shape = [1] * rank
        shape[dim] = masking.bucket(sizes[dim])
        past = masking.make(aten.view.default, (past, shape))
        with masking.graph.inserting_after(padded):
            filled = masking.graph.call_function(aten.masked_fill.Scalar, (padded, past, value))
        with masking.fake_mode:
            filled.meta["val"] = aten.masked_fill.Scalar(padded.meta["val"], past.meta["val"],
                                                         value)
        masking.factors[filled] = masking.factors[node]
        padded = filled
    for user in users:
        user.replace_input_with(node, padded)


def _normalized_rows(masking, node, source, normalized):
    """The factors of a layer norm's input and its count of row dimensions (those before the
    normalized ones, which must not be padded)."""
    factors = masking.factors[source]
    rows = len(factors) - len(normalized)
    normalized_dims = range(rows, len(factors))
    if any(masking.padded_dim(source, d) for d in normalized_dims):
        raise Unbucketable(f"{node.target} normalizes over a padded dimension",
                           masking.symbols_of(source, normalized_dims))
    return factors, rows


def _layer_norm(masking, node):
    factors, rows = _normalized_rows(masking, node, node.args[0], node.args[1])
    stats = list(factors[:rows]) + [(sympy.Integer(1),)] * (len(factors) - rows)
    masking.factors[node] = (factors, stats, stats)


def _layer_norm_backward(masking, node):
    factors, rows = _normalized_rows(masking, node, node.args[1], node.args[2])
    # The weight and bias gradients sum over rows: padded rows must add nothing.
    masking.mask_args(node, [0, 1, 3, 4], lambda rank: range(rows), 0)
    weight = masking.factors.get(node.args[5])
    bias = masking.factors.get(node.args[6])
    masking.factors[node] = (factors, weight, bias)


def _flash_attention(masking, node, backward):
    tensors = [0, 1, 2, 3, 4, 5] if backward else [0, 1, 2]
    query, key = (node.args[1], node.args[2]) if backward else (node.args[0], node.args[1])
    is_causal = node.args[7] if backward else (node.args[4] if len(node.args) > 4 else False)
    dropout = node.args[6] if backward else (node.args[3] if len(node.args) > 3 else 0.0)
    fq, fk = masking.factors[query], masking.factors[key]
    sequences = set().union(*(masking.symbols_of(node.args[k], [-2]) for k in tensors[:4]))
    if masking.padded_dim(query, -1) or masking.padded_dim(key, -1):
        raise Unbucketable(f"{node.target} has a padded head dimension",
                           masking.symbols_of(query, [-1]) | masking.symbols_of(key, [-1]))
    if dropout and (masking.padded_dim(key, -2) or masking.padded_dim(query, -2)):
        raise Unbucketable(f"{node.target} drops out at random over a padded dimension",
                           sequences)
    attn_mask = node.kwargs.get("attn_mask")
    if masking.padded_dim(key, -2) or (attn_mask is not None and masking.padded_dim(query, -2)):
        if is_causal and attn_mask is None and fq[-2] == fk[-2]:
            pass  # valid queries see only earlier keys: the padding comes after all of them
        elif is_causal:
            raise Unbucketable(f"{node.target} is causal over keys padded apart from its "
                               "queries", sequences)
        else:
            node.kwargs = {**node.kwargs, "attn_mask": _keys_masked(masking, node, attn_mask,
                                                                    fq[-2], fk[-2])}
    if backward or node.kwargs.get("attn_mask") is not None:
        # The backward's sums and an additive mask would carry a NaN or inf of the padding into
        # valid results (NaN + -inf is NaN). A causal forward never reads padded keys for a
        # valid query: the kernel skips or overwrites them.
        masking.mask_args(node, tensors, lambda rank: range(rank), 0)
    if backward:
        masking.factors[node] = tuple(masking.factors[node.args[k]] for k in (1, 2, 3))
    else:
        value = masking.factors[node.args[2]]
        out = list(fq[:-1]) + [value[-1]]
        masking.factors[node] = (out, list(fq[:-1]))


def _keys_masked(masking, node, attn_mask, query_factors, key_factors):
    """The attention mask with padded keys blocked, and padded queries' rows open to every key
    (a row with nothing to attend would be NaN, and its gradient would reach valid keys)."""
    key = ("attention mask", attn_mask, query_factors, key_factors)
    if key in masking.cache:
        return masking.cache[key]
    rows = masking.make(aten.view.default, (masking.dim_padding(query_factors),
                                            [1, 1, masking.bucket(product(query_factors)), 1]))
    columns = masking.make(aten.view.default, (masking.dim_padding(key_factors),
                                               [1, 1, 1, masking.bucket(product(key_factors))]))
    # The kernel takes an additive mask of the query's dtype (SDPA converts a boolean one).
    dtype = masking.meta(node.args[1] if node.target is _FLASH_BACKWARD else node.args[0]).dtype
    if attn_mask is None:
        blocked = masking.make(aten.bitwise_and.Tensor,
                               (columns, masking.make(aten.bitwise_not.default, (rows,))))
        zeros = masking.make(prims.convert_element_type.default, (blocked, dtype))
        allowed = masking.make(aten.masked_fill.Scalar, (zeros, blocked, -math.inf))
    else:
        if masking.meta(attn_mask).dtype == torch.bool:
            open_positions = masking.make(prims.convert_element_type.default, (attn_mask, dtype),
                                          before=node)
            attn_mask = masking.make(aten.masked_fill.Scalar, (
                masking.make(aten.sub.Tensor, (open_positions, 1), before=node),
                masking.make(aten.bitwise_not.default, (attn_mask,), before=node), -math.inf),
                before=node)
        blocked = masking.make(aten.masked_fill.Scalar, (attn_mask, columns, -math.inf),
                               before=node)
        allowed = masking.make(aten.masked_fill.Scalar, (blocked, rows, 0.0), before=node)
    masking.cache[key] = allowed
    return allowed


HANDLERS = {
    aten.view.default: _view, aten._unsafe_view.default: _view, aten.reshape.default: _view,
    aten.permute.default: _permute, aten.t.default: _permute, aten.transpose.int: _permute,
    aten.unsqueeze.default: _unsqueeze, aten.squeeze.dims: _squeeze, aten.squeeze.dim: _squeeze,
    aten.squeeze.default: _squeeze, aten.expand.default: _expand, aten.slice.Tensor: _slice,
    aten.select.int: _select, aten.split_with_sizes.default: _split, aten.split.Tensor: _split,
    aten.gather.default: _gather, aten.scatter.value: _scatter, aten.scatter.src: _scatter,
    aten.scatter_add.default: _scatter, aten._softmax.default: _softmax,
    aten._log_softmax.default: _softmax,
    aten._softmax_backward_data.default: _softmax_backward,
    aten._log_softmax_backward_data.default: _softmax_backward, aten.cat.default: _cat,
    aten.slice_scatter.default: _scatter_into_slice,
    aten.select_scatter.default: _scatter_into_slice,
    aten.mm.default: _mm, aten.addmm.default: _addmm, aten.bmm.default: _bmm,
    aten.embedding.default: _embedding, aten.index.Tensor: _index_tensor,
    aten.constant_pad_nd.default: _constant_pad, aten.index_put.default: _index_put,
    aten.native_layer_norm.default: _layer_norm,
    aten.native_layer_norm_backward.default: _layer_norm_backward,
    _FLASH: lambda masking, node: _flash_attention(masking, node, backward=False),
    _FLASH_BACKWARD: lambda masking, node: _flash_attention(masking, node, backward=True),
}
