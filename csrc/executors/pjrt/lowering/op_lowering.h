// What an op's StableHLO lowering sees, and the lowerings themselves: one file per op family
// (pointwise.cpp, comparison.cpp, matmul.cpp, reduction.cpp, copy.cpp), listed in ONE table
// (registry.cpp). A lowering is functional: it reads its arguments' values and returns one
// tensor per tensor return; the program lowering (lower_program.cpp) writes those into the
// storages the node writes, so out= and in-place variants share their functional form's
// lowering. Torch-free.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "executors/pjrt/lowering/mlir_text.h"
#include "ir/program.h"

namespace torch_tpu::executors::pjrt::lowering {

// A data-dependent error a lowering cannot raise while compiling (an index out of range, an
// integral zero divisor): `violated` is a 0-d bool the program returns, `message` names the op.
struct RunTimeCheck {
  Tensor violated;
  std::string message;
};

// One node being lowered. Tensor arguments are read on demand (an out= argument is never read).
class OpContext {
 public:
  using ReadValue = std::function<Tensor(ir::ValueId)>;
  OpContext(FunctionBuilder& builder, const ir::Program& program, const ir::Node& node,
            std::vector<Tensor> scalar_operands, ReadValue read, std::vector<RunTimeCheck>& checks)
      : builder_(builder), program_(program), node_(node),
        scalar_operands_(std::move(scalar_operands)), read_(std::move(read)), checks_(checks) {}

  FunctionBuilder& builder() { return builder_; }
  const ir::Node& node() const { return node_; }
  const std::string& op() const { return node_.op; }
  // Argument `index` in schema order; throws naming the op when it is missing.
  const ir::Argument& arg(size_t index) const;
  // The value of tensor argument `index` as of this node (program order).
  Tensor tensor(size_t index);
  // The values of tensor-list argument `index` (every element present).
  std::vector<Tensor> tensor_list(size_t index);
  // The values of optional-tensor-list argument `index` (Tensor?[]), nullopt for an absent one.
  std::vector<std::optional<Tensor>> optional_tensor_list(size_t index);
  // The layout and dtype of tensor argument `index`, without reading it.
  const ir::TensorType& tensor_type(size_t index) const;
  ir::DType tensor_dtype(size_t index) const;
  // The storage tensor argument `index` lives in.
  ir::StorageId value_storage(size_t index) const;
  // The 0-d module parameter of kScalar argument `index` (a run-time operand).
  Tensor scalar(size_t index) const;
  // The layout of the node's tensor return `index` (in the order of node.returns).
  const ir::TensorType& return_type(size_t index) const;
  // True for an out= or in-place variant: its output's dtype is not derived from its inputs.
  bool writes_an_argument() const;
  // True for an in-place variant ("aten::add_.Tensor", "aten::neg_"): self is input and output.
  bool in_place() const;
  // Whether tensor argument `index` lives in host memory (a wrapped Python number, a CPU tensor).
  bool on_host(size_t index) const;
  // Throws executors::NotSupported "not supported yet: <op>: <what>".
  [[noreturn]] void refuse(const std::string& what) const;
  // The program fails when it runs, with "<op>: <message>", if `violated` (bool, any shape)
  // holds anywhere: ATen's data-dependent errors. The executor reads the outcome after the run
  // and keeps the storages the program would have written as they were.
  void check(const Tensor& violated, const std::string& message);
  // The new contents of tensor argument `index`, which the op updates in place besides its
  // returns (batch norm's running statistics), shaped and typed as that argument.
  void write_argument(size_t index, const Tensor& value);
  const std::vector<std::pair<ir::ValueId, Tensor>>& argument_writes() const { return argument_writes_; }

