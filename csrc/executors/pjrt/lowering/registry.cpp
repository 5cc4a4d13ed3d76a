// The one table from IR op schema names to StableHLO lowerings. An out= or in-place variant
// maps to its functional form's lowering: the program lowering writes the result where the
// node's return lives.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

// The schema names one lowering serves: `base` ("sin"), its out= overload and its in-place
// form (every_form); Tensor/Scalar overloads of a binary op (tensor_and_scalar_forms), of a
// comparison (comparison_forms); a functional op and its out= overload (with_out).
std::vector<std::string> every_form(const std::string& base) {
  return {"aten::" + base, "aten::" + base + ".out", "aten::" + base + "_"};
}
std::vector<std::string> with_out(const std::string& base, const std::string& out = "out") {
  return {"aten::" + base, "aten::" + base + "." + out};
}
std::vector<std::string> tensor_and_scalar_forms(const std::string& base) {
  return {"aten::" + base + ".Tensor", "aten::" + base + ".Scalar", "aten::" + base + ".out",
          "aten::" + base + "_.Tensor", "aten::" + base + "_.Scalar"};
}
std::vector<std::string> comparison_forms(const std::string& base) {
  return {"aten::" + base + ".Tensor", "aten::" + base + ".Scalar",
          "aten::" + base + ".Tensor_out", "aten::" + base + ".Scalar_out"};
}
// A binary op whose out= overloads are named like a comparison's, with in-place forms (fmod).
std::vector<std::string> binary_forms(const std::string& base) {
  std::vector<std::string> forms = comparison_forms(base);
  forms.push_back("aten::" + base + "_.Tensor");
  forms.push_back("aten::" + base + "_.Scalar");
  return forms;
}
std::vector<std::string> joined(std::vector<std::string> forms, const std::vector<std::string>& more) {
  forms.insert(forms.end(), more.begin(), more.end());
  return forms;
}

struct Entry {
  OpLowering lowering;
  std::vector<std::string> schemas;
};

