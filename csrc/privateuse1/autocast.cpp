// Autocast on tpu (torch.autocast("tpu"), bf16 by default): the same per-op policies CUDA uses,
// from PyTorch's shared op lists, registered for AutocastPrivateUse1.
#include <ATen/Functions.h>  // the policy lists name many ops; this file needs them all
#include <ATen/autocast_mode.h>
#include <torch/library.h>

// Inside at::autocast because PyTorch's policy lists name types and ops unqualified.
namespace at::autocast {
namespace {

// Ops without a policy pass straight through.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TPU_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TPU_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TPU_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TPU_DIFFERENT_REDISPATCH(REDISPATCH_FUNC, REGISTER_NAME, REGISTER_SIGNATURE, \
                                 REDISPATCH_SIGNATURE, POLICY)                       \
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE(                               \
      REDISPATCH_FUNC, REGISTER_NAME, REGISTER_SIGNATURE, REDISPATCH_SIGNATURE, POLICY)
#define TPU_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

  AT_FORALL_LOWER_PRECISION_FP(TPU_LOWER_PRECISION)
  AT_FORALL_FP32(TPU_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TPU_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(TPU_DIFFERENT_REDISPATCH)
  AT_FORALL_PROMOTE(TPU_PROMOTE)

#undef TPU_LOWER_PRECISION
#undef TPU_FP32
#undef TPU_FP32_SET_OPT_DTYPE
#undef TPU_DIFFERENT_REDISPATCH
#undef TPU_PROMOTE
}

}  // namespace
}  // namespace at::autocast
