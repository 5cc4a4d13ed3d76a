// scaled_dot_product_attention picks its backend through _fused_sdp_choice_stub, which has no
// PrivateUse1 entry by default, so tpu would always take the unfused math path (bmm, softmax,
// masks: slower, and it keeps the attention matrix alive for backward). The host executor runs
// CPU kernels, so we choose CPU's fused flash kernel whenever its documented constraints hold
// (PyTorch's own chooser is not exported): 4-D dense inputs of one float dtype, unit last-dim
// strides, equal head dims and head counts, no dropout, non-empty sequences, a mask that needs
// no gradient.
#include <ATen/Context.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>

namespace torch_tpu::ops {
namespace {

bool flash_supports(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                    const std::optional<at::Tensor>& attn_mask, double dropout_p,
                    bool enable_gqa) {
  if (!at::globalContext().userEnabledFlashSDP() || dropout_p != 0.0 || enable_gqa) return false;
  const auto dtype = query.scalar_type();
  const bool float_dtype = dtype == at::kFloat || dtype == at::kDouble ||
                           dtype == at::kBFloat16 || dtype == at::kHalf;
  if (!float_dtype || key.scalar_type() != dtype || value.scalar_type() != dtype) return false;
  // Symbolic sizes (torch.compile with dynamic shapes) are compared as such: reading them as
  // integers would specialize the traced graph to this call's sequence length.
  for (const at::Tensor* t : {&query, &key, &value}) {
    if (t->dim() != 4 || t->is_nested() || t->sym_stride(-1) != 1 || t->sym_size(-2) == 0) {
      return false;
    }
  }
  for (const int64_t dim : {0, 1, -1}) {
    if (query.sym_size(dim) != key.sym_size(dim) || key.sym_size(dim) != value.sym_size(dim)) {
      return false;
    }
  }
  if (attn_mask.has_value() && attn_mask->defined()) {
    const auto mask_dtype = attn_mask->scalar_type();
    if (attn_mask->dim() > 4 || (mask_dtype != at::kBool && mask_dtype != dtype)) return false;
    // The flash kernel has no gradient for the mask (found by the OpInfo sweep).
    if (attn_mask->requires_grad()) return false;
  }
  return true;
}

int64_t choose_sdp_backend(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p,
                           bool /*is_causal*/, std::optional<double> /*scale*/, bool enable_gqa) {
  const bool flash = flash_supports(query, key, value, attn_mask, dropout_p, enable_gqa);
  return static_cast<int64_t>(flash ? sdp::SDPBackend::flash_attention : sdp::SDPBackend::math);
}

}  // namespace
}  // namespace torch_tpu::ops

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_tpu::ops::choose_sdp_backend)
}  // namespace at::native
