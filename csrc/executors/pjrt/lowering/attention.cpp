// Scaled dot-product attention as the ops layer hands it to a device: PyTorch's CPU flash
// kernel's op (_scaled_dot_product_flash_attention_for_cpu) and its backward, which the ops
// layer chooses for tpu (csrc/ops/attention.cpp). q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev].
// XLA fuses the whole attention into one program, so it is written as its definition:
// scores = q k^T * scale (+ mask), softmax over S, times v; logsumexp [B, H, L] is returned for
// the backward, which recomputes the probabilities from it. Half precision computes in f32 and,
// as the flash kernel, rounds the unnormalized probabilities to the input's dtype before they
// multiply v.
#include <cmath>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// a [B, H, ...] times b [B, H, ...], contracting a's dimension `a_contract` with b's
// `b_contract`, batched over B and H; the result is [B, H, a's free, b's free].
Tensor batched_dot(FunctionBuilder& builder, const Tensor& a, const Tensor& b, int64_t a_contract,
                   int64_t b_contract) {
  std::vector<int64_t> shape = {a.shape[0], a.shape[1], a.shape[a_contract == 3 ? 2 : 3],
                                b.shape[b_contract == 3 ? 2 : 3]};
  const std::string numbers = "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], "
                              "rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = " +
                              index_list({a_contract}) + ", rhs_contracting_dimensions = " +
                              index_list({b_contract}) + ">, " + highest_precision();
  return builder.op("stablehlo.dot_general", {a, b}, a.dtype, shape, numbers);
}

// What forward and backward share: the inputs in the compute dtype and the masked, scaled
// scores [B, H, L, S]. Arguments from `first` on: query, key, value, then (after the backward's
// out and logsumexp) dropout_p, is_causal, attn_mask, scale at `options`.
struct Attention {
  DType dtype;    // the inputs'
  DType compute;  // f32 for half precision
  Tensor q, k, v;
  Tensor scores;
  double scale;
};

Attention scores_of(OpContext& context, size_t first, size_t options) {
  FunctionBuilder& builder = context.builder();
  Attention a;
  a.dtype = context.tensor_dtype(first);
  a.compute = floating_compute(context, a.dtype);
  for (size_t i = first; i < first + 3; ++i) {
    if (context.tensor_dtype(i) != a.dtype) context.refuse("query, key and value of different dtypes");
    if (context.tensor_type(i).sizes.size() != 4) context.refuse("inputs that are not 4-d");
  }
  const std::vector<int64_t>& q_shape = context.tensor_type(first).sizes;
  const std::vector<int64_t>& k_shape = context.tensor_type(first + 1).sizes;
  const std::vector<int64_t>& v_shape = context.tensor_type(first + 2).sizes;
  if (k_shape[0] != q_shape[0] || k_shape[1] != q_shape[1] || k_shape[3] != q_shape[3] ||
      v_shape[0] != q_shape[0] || v_shape[1] != q_shape[1] || v_shape[2] != k_shape[2]) {
    context.refuse("query, key and value shapes that do not agree (grouped heads?)");
  }
  const ir::Argument& dropout = context.arg(options);
  if (dropout.kind != ir::Argument::Kind::kDouble || dropout.real != 0.0) context.refuse("dropout");
  const ir::Argument& causal = context.arg(options + 1);
  const ir::Argument& scale = context.arg(options + 3);
  a.scale = scale.kind == ir::Argument::Kind::kDouble
                ? scale.real
                : 1.0 / std::sqrt(static_cast<double>(q_shape[3]));
  a.q = builder.convert(context.tensor(first), a.compute);
  a.k = builder.convert(context.tensor(first + 1), a.compute);
  a.v = builder.convert(context.tensor(first + 2), a.compute);
  const std::vector<int64_t> shape = {q_shape[0], q_shape[1], q_shape[2], k_shape[2]};
  Tensor scores = builder.binary("stablehlo.multiply", batched_dot(builder, a.q, a.k, 3, 3),
                                 builder.float_splat(a.scale, a.compute, shape));
  const Tensor minus_infinity = builder.broadcast_to(lowest_value(builder, a.compute), shape);
  if (context.arg(options + 2).kind == ir::Argument::Kind::kTensor) {
    const DType mask_dtype = context.tensor_dtype(options + 2);
    if (context.tensor_type(options + 2).sizes.size() > 4) context.refuse("a mask of rank above 4");
    if (mask_dtype == DType::kBool) {
      scores = builder.select(builder.broadcast_to(context.tensor(options + 2), shape), scores, minus_infinity);
    } else if (mask_dtype == a.dtype) {
      scores = builder.binary("stablehlo.add", scores,
                              builder.convert(builder.broadcast_to(context.tensor(options + 2), shape), a.compute));
    } else {
      context.refuse("a mask of dtype " + ir::dtype_name(mask_dtype));
    }
  }
  if (causal.kind == ir::Argument::Kind::kBool && causal.integer != 0) {
    // Top-left aligned, as torch.ones(L, S).tril(): key j is seen by query i when j <= i.
    const Tensor row = builder.op("stablehlo.iota", {}, DType::kInt64, shape, "iota_dimension = 2 : i64");
    const Tensor column = builder.op("stablehlo.iota", {}, DType::kInt64, shape, "iota_dimension = 3 : i64");
    scores = builder.select(builder.compare(column, row, "LE"), scores, minus_infinity);
  }
  a.scores = scores;
  return a;
}

}  // namespace