const std::unordered_map<std::string, OpLowering>& table() {
  static const std::unordered_map<std::string, OpLowering> lowerings = [] {
    const std::vector<Entry> entries = {
        // pointwise.cpp
        {lower_add, tensor_and_scalar_forms("add")},
        {lower_sub, tensor_and_scalar_forms("sub")},
        {lower_rsub, {"aten::rsub.Tensor", "aten::rsub.Scalar", "aten::rsub.Tensor_out", "aten::rsub.Scalar_out"}},
        {lower_mul, tensor_and_scalar_forms("mul")},
        {lower_div, tensor_and_scalar_forms("div")},
        {lower_neg, every_form("neg")},
        {lower_exp, every_form("exp")},
        {lower_relu, {"aten::relu", "aten::relu_"}},
        {lower_sqrt, every_form("sqrt")},
        {lower_rsqrt, every_form("rsqrt")},
        {lower_log, every_form("log")},
        {lower_tanh, every_form("tanh")},
        {lower_sigmoid, every_form("sigmoid")},
        {lower_abs, every_form("abs")},
        {lower_maximum, with_out("maximum")},
        {lower_minimum, with_out("minimum")},
        {lower_addcmul, every_form("addcmul")},
        {lower_addcdiv, every_form("addcdiv")},
        {lower_lerp_scalar, {"aten::lerp.Scalar", "aten::lerp_.Scalar", "aten::lerp.Scalar_out"}},
        // math.cpp
        {lower_sin, every_form("sin")},
        {lower_cos, every_form("cos")},
        {lower_tan, every_form("tan")},
        {lower_asin, every_form("asin")},
        {lower_acos, every_form("acos")},
        {lower_atan, every_form("atan")},
        {lower_sinh, every_form("sinh")},
        {lower_cosh, every_form("cosh")},
        {lower_asinh, every_form("asinh")},
        {lower_acosh, every_form("acosh")},
        {lower_atanh, every_form("atanh")},
        {lower_erf, every_form("erf")},
        {lower_expm1, every_form("expm1")},
        {lower_log1p, every_form("log1p")},
        {lower_log2, every_form("log2")},
        {lower_log10, every_form("log10")},
        {lower_atan2, every_form("atan2")},
        {lower_reciprocal, every_form("reciprocal")},
        {lower_ceil, every_form("ceil")},
        {lower_floor, every_form("floor")},
        {lower_round, every_form("round")},
        {lower_round_decimals, {"aten::round.decimals", "aten::round.decimals_out", "aten::round_.decimals"}},
        {lower_trunc, every_form("trunc")},
        {lower_sign, every_form("sign")},
        {lower_sign, every_form("sgn")},  // real dtypes only: complex is refused
        {lower_isnan, {"aten::isnan"}},
        {lower_isposinf, with_out("isposinf")},
        {lower_isneginf, with_out("isneginf")},
        {lower_fmod, binary_forms("fmod")},
        {lower_remainder, joined(binary_forms("remainder"), {"aten::remainder.Scalar_Tensor"})},
        {lower_div_mode, {"aten::div.Tensor_mode", "aten::div.Scalar_mode", "aten::div.out_mode",
                          "aten::div_.Tensor_mode", "aten::div_.Scalar_mode"}},
        {lower_floor_divide, {"aten::floor_divide", "aten::floor_divide.out", "aten::floor_divide_.Tensor",
                              "aten::floor_divide.Scalar", "aten::floor_divide_.Scalar"}},
        {lower_pow, {"aten::pow.Tensor_Tensor", "aten::pow.Tensor_Tensor_out", "aten::pow_.Tensor",
                     "aten::pow.Scalar", "aten::pow.Scalar_out", "aten::pow.Tensor_Scalar",
                     "aten::pow.Tensor_Scalar_out", "aten::pow_.Scalar"}},
        // logical.cpp
        {lower_bitwise_and, binary_forms("bitwise_and")},
        {lower_bitwise_or, binary_forms("bitwise_or")},
        {lower_bitwise_xor, binary_forms("bitwise_xor")},
        {lower_bitwise_not, every_form("bitwise_not")},
        {lower_logical_and, every_form("logical_and")},
        {lower_logical_or, every_form("logical_or")},
        {lower_logical_xor, every_form("logical_xor")},
        {lower_logical_not, every_form("logical_not")},
        // clamp.cpp
        {lower_clamp, joined(every_form("clamp"), every_form("hardtanh"))},
        {lower_clamp_tensor, {"aten::clamp.Tensor", "aten::clamp.Tensor_out", "aten::clamp_.Tensor"}},
        {lower_clamp_min, every_form("clamp_min")},
        {lower_clamp_max, every_form("clamp_max")},
        {lower_clamp_min_tensor, {"aten::clamp_min.Tensor", "aten::clamp_min.Tensor_out", "aten::clamp_min_.Tensor"}},
        {lower_clamp_max_tensor, {"aten::clamp_max.Tensor", "aten::clamp_max.Tensor_out", "aten::clamp_max_.Tensor"}},
        // data_movement.cpp, factory.cpp
        {lower_flip, with_out("flip")},
        {lower_arange, {"aten::arange.start_out"}},
        // indexing.cpp
        {lower_gather, with_out("gather")},
        {lower_index_select, with_out("index_select")},
        {lower_take, with_out("take")},
        // advanced_indexing.cpp
        {lower_index, {"aten::index.Tensor", "aten::index.Tensor_out"}},
        {lower_index_put, {"aten::index_put", "aten::index_put_", "aten::index_put.out", "aten::_index_put_impl",
                           "aten::_index_put_impl_", "aten::_index_put_impl.out"}},
        // scatter.cpp
        {lower_scatter_src, {"aten::scatter.src", "aten::scatter_.src", "aten::scatter.src_out"}},
        {lower_scatter_value, {"aten::scatter.value", "aten::scatter_.value", "aten::scatter.value_out"}},
        {lower_scatter_reduce, {"aten::scatter.reduce", "aten::scatter_.reduce", "aten::scatter.reduce_out"}},
        {lower_scatter_value_reduce,
         {"aten::scatter.value_reduce", "aten::scatter_.value_reduce", "aten::scatter.value_reduce_out"}},
        {lower_scatter_add, every_form("scatter_add")},
        {lower_scatter_reduce_two,
         {"aten::scatter_reduce.two", "aten::scatter_reduce_.two", "aten::scatter_reduce.two_out"}},
        // index_add.cpp
        {lower_index_add, every_form("index_add")},
        {lower_index_copy, every_form("index_copy")},
        {lower_embedding_dense_backward, with_out("embedding_dense_backward")},
        // masked_fill.cpp
        {lower_masked_fill, {"aten::masked_fill.Scalar", "aten::masked_fill_.Scalar", "aten::masked_fill.Scalar_out",
                             "aten::masked_fill.Tensor", "aten::masked_fill_.Tensor", "aten::masked_fill.Tensor_out"}},
        // special_binary.cpp
        {lower_fmax, with_out("fmax")},
        {lower_fmin, with_out("fmin")},
        {lower_copysign, {"aten::copysign.Tensor", "aten::copysign.Scalar", "aten::copysign.out",
                          "aten::copysign.Scalar_out", "aten::copysign_.Tensor", "aten::copysign_.Scalar"}},
        {lower_heaviside, every_form("heaviside")},
        {lower_xlogy, {"aten::xlogy.Tensor", "aten::xlogy.Scalar_Other", "aten::xlogy.Scalar_Self", "aten::xlogy.OutTensor",
                       "aten::xlogy.OutScalar_Self", "aten::xlogy.OutScalar_Other", "aten::xlogy_.Tensor",
                       "aten::xlogy_.Scalar_Other"}},
        {lower_logaddexp, with_out("logaddexp")},
        // math_more.cpp
        {lower_erfc, every_form("erfc")},
        {lower_exp2, every_form("exp2")},
        {lower_frac, every_form("frac")},
        {lower_signbit, with_out("signbit")},
        {lower_nan_to_num, every_form("nan_to_num")},
        // activation_more.cpp
        {lower_hardsigmoid, every_form("hardsigmoid")},
        {lower_hardswish, every_form("hardswish")},
        {lower_softplus, with_out("softplus")},
        {lower_softplus_backward, with_out("softplus_backward", "grad_input")},
        {lower_mish, every_form("mish")},
        {lower_log_sigmoid_forward, with_out("log_sigmoid_forward", "output")},
        {lower_log_sigmoid_backward, with_out("log_sigmoid_backward", "grad_input")},
        {lower_threshold, every_form("threshold")},
        // vector_norm.cpp
        {lower_linalg_vector_norm, with_out("linalg_vector_norm")},
        {lower_norm, {"aten::norm.Scalar", "aten::norm.Scalar_out", "aten::norm.ScalarOpt_dim", "aten::norm.out",
                      "aten::norm.ScalarOpt_dim_dtype", "aten::norm.dtype_out"}},
        // weight_norm.cpp
        {lower_weight_norm_interface, with_out("_weight_norm_interface", "out")},
        {lower_weight_norm_interface_backward, with_out("_weight_norm_interface_backward", "out")},
        // triangular.cpp
        {lower_tril, every_form("tril")},
        {lower_triu, every_form("triu")},
        // comparison.cpp
        {lower_eq, comparison_forms("eq")},
        {lower_ne, comparison_forms("ne")},
        {lower_lt, comparison_forms("lt")},
        {lower_le, comparison_forms("le")},
        {lower_gt, comparison_forms("gt")},
        {lower_ge, comparison_forms("ge")},
        {lower_where, {"aten::where.self", "aten::where.self_out"}},
        // matmul.cpp, distance.cpp
        {lower_dot, joined(with_out("dot"), with_out("vdot"))},
        {lower_mm, with_out("mm")},
        {lower_cdist_forward, with_out("_cdist_forward")},
        {lower_pdist_forward, with_out("_pdist_forward")},
        {lower_bmm, with_out("bmm")},
        {lower_addmm, with_out("addmm")},
        {lower_baddbmm, every_form("baddbmm")},
        {lower_addmv, every_form("addmv")},
        // activation.cpp
        {lower_threshold_backward, with_out("threshold_backward", "grad_input")},
        {lower_silu, every_form("silu")},
        {lower_silu_backward, with_out("silu_backward", "grad_input")},
        {lower_leaky_relu, every_form("leaky_relu")},
        {lower_elu, every_form("elu")},
        {lower_gelu, every_form("gelu")},
        // concatenation.cpp
        {lower_cat, with_out("cat")},
        // softmax.cpp
        {lower_log_softmax, with_out("_log_softmax")},
        {lower_log_softmax_backward, with_out("_log_softmax_backward_data")},
        {lower_softmax, with_out("_softmax")},
        {lower_softmax_backward, with_out("_softmax_backward_data")},
        // loss.cpp
        {lower_mse_loss, with_out("mse_loss")},
        {lower_mse_loss_backward, with_out("mse_loss_backward", "grad_input")},
        // attention.cpp
        {lower_flash_attention, {"aten::_scaled_dot_product_flash_attention_for_cpu"}},
        {lower_flash_attention_backward, {"aten::_scaled_dot_product_flash_attention_for_cpu_backward"}},
        // nll_loss.cpp
        {lower_nll_loss_forward, joined(with_out("nll_loss_forward", "output"), with_out("nll_loss2d_forward", "output"))},
        {lower_nll_loss_backward,
         joined(with_out("nll_loss_backward", "grad_input"), with_out("nll_loss2d_backward", "grad_input"))},
        // reduction.cpp
        {lower_sum_dims, {"aten::sum.dim_IntList", "aten::sum.IntList_out"}},
        {lower_sum, {"aten::sum"}},
        {lower_mean_dims, {"aten::mean.dim", "aten::mean.out"}},
        // copy.cpp
        {lower_copy_, {"aten::copy_"}},
        {lower_clone, {"aten::clone", "aten::_to_copy"}},
        {lower_fill_, {"aten::fill_.Scalar", "aten::fill.Scalar", "aten::fill.Scalar_out"}},
        {lower_fill_tensor, {"aten::fill_.Tensor", "aten::fill.Tensor", "aten::fill.Tensor_out"}},
        {lower_roll, with_out("roll")},
        {lower_zero_, {"aten::zero_"}},
        // reduction.cpp, arg_reduction.cpp, variance.cpp, scan.cpp, sort.cpp
        {lower_amax, with_out("amax")},
        {lower_amin, with_out("amin")},
        {lower_max, with_out("max", "unary_out")},
        {lower_min, with_out("min", "unary_out")},
        {lower_any, {"aten::any", "aten::any.dim", "aten::any.dims", "aten::any.out",
                     "aten::any.dims_out", "aten::any.all_out"}},
        {lower_all, {"aten::all", "aten::all.dim", "aten::all.dims", "aten::all.out",
                     "aten::all.dims_out", "aten::all.all_out"}},
        {lower_prod, {"aten::prod", "aten::prod.dim_int", "aten::prod.out", "aten::prod.int_out"}},
        {lower_argmax, with_out("argmax")},
        {lower_argmin, with_out("argmin")},
        {lower_max_dim, {"aten::max.dim", "aten::max.dim_max"}},
        {lower_min_dim, {"aten::min.dim", "aten::min.dim_min"}},
        {lower_var, {"aten::var.correction", "aten::var.correction_out"}},
        {lower_std, {"aten::std.correction", "aten::std.correction_out"}},
        {lower_var_mean, {"aten::var_mean.correction", "aten::var_mean.correction_out"}},
        {lower_std_mean, {"aten::std_mean.correction", "aten::std_mean.correction_out"}},
        {lower_cumsum, every_form("cumsum")},
        {lower_sort_stable, {"aten::sort.stable", "aten::sort.values_stable"}},
        {lower_histc, with_out("histc")},
        // normalization.cpp
        {lower_native_layer_norm, with_out("native_layer_norm")},
        {lower_native_group_norm, with_out("native_group_norm")},
        {lower_native_batch_norm, with_out("native_batch_norm")},
        {lower_native_batch_norm_legit, with_out("_native_batch_norm_legit")},
        {lower_native_batch_norm_legit_no_stats,
         {"aten::_native_batch_norm_legit.no_stats", "aten::_native_batch_norm_legit.no_stats_out"}},
        {lower_native_batch_norm_legit_no_training, with_out("_native_batch_norm_legit_no_training")},
        // convolution.cpp
        {lower_convolution, with_out("convolution")},
        {lower_convolution_backward, with_out("convolution_backward")},
        // padding.cpp
        {lower_reflection_pad,
         {"aten::reflection_pad1d", "aten::reflection_pad1d.out", "aten::reflection_pad2d",
          "aten::reflection_pad2d.out", "aten::reflection_pad3d", "aten::reflection_pad3d.out"}},
        {lower_replication_pad,
         {"aten::replication_pad1d", "aten::replication_pad1d.out", "aten::replication_pad2d",
          "aten::replication_pad2d.out", "aten::replication_pad3d", "aten::replication_pad3d.out"}},
        // pooling.cpp
        {lower_avg_pool, {"aten::avg_pool2d", "aten::avg_pool2d.out", "aten::avg_pool3d", "aten::avg_pool3d.out"}},
        {lower_avg_pool_backward, {"aten::avg_pool2d_backward", "aten::avg_pool2d_backward.grad_input",
                                   "aten::avg_pool3d_backward", "aten::avg_pool3d_backward.grad_input"}},
        {lower_adaptive_avg_pool,
         {"aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d.out", "aten::_adaptive_avg_pool3d",
          "aten::_adaptive_avg_pool3d.out"}},
        {lower_adaptive_avg_pool_backward,
         {"aten::_adaptive_avg_pool2d_backward", "aten::_adaptive_avg_pool2d_backward.out",
          "aten::_adaptive_avg_pool3d_backward", "aten::_adaptive_avg_pool3d_backward.out"}},
        // upsample.cpp
        {lower_upsample_nearest2d,
         {"aten::upsample_nearest2d", "aten::upsample_nearest2d.out", "aten::upsample_nearest2d.vec",
          "aten::upsample_nearest2d.vec_out"}},
        {lower_upsample_bilinear2d,
         {"aten::upsample_bilinear2d", "aten::upsample_bilinear2d.out", "aten::upsample_bilinear2d.vec",
          "aten::upsample_bilinear2d.vec_out"}},
        // normalization_backward.cpp
        {lower_native_layer_norm_backward, with_out("native_layer_norm_backward")},
        {lower_native_group_norm_backward, with_out("native_group_norm_backward")},
        {lower_native_batch_norm_backward, with_out("native_batch_norm_backward")},
        // activation_backward.cpp
        {lower_gelu_backward, with_out("gelu_backward", "grad_input")},
        {lower_elu_backward, with_out("elu_backward", "grad_input")},
        {lower_leaky_relu_backward, with_out("leaky_relu_backward", "grad_input")},
        {lower_hardtanh_backward, with_out("hardtanh_backward", "grad_input")},
        {lower_sigmoid_backward, with_out("sigmoid_backward", "grad_input")},
        {lower_tanh_backward, with_out("tanh_backward", "grad_input")},
        // max_pooling.cpp
        {lower_max_pool_with_indices,
         joined(with_out("max_pool2d_with_indices"), with_out("max_pool3d_with_indices"))},
        {lower_max_pool_with_indices_backward,
         joined(with_out("max_pool2d_with_indices_backward", "grad_input"),
                with_out("max_pool3d_with_indices_backward", "grad_input"))},
    };
    std::unordered_map<std::string, OpLowering> by_schema;
    for (const Entry& entry : entries) {
      for (const std::string& schema : entry.schemas) {
        if (!by_schema.emplace(schema, entry.lowering).second) {
          throw std::logic_error("two StableHLO lowerings registered for " + schema);
        }
      }
    }
    return by_schema;
  }();
  return lowerings;
}

}  // namespace

OpLowering find_lowering(const std::string& op) {
  const auto found = table().find(op);
  return found == table().end() ? nullptr : found->second;
}

std::vector<std::string> lowered_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, lowering] : table()) ops.push_back(name);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace torch_tpu::executors::pjrt::lowering