 private:
  FunctionBuilder& builder_;
  const ir::Program& program_;
  const ir::Node& node_;
  std::vector<Tensor> scalar_operands_;  // in argument order, one per kScalar argument
  ReadValue read_;
  std::vector<RunTimeCheck>& checks_;
  std::vector<std::pair<ir::ValueId, Tensor>> argument_writes_;
};

// Returns the node's tensor returns, in node.returns order, each shaped as its return type.
using OpLowering = std::vector<Tensor> (*)(OpContext& context);

// The lowering of schema name `op` ("aten::add.Tensor"), or nullptr.
OpLowering find_lowering(const std::string& op);
// Every op with a lowering, sorted (for documentation and tests).
std::vector<std::string> lowered_ops();

// Shared by the families (lower_program.cpp): the dtype a floating op computes in, f32 for half
// precision (ATen's CPU kernels accumulate so) and the output's otherwise; a non-floating
// output is refused.
ir::DType floating_compute(OpContext& context, ir::DType out);
// Tensor argument `index` converted to `compute` and broadcast to `shape`.
Tensor converted_operand(OpContext& context, size_t index, ir::DType compute,
                         const std::vector<int64_t>& shape);
// `value` rounded to return `index`'s dtype and reshaped to its sizes (a statistic computed
// without keepdim's 1s, or in a wider dtype).
Tensor as_return(OpContext& context, size_t index, const Tensor& value);

// Shared by the families (pointwise.cpp): tensor or Scalar argument `index` of an elementwise op
// writing `out`, converted to `compute` and broadcast to out's sizes. PyTorch computes an out=
// or in-place variant in its inputs' promoted dtype and casts to out's: a variant whose promoted
// dtype is neither out's nor `compute` is refused.
Tensor elementwise_operand(OpContext& context, size_t index, const ir::TensorType& out,
                           ir::DType compute);
// at::result_type of the node's tensor and Scalar inputs (an out= argument excluded).
ir::DType promoted_dtype(OpContext& context);
// The dtype an elementwise op computes in: its output's for a functional form, the promoted
// dtype of its inputs for an out= or in-place variant.
ir::DType elementwise_compute(OpContext& context);

// Shared by the families (reduction.cpp): `x` reduced over `dims` (sorted, unique) with the
// binary op `combine` ("stablehlo.add", "stablehlo.maximum") from `init` (a 0-d tensor of x's
// dtype), whose result has the sizes `kept` (x's other dimensions); reduce_sum from zero.
Tensor reduce(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& kept, const std::string& combine, const Tensor& init);
Tensor reduce_sum(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& kept);
// reduce_sum accumulating a float32 `x` in f64, the result still f64 (callers round once where
// ATen does): ATen's CPU accumulate type for float is double (batch norm's statistics and
// gradient sums), and XLA's f32 order of summation is not ATen's.
Tensor reduce_sum_in_double(FunctionBuilder& builder, const Tensor& x, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& kept);
// `x` reduced over dimension `dim` by `combine`, the dimension kept with size 1 (keepdim).
Tensor reduce_keepdim(FunctionBuilder& builder, const Tensor& x, int64_t dim,
                      const std::string& combine, const Tensor& init);
// A dimension argument (negative counts from the end) as an index into `rank` dimensions;
// refuses one out of range.
int64_t normalized_dim(OpContext& context, int64_t dim, size_t rank);
// Shared by convolution and pooling: int list argument `index` with one value per spatial
// dimension (a single value repeats; an empty list is `fallback` when one is given). Refuses
// another length, naming the argument `what`.
std::vector<int64_t> per_dimension(OpContext& context, size_t index, size_t spatial, const char* what,
                                   const std::vector<int64_t>& fallback = {});

// Families (registry.cpp maps schema names to these).
std::vector<Tensor> lower_add(OpContext& context);        // add.Tensor/.Scalar/.out/_.Tensor
std::vector<Tensor> lower_sub(OpContext& context);
std::vector<Tensor> lower_rsub(OpContext& context);       // rsub.Tensor/.Scalar (+ outs)
std::vector<Tensor> lower_mul(OpContext& context);
std::vector<Tensor> lower_div(OpContext& context);
std::vector<Tensor> lower_neg(OpContext& context);
std::vector<Tensor> lower_exp(OpContext& context);
std::vector<Tensor> lower_relu(OpContext& context);
std::vector<Tensor> lower_sqrt(OpContext& context);
std::vector<Tensor> lower_rsqrt(OpContext& context);
std::vector<Tensor> lower_log(OpContext& context);
std::vector<Tensor> lower_tanh(OpContext& context);
std::vector<Tensor> lower_sigmoid(OpContext& context);
std::vector<Tensor> lower_abs(OpContext& context);
std::vector<Tensor> lower_maximum(OpContext& context);
std::vector<Tensor> lower_minimum(OpContext& context);
std::vector<Tensor> lower_eq(OpContext& context);         // eq.Tensor, eq.Scalar (+ .out)
std::vector<Tensor> lower_ne(OpContext& context);
std::vector<Tensor> lower_lt(OpContext& context);
std::vector<Tensor> lower_le(OpContext& context);
std::vector<Tensor> lower_gt(OpContext& context);
std::vector<Tensor> lower_ge(OpContext& context);
std::vector<Tensor> lower_where(OpContext& context);      // where.self
std::vector<Tensor> lower_dot(OpContext& context);        // dot, vdot (real dtypes) (+ outs)
std::vector<Tensor> lower_mm(OpContext& context);         // mm, mm.out
std::vector<Tensor> lower_bmm(OpContext& context);        // bmm, bmm.out
std::vector<Tensor> lower_addmm(OpContext& context);      // addmm, addmm.out
std::vector<Tensor> lower_baddbmm(OpContext& context);    // baddbmm (+ _, out)
std::vector<Tensor> lower_addmv(OpContext& context);      // addmv (+ _, out)
std::vector<Tensor> lower_cdist_forward(OpContext& context);  // _cdist_forward (+ .out), distance.cpp
std::vector<Tensor> lower_pdist_forward(OpContext& context);  // _pdist_forward (+ .out)
std::vector<Tensor> lower_threshold_backward(OpContext& context);
std::vector<Tensor> lower_mse_loss(OpContext& context);   // mse_loss (+ .out)
std::vector<Tensor> lower_addcmul(OpContext& context);    // addcmul (+ .out, _)
std::vector<Tensor> lower_addcdiv(OpContext& context);    // addcdiv (+ .out, _)
std::vector<Tensor> lower_lerp_scalar(OpContext& context);  // lerp.Scalar (+ .Scalar_out, _)
std::vector<Tensor> lower_silu(OpContext& context);       // silu, silu_, silu.out
std::vector<Tensor> lower_silu_backward(OpContext& context);
std::vector<Tensor> lower_cat(OpContext& context);        // cat, cat.out
std::vector<Tensor> lower_log_softmax(OpContext& context);  // _log_softmax (+ .out)
std::vector<Tensor> lower_log_softmax_backward(OpContext& context);
std::vector<Tensor> lower_softmax(OpContext& context);      // _softmax (+ .out)
std::vector<Tensor> lower_softmax_backward(OpContext& context);
std::vector<Tensor> lower_mse_loss_backward(OpContext& context);
// attention.cpp
std::vector<Tensor> lower_flash_attention(OpContext& context);           // _scaled_dot_product_flash_attention_for_cpu
std::vector<Tensor> lower_flash_attention_backward(OpContext& context);  // ..._for_cpu_backward
// nll_loss.cpp
std::vector<Tensor> lower_nll_loss_forward(OpContext& context);   // nll_loss_forward, nll_loss2d_forward (+.output)
std::vector<Tensor> lower_nll_loss_backward(OpContext& context);  // nll_loss_backward, nll_loss2d_backward (+.grad_input)
std::vector<Tensor> lower_sum_dims(OpContext& context);   // sum.dim_IntList, sum.IntList_out
std::vector<Tensor> lower_sum(OpContext& context);        // sum (all elements)
std::vector<Tensor> lower_mean_dims(OpContext& context);  // mean.dim, mean.out
std::vector<Tensor> lower_copy_(OpContext& context);      // copy_
std::vector<Tensor> lower_clone(OpContext& context);      // clone, _to_copy
std::vector<Tensor> lower_fill_(OpContext& context);      // fill_.Scalar, fill.Scalar (+ out)
std::vector<Tensor> lower_fill_tensor(OpContext& context);  // fill_.Tensor, fill.Tensor (+ out)
std::vector<Tensor> lower_roll(OpContext& context);         // roll (+ out)
std::vector<Tensor> lower_zero_(OpContext& context);      // zero_
// math.cpp
std::vector<Tensor> lower_sin(OpContext& context);
std::vector<Tensor> lower_cos(OpContext& context);
std::vector<Tensor> lower_tan(OpContext& context);
std::vector<Tensor> lower_asin(OpContext& context);
std::vector<Tensor> lower_acos(OpContext& context);
std::vector<Tensor> lower_atan(OpContext& context);
std::vector<Tensor> lower_sinh(OpContext& context);
std::vector<Tensor> lower_cosh(OpContext& context);
std::vector<Tensor> lower_asinh(OpContext& context);
std::vector<Tensor> lower_acosh(OpContext& context);
std::vector<Tensor> lower_atanh(OpContext& context);
std::vector<Tensor> lower_erf(OpContext& context);
std::vector<Tensor> lower_expm1(OpContext& context);
std::vector<Tensor> lower_log1p(OpContext& context);
std::vector<Tensor> lower_log2(OpContext& context);
std::vector<Tensor> lower_log10(OpContext& context);
std::vector<Tensor> lower_atan2(OpContext& context);
std::vector<Tensor> lower_reciprocal(OpContext& context);
std::vector<Tensor> lower_ceil(OpContext& context);
std::vector<Tensor> lower_floor(OpContext& context);
std::vector<Tensor> lower_round(OpContext& context);
std::vector<Tensor> lower_round_decimals(OpContext& context);
std::vector<Tensor> lower_trunc(OpContext& context);
std::vector<Tensor> lower_sign(OpContext& context);
std::vector<Tensor> lower_isnan(OpContext& context);
std::vector<Tensor> lower_isposinf(OpContext& context);  // isposinf, isposinf.out
std::vector<Tensor> lower_isneginf(OpContext& context);  // isneginf, isneginf.out
std::vector<Tensor> lower_fmod(OpContext& context);
std::vector<Tensor> lower_remainder(OpContext& context);
std::vector<Tensor> lower_div_mode(OpContext& context);
std::vector<Tensor> lower_floor_divide(OpContext& context);
std::vector<Tensor> lower_pow(OpContext& context);
// logical.cpp
std::vector<Tensor> lower_bitwise_and(OpContext& context);
std::vector<Tensor> lower_bitwise_or(OpContext& context);
std::vector<Tensor> lower_bitwise_xor(OpContext& context);
std::vector<Tensor> lower_bitwise_not(OpContext& context);
std::vector<Tensor> lower_logical_and(OpContext& context);
std::vector<Tensor> lower_logical_or(OpContext& context);
std::vector<Tensor> lower_logical_xor(OpContext& context);
std::vector<Tensor> lower_logical_not(OpContext& context);
// clamp.cpp (hardtanh is clamp with Scalar bounds)
std::vector<Tensor> lower_clamp(OpContext& context);
std::vector<Tensor> lower_clamp_tensor(OpContext& context);
std::vector<Tensor> lower_clamp_min(OpContext& context);
std::vector<Tensor> lower_clamp_max(OpContext& context);
std::vector<Tensor> lower_clamp_min_tensor(OpContext& context);
std::vector<Tensor> lower_clamp_max_tensor(OpContext& context);
// activation.cpp; gelu_is_tanh_form (shared with gelu_backward) reads gelu's `approximate`
// argument `index`: "tanh" true, "none" or absent false, others refused.
bool gelu_is_tanh_form(OpContext& context, size_t index);
std::vector<Tensor> lower_leaky_relu(OpContext& context);
std::vector<Tensor> lower_elu(OpContext& context);
std::vector<Tensor> lower_gelu(OpContext& context);
// math_more.cpp
std::vector<Tensor> lower_erfc(OpContext& context);        // erfc (+ _, out)
std::vector<Tensor> lower_exp2(OpContext& context);        // exp2 (+ _, out)
std::vector<Tensor> lower_frac(OpContext& context);        // frac (+ _, out)
std::vector<Tensor> lower_signbit(OpContext& context);     // signbit (+ out)
std::vector<Tensor> lower_nan_to_num(OpContext& context);  // nan_to_num (+ _, out)
// activation_more.cpp
std::vector<Tensor> lower_hardsigmoid(OpContext& context);  // hardsigmoid (+ _, out)
std::vector<Tensor> lower_hardswish(OpContext& context);    // hardswish (+ _, out)
std::vector<Tensor> lower_softplus(OpContext& context);     // softplus (+ out)
std::vector<Tensor> lower_softplus_backward(OpContext& context);  // softplus_backward (+ grad_input)
std::vector<Tensor> lower_mish(OpContext& context);         // mish (+ _, out)
std::vector<Tensor> lower_log_sigmoid_forward(OpContext& context);   // log_sigmoid_forward (+ output)
std::vector<Tensor> lower_log_sigmoid_backward(OpContext& context);  // log_sigmoid_backward (+ grad_input)
std::vector<Tensor> lower_threshold(OpContext& context);    // threshold (+ _, out)
// data_movement.cpp, factory.cpp
std::vector<Tensor> lower_flip(OpContext& context);
std::vector<Tensor> lower_arange(OpContext& context);  // arange.start_out
// indexing.cpp, advanced_indexing.cpp, scatter.cpp, index_add.cpp, masked_fill.cpp: indices are
// checked at run time. The helpers they share (indexing_support.cpp); a position is an i64
// row-major element offset into a tensor seen as 1-D.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
// `self`'s elements at the positions `linear` (i64, any shape), shaped as `linear`.
Tensor take_linear(FunctionBuilder& builder, const Tensor& self, const Tensor& linear);
// iota along dimension `dim` of `shape` times `stride` (i64): one coordinate's share of a position.
Tensor coordinate_term(FunctionBuilder& builder, const std::vector<int64_t>& shape, size_t dim, int64_t stride);
// The position in `self_shape` of each element of `shape` whose coordinate along `dim` is `along`
// (i64 of `shape`) and whose other coordinates are its own.
Tensor linear_positions(FunctionBuilder& builder, const std::vector<int64_t>& self_shape,
                        const std::vector<int64_t>& shape, int64_t dim, const Tensor& along);
// `x` as 1-D of one element when 0-d, else as it is: ATen's indexing ops treat a 0-d tensor so.
Tensor at_least_1d(FunctionBuilder& builder, const Tensor& x);
// Tensor argument `index` as i64; refuses a dtype other than int64 / int32.
Tensor index_operand(OpContext& context, size_t index);
// True where an index lies outside [0, size).
Tensor out_of_range(FunctionBuilder& builder, const Tensor& index, int64_t size);
// stablehlo.scatter of `updates` (1-D) into `flat` (1-D) at `positions` (1-D i64, as many), each
// element becoming combine(current, update) (built in the update region). XLA applies updates
// to one element in an unspecified order: `combine` must be commutative and associative, or
// the result only within rounding of ATen's serial order (float sums).
using ScatterCombine = std::function<Tensor(FunctionBuilder&, const Tensor&, const Tensor&)>;
Tensor scatter_linear(FunctionBuilder& builder, const Tensor& flat, const Tensor& positions,
                      const Tensor& updates, const ScatterCombine& combine);
// `flat` with element positions[i] set to updates[i], the largest i winning where positions
// repeat (ATen's serial loops write in that order): exact, unlike an overwriting scatter.
Tensor assign_linear_last_wins(FunctionBuilder& builder, const Tensor& flat, const Tensor& positions,
                               const Tensor& updates);
// Bool of `count` elements: true at each of `positions` (1-D).
Tensor written_mask(FunctionBuilder& builder, int64_t count, const Tensor& positions);
// A 0-d value (a Scalar operand, a 0-d tensor's item()) as `dtype`, converted as ATen's
// Scalar::to<T>() does: through float to half precision, nonzero to true, and the program
// failing ("value cannot be converted to type float without overflow") where ATen raises.
Tensor value_as(OpContext& context, const Tensor& value, ir::DType dtype);
Tensor scalar_as(OpContext& context, size_t index, ir::DType dtype);
bool is_half_precision(ir::DType dtype);
// indexing.cpp
std::vector<Tensor> lower_gather(OpContext& context);
std::vector<Tensor> lower_index_select(OpContext& context);
std::vector<Tensor> lower_take(OpContext& context);          // take, take.out
// advanced_indexing.cpp
std::vector<Tensor> lower_index(OpContext& context);         // index.Tensor (+ Tensor_out)
std::vector<Tensor> lower_index_put(OpContext& context);     // index_put, _index_put_impl_ (+ _, out)
// scatter.cpp
std::vector<Tensor> lower_scatter_src(OpContext& context);   // scatter.src (+ _, src_out)
std::vector<Tensor> lower_scatter_value(OpContext& context);  // scatter.value (+ _, value_out)
std::vector<Tensor> lower_scatter_reduce(OpContext& context);  // scatter.reduce (+ _, reduce_out)
std::vector<Tensor> lower_scatter_value_reduce(OpContext& context);  // scatter.value_reduce (+ ...)
std::vector<Tensor> lower_scatter_add(OpContext& context);   // scatter_add (+ _, out)
std::vector<Tensor> lower_scatter_reduce_two(OpContext& context);  // scatter_reduce.two (+ _, two_out)
// index_add.cpp
std::vector<Tensor> lower_index_add(OpContext& context);     // index_add (+ _, out)
std::vector<Tensor> lower_index_copy(OpContext& context);    // index_copy (+ _, out)
std::vector<Tensor> lower_embedding_dense_backward(OpContext& context);  // (+ .out)
// masked_fill.cpp
std::vector<Tensor> lower_masked_fill(OpContext& context);   // masked_fill.Scalar/.Tensor (+ _, outs)
// special_binary.cpp
std::vector<Tensor> lower_fmax(OpContext& context);       // fmax (+ out)
std::vector<Tensor> lower_fmin(OpContext& context);       // fmin (+ out)
std::vector<Tensor> lower_copysign(OpContext& context);   // copysign.Tensor/.Scalar (+ _, outs)
std::vector<Tensor> lower_heaviside(OpContext& context);  // heaviside (+ _, out)
std::vector<Tensor> lower_xlogy(OpContext& context);      // xlogy.Tensor/.Scalar_Other/.Scalar_Self (+ _, outs)
std::vector<Tensor> lower_logaddexp(OpContext& context);  // logaddexp (+ out)
// vector_norm.cpp
std::vector<Tensor> lower_linalg_vector_norm(OpContext& context);  // linalg_vector_norm (+ out)
std::vector<Tensor> lower_norm(OpContext& context);  // norm.Scalar, .ScalarOpt_dim(_dtype) (+ outs)
// weight_norm.cpp
std::vector<Tensor> lower_weight_norm_interface(OpContext& context);           // _weight_norm_interface
std::vector<Tensor> lower_weight_norm_interface_backward(OpContext& context);  // its backward
// triangular.cpp
std::vector<Tensor> lower_tril(OpContext& context);          // tril (+ _, out)
std::vector<Tensor> lower_triu(OpContext& context);          // triu (+ _, out)

// reduction.cpp, arg_reduction.cpp, variance.cpp, scan.cpp, sort.cpp: the helpers they share
// (reduction_support.cpp).
// The dimensions a reduction's argument `index` names, normalized, sorted and unique: an int,
// an int list (an empty one names every dimension when `empty_list_is_all`, none otherwise:
// amax's [] is all, any.dims' [] is none), or absent (every dimension). A 0-d input's dim 0 or
// -1 names none. Refuses a dimension out of range.
std::vector<int64_t> reduction_dims(OpContext& context, size_t index, size_t rank,
                                    bool empty_list_is_all);
// `shape` without the dimensions `dims` (sorted): a reduction's result sizes before keepdim.
std::vector<int64_t> kept_sizes(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims);
// The 0-d identities of maximum and minimum: -inf (the lowest integer, false) and +inf.
Tensor lowest_value(FunctionBuilder& builder, ir::DType dtype);
Tensor highest_value(FunctionBuilder& builder, ir::DType dtype);
// True where `x` is NaN (x != x).
Tensor nan_mask(FunctionBuilder& builder, const Tensor& x);
// reduction.cpp
std::vector<Tensor> lower_amax(OpContext& context);       // amax, amax.out
std::vector<Tensor> lower_amin(OpContext& context);       // amin, amin.out
std::vector<Tensor> lower_max(OpContext& context);        // max (all elements), max.unary_out
std::vector<Tensor> lower_min(OpContext& context);        // min (all elements), min.unary_out
std::vector<Tensor> lower_any(OpContext& context);        // any, any.dim, any.dims (+ outs)
std::vector<Tensor> lower_all(OpContext& context);        // all, all.dim, all.dims (+ outs)
std::vector<Tensor> lower_prod(OpContext& context);       // prod, prod.dim_int (+ outs)
// arg_reduction.cpp
std::vector<Tensor> lower_argmax(OpContext& context);     // argmax, argmax.out
std::vector<Tensor> lower_argmin(OpContext& context);     // argmin, argmin.out
std::vector<Tensor> lower_max_dim(OpContext& context);    // max.dim, max.dim_max
std::vector<Tensor> lower_min_dim(OpContext& context);    // min.dim, min.dim_min
// variance.cpp
std::vector<Tensor> lower_var(OpContext& context);        // var.correction (+ correction_out)
std::vector<Tensor> lower_std(OpContext& context);        // std.correction (+ out)
std::vector<Tensor> lower_var_mean(OpContext& context);   // var_mean.correction (+ out)
std::vector<Tensor> lower_std_mean(OpContext& context);   // std_mean.correction (+ out)
// scan.cpp
std::vector<Tensor> lower_cumsum(OpContext& context);     // cumsum, cumsum.out, cumsum_
// sort.cpp
std::vector<Tensor> lower_sort_stable(OpContext& context);  // sort.stable, sort.values_stable
// histogram.cpp
std::vector<Tensor> lower_histc(OpContext& context);        // histc, histc.out

// normalization.cpp, convolution.cpp, padding.cpp, pooling.cpp, upsample.cpp (NN ops)
std::vector<Tensor> lower_native_layer_norm(OpContext& context);   // native_layer_norm (+ .out)
std::vector<Tensor> lower_native_group_norm(OpContext& context);   // native_group_norm (+ .out)
std::vector<Tensor> lower_native_batch_norm(OpContext& context);   // native_batch_norm (+ .out)
std::vector<Tensor> lower_native_batch_norm_legit(OpContext& context);  // _native_batch_norm_legit
std::vector<Tensor> lower_native_batch_norm_legit_no_stats(OpContext& context);
std::vector<Tensor> lower_native_batch_norm_legit_no_training(OpContext& context);
std::vector<Tensor> lower_convolution(OpContext& context);         // convolution (+ .out)
std::vector<Tensor> lower_convolution_backward(OpContext& context);  // (+ .out)
std::vector<Tensor> lower_reflection_pad(OpContext& context);      // reflection_pad{1,2,3}d
std::vector<Tensor> lower_replication_pad(OpContext& context);     // replication_pad{1,2,3}d
std::vector<Tensor> lower_avg_pool(OpContext& context);            // avg_pool{2,3}d (+ .out)
std::vector<Tensor> lower_avg_pool_backward(OpContext& context);   // avg_pool{2,3}d_backward (+ grad_input)
std::vector<Tensor> lower_adaptive_avg_pool_backward(OpContext& context);  // _adaptive_avg_pool{2,3}d_backward
std::vector<Tensor> lower_adaptive_avg_pool(OpContext& context);   // _adaptive_avg_pool{2,3}d
std::vector<Tensor> lower_upsample_nearest2d(OpContext& context);  // upsample_nearest2d (+ .vec)
std::vector<Tensor> lower_upsample_bilinear2d(OpContext& context);  // upsample_bilinear2d (+ .vec)

// normalization_backward.cpp, activation_backward.cpp, max_pooling.cpp, pooling_backward.cpp
// (the gradients a training step's backward pass needs, and max pooling)
std::vector<Tensor> lower_native_layer_norm_backward(OpContext& context);  // (+ .out)
std::vector<Tensor> lower_native_group_norm_backward(OpContext& context);  // (+ .out)
std::vector<Tensor> lower_native_batch_norm_backward(OpContext& context);  // (+ .out)
std::vector<Tensor> lower_gelu_backward(OpContext& context);        // (+ .grad_input)
std::vector<Tensor> lower_elu_backward(OpContext& context);         // (+ .grad_input)
std::vector<Tensor> lower_leaky_relu_backward(OpContext& context);  // (+ .grad_input)
std::vector<Tensor> lower_hardtanh_backward(OpContext& context);    // (+ .grad_input)
std::vector<Tensor> lower_sigmoid_backward(OpContext& context);     // (+ .grad_input)
std::vector<Tensor> lower_tanh_backward(OpContext& context);        // (+ .grad_input)
std::vector<Tensor> lower_max_pool_with_indices(OpContext& context);  // max_pool{2,3}d_with_indices
std::vector<Tensor> lower_max_pool_with_indices_backward(OpContext& context);  // (+ .grad_input)

}  // namespace torch_tpu::executors::pjrt::lowering