// (output [B, H, L, Ev], logsumexp [B, H, L] in the compute dtype).
std::vector<Tensor> lower_flash_attention(OpContext& context) {
  const Attention a = scores_of(context, 0, 3);
  FunctionBuilder& builder = context.builder();
  const std::vector<int64_t>& shape = a.scores.shape;
  const std::vector<int64_t> rows = {shape[0], shape[1], shape[2]};
  const Tensor max = reduce(builder, a.scores, {3}, rows, "stablehlo.maximum", lowest_value(builder, a.compute));
  // A row masked everywhere has max -inf: shifting by 0 keeps its exponentials 0, not NaN.
  const Tensor safe_max = builder.select(builder.compare(max, builder.broadcast_to(lowest_value(builder, a.compute), rows), "EQ"),
                                         builder.zeros(a.compute, rows), max);
  const Tensor exponentials = builder.unary(
      "stablehlo.exponential", builder.binary("stablehlo.subtract", a.scores, builder.broadcast_in_dim(safe_max, shape, {0, 1, 2})));
  const Tensor sum = reduce_sum(builder, exponentials, {3}, rows);
  const Tensor weighted = batched_dot(builder, builder.round_through(exponentials, a.dtype), a.v, 3, 2);
  const Tensor output = builder.binary("stablehlo.divide", weighted,
                                       builder.broadcast_in_dim(sum, weighted.shape, {0, 1, 2}));
  const Tensor logsumexp = builder.binary("stablehlo.add", safe_max, builder.unary("stablehlo.log", sum));
  return {builder.convert(output, context.return_type(0).dtype),
          builder.convert(logsumexp, context.return_type(1).dtype)};
}

// (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask, scale) ->
// (grad_query, grad_key, grad_value): the probabilities recomputed from logsumexp,
// dS = P * (dO v^T - rowsum(dO * out)), dQ = dS k * scale, dK = dS^T q * scale, dV = P^T dO.
std::vector<Tensor> lower_flash_attention_backward(OpContext& context) {
  const Attention a = scores_of(context, 1, 6);
  FunctionBuilder& builder = context.builder();
  const std::vector<int64_t>& shape = a.scores.shape;
  const Tensor grad_out = builder.convert(context.tensor(0), a.compute);
  const Tensor out = builder.convert(context.tensor(4), a.compute);
  const Tensor logsumexp = builder.convert(context.tensor(5), a.compute);
  const Tensor probabilities = builder.unary(
      "stablehlo.exponential",
      builder.binary("stablehlo.subtract", a.scores, builder.broadcast_in_dim(logsumexp, shape, {0, 1, 2})));
  const Tensor low_probabilities = builder.round_through(probabilities, a.dtype);
  // dV [B, H, S, Ev] = P^T dO: contract P's L (2) with dO's L (2).
  const Tensor grad_v = batched_dot(builder, low_probabilities, grad_out, 2, 2);
  const Tensor grad_p = batched_dot(builder, grad_out, a.v, 3, 3);  // [B, H, L, S]
  const std::vector<int64_t> rows = {shape[0], shape[1], shape[2]};
  const Tensor row_dot = reduce_sum(builder, builder.binary("stablehlo.multiply", grad_out, out), {3}, rows);
  const Tensor grad_scores = builder.binary(
      "stablehlo.multiply", probabilities,
      builder.binary("stablehlo.subtract", grad_p, builder.broadcast_in_dim(row_dot, shape, {0, 1, 2})));
  const Tensor low_grad_scores = builder.round_through(grad_scores, a.dtype);
  const auto scaled = [&](const Tensor& x) {
    return builder.binary("stablehlo.multiply", x, builder.float_splat(a.scale, a.compute, x.shape));
  };
  const Tensor grad_q = scaled(batched_dot(builder, low_grad_scores, a.k, 3, 2));  // [B, H, L, E]
  const Tensor grad_k = scaled(batched_dot(builder, low_grad_scores, a.q, 2, 2));  // [B, H, S, E]
  return {builder.convert(grad_q, context.return_type(0).dtype), builder.convert(grad_k, context.return_type(1).dtype),
          builder.convert(grad_v, context.return_type(2).dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
