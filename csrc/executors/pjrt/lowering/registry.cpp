// The one table from IR op schema names to StableHLO lowerings. An out= or in-place variant
// maps to its functional form's lowering: the program lowering writes the result where the
// node's return lives.
#include <algorithm>
#include <unordered_map>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

const std::unordered_map<std::string, OpLowering>& table() {
  static const std::unordered_map<std::string, OpLowering> lowerings = {
      {"aten::add.Tensor", lower_add},      {"aten::add.Scalar", lower_add},
      {"aten::add.out", lower_add},         {"aten::add_.Tensor", lower_add},
      {"aten::add_.Scalar", lower_add},
      {"aten::sub.Tensor", lower_sub},      {"aten::sub.Scalar", lower_sub},
      {"aten::sub.out", lower_sub},         {"aten::sub_.Tensor", lower_sub},
      {"aten::sub_.Scalar", lower_sub},
      {"aten::mul.Tensor", lower_mul},      {"aten::mul.Scalar", lower_mul},
      {"aten::mul.out", lower_mul},         {"aten::mul_.Tensor", lower_mul},
      {"aten::mul_.Scalar", lower_mul},
      {"aten::div.Tensor", lower_div},      {"aten::div.Scalar", lower_div},
      {"aten::div.out", lower_div},         {"aten::div_.Tensor", lower_div},
      {"aten::div_.Scalar", lower_div},
      {"aten::neg", lower_neg},             {"aten::neg.out", lower_neg},
      {"aten::neg_", lower_neg},
      {"aten::exp", lower_exp},             {"aten::exp.out", lower_exp},
      {"aten::exp_", lower_exp},
      {"aten::relu", lower_relu},           {"aten::relu_", lower_relu},
      {"aten::sqrt", lower_sqrt}, {"aten::sqrt.out", lower_sqrt}, {"aten::sqrt_", lower_sqrt},
      {"aten::rsqrt", lower_rsqrt}, {"aten::rsqrt.out", lower_rsqrt}, {"aten::rsqrt_", lower_rsqrt},
      {"aten::log", lower_log}, {"aten::log.out", lower_log}, {"aten::log_", lower_log},
      {"aten::tanh", lower_tanh}, {"aten::tanh.out", lower_tanh}, {"aten::tanh_", lower_tanh},
      {"aten::sigmoid", lower_sigmoid}, {"aten::sigmoid.out", lower_sigmoid}, {"aten::sigmoid_", lower_sigmoid},
      {"aten::abs", lower_abs}, {"aten::abs.out", lower_abs}, {"aten::abs_", lower_abs},
      {"aten::maximum", lower_maximum}, {"aten::maximum.out", lower_maximum},
      {"aten::minimum", lower_minimum}, {"aten::minimum.out", lower_minimum},
      {"aten::eq.Tensor", lower_eq}, {"aten::eq.Scalar", lower_eq},
      {"aten::eq.Tensor_out", lower_eq}, {"aten::eq.Scalar_out", lower_eq},
      {"aten::ne.Tensor", lower_ne}, {"aten::ne.Scalar", lower_ne},
      {"aten::ne.Tensor_out", lower_ne}, {"aten::ne.Scalar_out", lower_ne},
      {"aten::lt.Tensor", lower_lt}, {"aten::lt.Scalar", lower_lt},
      {"aten::lt.Tensor_out", lower_lt}, {"aten::lt.Scalar_out", lower_lt},
      {"aten::le.Tensor", lower_le}, {"aten::le.Scalar", lower_le},
      {"aten::le.Tensor_out", lower_le}, {"aten::le.Scalar_out", lower_le},
      {"aten::gt.Tensor", lower_gt}, {"aten::gt.Scalar", lower_gt},
      {"aten::gt.Tensor_out", lower_gt}, {"aten::gt.Scalar_out", lower_gt},
      {"aten::ge.Tensor", lower_ge}, {"aten::ge.Scalar", lower_ge},
      {"aten::ge.Tensor_out", lower_ge}, {"aten::ge.Scalar_out", lower_ge},
      {"aten::where.self", lower_where}, {"aten::where.self_out", lower_where},
      {"aten::mean.dim", lower_mean_dims}, {"aten::mean.out", lower_mean_dims},
      {"aten::mm", lower_mm},               {"aten::mm.out", lower_mm},
      {"aten::bmm", lower_bmm},             {"aten::bmm.out", lower_bmm},
      {"aten::addmm", lower_addmm},         {"aten::addmm.out", lower_addmm},
      {"aten::threshold_backward", lower_threshold_backward},
      {"aten::threshold_backward.grad_input", lower_threshold_backward},
      {"aten::addcmul", lower_addcmul}, {"aten::addcmul_", lower_addcmul},
      {"aten::addcmul.out", lower_addcmul},
      {"aten::addcdiv", lower_addcdiv}, {"aten::addcdiv_", lower_addcdiv},
      {"aten::addcdiv.out", lower_addcdiv},
      {"aten::lerp.Scalar", lower_lerp_scalar}, {"aten::lerp_.Scalar", lower_lerp_scalar},
      {"aten::lerp.Scalar_out", lower_lerp_scalar},
      {"aten::pow.Tensor_Scalar", lower_pow_scalar},
      {"aten::pow.Tensor_Scalar_out", lower_pow_scalar},
      {"aten::pow_.Scalar", lower_pow_scalar},
      {"aten::silu", lower_silu}, {"aten::silu_", lower_silu}, {"aten::silu.out", lower_silu},
      {"aten::silu_backward", lower_silu_backward},
      {"aten::silu_backward.grad_input", lower_silu_backward},
      {"aten::cat", lower_cat}, {"aten::cat.out", lower_cat},
      {"aten::_log_softmax", lower_log_softmax}, {"aten::_log_softmax.out", lower_log_softmax},
      {"aten::_log_softmax_backward_data", lower_log_softmax_backward},
      {"aten::_log_softmax_backward_data.out", lower_log_softmax_backward},
      {"aten::_softmax", lower_softmax}, {"aten::_softmax.out", lower_softmax},
      {"aten::_softmax_backward_data", lower_softmax_backward},
      {"aten::_softmax_backward_data.out", lower_softmax_backward},
      {"aten::mse_loss", lower_mse_loss},   {"aten::mse_loss.out", lower_mse_loss},
      {"aten::mse_loss_backward", lower_mse_loss_backward},
      {"aten::mse_loss_backward.grad_input", lower_mse_loss_backward},
      {"aten::sum.dim_IntList", lower_sum_dims}, {"aten::sum.IntList_out", lower_sum_dims},
      {"aten::sum", lower_sum},
      {"aten::copy_", lower_copy_},         {"aten::clone", lower_clone},
      {"aten::_to_copy", lower_clone},      {"aten::fill_.Scalar", lower_fill_},
      {"aten::zero_", lower_zero_},
  };
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
