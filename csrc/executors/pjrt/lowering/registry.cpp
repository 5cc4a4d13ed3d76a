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
        // comparison.cpp
        {lower_eq, comparison_forms("eq")},
        {lower_ne, comparison_forms("ne")},
        {lower_lt, comparison_forms("lt")},
        {lower_le, comparison_forms("le")},
        {lower_gt, comparison_forms("gt")},
        {lower_ge, comparison_forms("ge")},
        {lower_where, with_out("where.self", "self_out")},
        // matmul.cpp
        {lower_mm, with_out("mm")},
        {lower_bmm, with_out("bmm")},
        {lower_addmm, with_out("addmm")},
        // activation.cpp
        {lower_threshold_backward, with_out("threshold_backward", "grad_input")},
        {lower_pow_scalar,
         {"aten::pow.Tensor_Scalar", "aten::pow.Tensor_Scalar_out", "aten::pow_.Scalar"}},
        {lower_silu, every_form("silu")},
        {lower_silu_backward, with_out("silu_backward", "grad_input")},
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
        // reduction.cpp
        {lower_sum_dims, {"aten::sum.dim_IntList", "aten::sum.IntList_out"}},
        {lower_sum, {"aten::sum"}},
        {lower_mean_dims, {"aten::mean.dim", "aten::mean.out"}},
        // copy.cpp
        {lower_copy_, {"aten::copy_"}},
        {lower_clone, {"aten::clone", "aten::_to_copy"}},
        {lower_fill_, {"aten::fill_.Scalar"}},
        {lower_zero_, {"aten::zero_"}},
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
        {lower_adaptive_avg_pool,
         {"aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d.out", "aten::_adaptive_avg_pool3d",
          "aten::_adaptive_avg_pool3d.out"}},
        // upsample.cpp
        {lower_upsample_nearest2d,
         {"aten::upsample_nearest2d", "aten::upsample_nearest2d.out", "aten::upsample_nearest2d.vec",
          "aten::upsample_nearest2d.vec_out"}},
        {lower_upsample_bilinear2d,
         {"aten::upsample_bilinear2d", "aten::upsample_bilinear2d.out", "aten::upsample_bilinear2d.vec",
          "aten::upsample_bilinear2d.vec_out"}},
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
