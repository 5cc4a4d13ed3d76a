// PyTorch's own C++ shape functions (the meta functions of structured kernels) for the ops the
// generic kernel meets most, and C++ shape rules for attention's CPU kernels. The Meta dispatch
// key runs the Python meta kernels torch._meta_registrations registers over these, and the
// first of those to run imports torch._dynamo, sympy and their dependencies: seconds added to a
// program's first step (benchmarks/first_step.py). These compute the same outputs as CPU's
// kernels, since CPU's structured kernels run these very functions.
#include "ops/structured_meta.h"

#include <tuple>
#include <utility>

#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/_log_softmax_meta_dispatch.h>
#include <ATen/ops/_log_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/_softmax_meta_dispatch.h>
#include <ATen/ops/_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/add_meta_dispatch.h>
#include <ATen/ops/addcdiv_meta_dispatch.h>
#include <ATen/ops/addcmul_meta_dispatch.h>
#include <ATen/ops/addmm_meta_dispatch.h>
#include <ATen/ops/amax_meta_dispatch.h>
#include <ATen/ops/baddbmm_meta_dispatch.h>
#include <ATen/ops/bmm_meta_dispatch.h>
#include <ATen/ops/cat_meta_dispatch.h>
#include <ATen/ops/clamp_meta_dispatch.h>
#include <ATen/ops/cos_meta_dispatch.h>
#include <ATen/ops/cumsum_meta_dispatch.h>
#include <ATen/ops/div_meta_dispatch.h>
#include <ATen/ops/eq_meta_dispatch.h>
#include <ATen/ops/erf_meta_dispatch.h>
#include <ATen/ops/exp_meta_dispatch.h>
#include <ATen/ops/ge_meta_dispatch.h>
#include <ATen/ops/gelu_meta_dispatch.h>
#include <ATen/ops/gelu_backward_meta_dispatch.h>
#include <ATen/ops/gt_meta_dispatch.h>
#include <ATen/ops/le_meta_dispatch.h>
#include <ATen/ops/lerp_meta_dispatch.h>
#include <ATen/ops/log_meta_dispatch.h>
#include <ATen/ops/lt_meta_dispatch.h>
#include <ATen/ops/maximum_meta_dispatch.h>
#include <ATen/ops/mean_meta_dispatch.h>
#include <ATen/ops/minimum_meta_dispatch.h>
#include <ATen/ops/mm_meta_dispatch.h>
#include <ATen/ops/mul_meta_dispatch.h>
#include <ATen/ops/ne_meta_dispatch.h>
#include <ATen/ops/neg_meta_dispatch.h>
#include <ATen/ops/pow_meta_dispatch.h>
#include <ATen/ops/rsqrt_meta_dispatch.h>
#include <ATen/ops/sigmoid_meta_dispatch.h>
#include <ATen/ops/sigmoid_backward_meta_dispatch.h>
#include <ATen/ops/silu_meta_dispatch.h>
#include <ATen/ops/silu_backward_meta_dispatch.h>
#include <ATen/ops/sin_meta_dispatch.h>
#include <ATen/ops/sqrt_meta_dispatch.h>
#include <ATen/ops/sub_meta_dispatch.h>
#include <ATen/ops/sum_meta_dispatch.h>
#include <ATen/ops/tanh_meta_dispatch.h>
#include <ATen/ops/tanh_backward_meta_dispatch.h>
#include <ATen/ops/threshold_backward_meta_dispatch.h>
#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_log_softmax_backward_data_ops.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/_softmax_backward_data_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addcdiv_ops.h>
#include <ATen/ops/addcmul_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/amax_ops.h>
#include <ATen/ops/baddbmm_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/cat_ops.h>
#include <ATen/ops/clamp_ops.h>
#include <ATen/ops/cos_ops.h>
#include <ATen/ops/cumsum_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/eq_ops.h>
#include <ATen/ops/erf_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/ge_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/gt_ops.h>
#include <ATen/ops/le_ops.h>
#include <ATen/ops/lerp_ops.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/lt_ops.h>
#include <ATen/ops/maximum_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/minimum_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/ne_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/silu_backward_ops.h>
#include <ATen/ops/sin_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_ops.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward_ops.h>

namespace torch_tpu::ops {
namespace {

// Layouts as empty_like(t) (preserve format) and torch.empty_permuted give them, on Meta.
at::Tensor meta_like(const at::Tensor& t, c10::ScalarType dtype) {
  const std::vector<int64_t> strides =
      t.is_non_overlapping_and_dense() ? t.strides().vec() : at::infer_dense_strides(t.sizes(), t.strides());
  return at::detail::empty_strided_meta(t.sizes(), strides, dtype, std::nullopt, std::nullopt, std::nullopt);
}

at::Tensor meta_permuted(c10::IntArrayRef sizes, c10::IntArrayRef order, c10::ScalarType dtype) {
  // The layout of a contiguous tensor of sizes[order] permuted back to `sizes`.
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[static_cast<size_t>(order[i])] = stride;
    stride *= sizes[static_cast<size_t>(order[i])];
  }
  return at::detail::empty_strided_meta(sizes, strides, dtype, std::nullopt, std::nullopt, std::nullopt);
}

c10::ScalarType computation_dtype(c10::ScalarType dtype) {
  return dtype == c10::kHalf || dtype == c10::kBFloat16 ? c10::kFloat : dtype;
}

// As torch._meta_registrations shapes them (the CPU kernels' layouts): the output like the
// query, logsumexp [batch, heads, q_len] laid out as [batch, q_len, heads].
std::tuple<at::Tensor, at::Tensor> flash_attention_for_cpu(
    const at::Tensor& query, const at::Tensor&, const at::Tensor&, double, bool,
    const std::optional<at::Tensor>&, std::optional<double>) {
  const int64_t batch = query.size(0);
  const int64_t heads = query.size(1);
  const int64_t length = query.size(2);
  at::Tensor logsumexp = at::detail::empty_strided_meta(
      {batch, heads, length}, {length * heads, 1, heads}, computation_dtype(query.scalar_type()),
      std::nullopt, std::nullopt, std::nullopt);
  return {meta_like(query, query.scalar_type()), std::move(logsumexp)};
}

// Gradients laid out [batch, seq, heads, dim], as the CPU kernel writes them.
std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_for_cpu_backward(
    const at::Tensor&, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor&, const at::Tensor&, double, bool, const std::optional<at::Tensor>&,
    std::optional<double>) {
  const std::vector<int64_t> order{0, 2, 1, 3};
  return {meta_permuted(query.sizes(), order, query.scalar_type()),
          meta_permuted(key.sizes(), order, key.scalar_type()),
          meta_permuted(value.sizes(), order, value.scalar_type())};
}

struct Entry {
  const char* name;
  const char* overload;
  c10::KernelFunction (*make)();
};

// A kernel for op Op from function Fn, whose signature is the op's.
template <class Op, typename Op::schema* Fn>
c10::KernelFunction kernel() {
  return c10::KernelFunction::makeFromUnboxedFunction(c10::CompileTimeFunctionPointer<typename Op::schema, Fn>());
}

#define TORCH_TPU_META(op, function)                                              \
  Entry {                                                                           \
    at::_ops::op::name, at::_ops::op::overload_name,                                \
        &kernel<at::_ops::op, static_cast<at::_ops::op::schema*>(&function)>         \
  }

const Entry kEntries[] = {
    TORCH_TPU_META(add_Tensor, at::meta::add),
    TORCH_TPU_META(add__Tensor, at::meta::add_),
    TORCH_TPU_META(sub_Tensor, at::meta::sub),
    TORCH_TPU_META(sub__Tensor, at::meta::sub_),
    TORCH_TPU_META(mul_Tensor, at::meta::mul),
    TORCH_TPU_META(mul__Tensor, at::meta::mul_),
    TORCH_TPU_META(div_Tensor, at::meta::div),
    TORCH_TPU_META(div__Tensor, at::meta::div_),
    TORCH_TPU_META(neg, at::meta::neg),
    TORCH_TPU_META(exp, at::meta::exp),
    TORCH_TPU_META(log, at::meta::log),
    TORCH_TPU_META(rsqrt, at::meta::rsqrt),
    TORCH_TPU_META(sqrt, at::meta::sqrt),
    TORCH_TPU_META(sigmoid, at::meta::sigmoid),
    TORCH_TPU_META(tanh, at::meta::tanh),
    TORCH_TPU_META(cos, at::meta::cos),
    TORCH_TPU_META(sin, at::meta::sin),
    TORCH_TPU_META(erf, at::meta::erf),
    TORCH_TPU_META(silu, at::meta::silu),
    TORCH_TPU_META(silu_backward, at::meta::silu_backward),
    TORCH_TPU_META(gelu, at::meta::gelu),
    TORCH_TPU_META(gelu_backward, at::meta::gelu_backward),
    TORCH_TPU_META(threshold_backward, at::meta::threshold_backward),
    TORCH_TPU_META(sigmoid_backward, at::meta::sigmoid_backward),
    TORCH_TPU_META(tanh_backward, at::meta::tanh_backward),
    TORCH_TPU_META(pow_Tensor_Scalar, at::meta::pow),
    TORCH_TPU_META(maximum, at::meta::maximum),
    TORCH_TPU_META(minimum, at::meta::minimum),
    TORCH_TPU_META(clamp, at::meta::clamp),
    TORCH_TPU_META(eq_Scalar, at::meta::eq),
    TORCH_TPU_META(ne_Scalar, at::meta::ne),
    TORCH_TPU_META(lt_Scalar, at::meta::lt),
    TORCH_TPU_META(gt_Scalar, at::meta::gt),
    TORCH_TPU_META(le_Scalar, at::meta::le),
    TORCH_TPU_META(ge_Scalar, at::meta::ge),
    TORCH_TPU_META(eq_Tensor, at::meta::eq),
    TORCH_TPU_META(ne_Tensor, at::meta::ne),
    TORCH_TPU_META(lt_Tensor, at::meta::lt),
    TORCH_TPU_META(gt_Tensor, at::meta::gt),
    TORCH_TPU_META(le_Tensor, at::meta::le),
    TORCH_TPU_META(ge_Tensor, at::meta::ge),
    TORCH_TPU_META(addcmul, at::meta::addcmul),
    TORCH_TPU_META(addcdiv, at::meta::addcdiv),
    TORCH_TPU_META(lerp_Scalar, at::meta::lerp),
    TORCH_TPU_META(mean_dim, at::meta::mean),
    TORCH_TPU_META(sum_dim_IntList, at::meta::sum),
    TORCH_TPU_META(amax, at::meta::amax),
    TORCH_TPU_META(cumsum, at::meta::cumsum),
    TORCH_TPU_META(_softmax, at::meta::_softmax),
    TORCH_TPU_META(_log_softmax, at::meta::_log_softmax),
    TORCH_TPU_META(_softmax_backward_data, at::meta::_softmax_backward_data),
    TORCH_TPU_META(_log_softmax_backward_data, at::meta::_log_softmax_backward_data),
    TORCH_TPU_META(mm, at::meta::mm),
    TORCH_TPU_META(bmm, at::meta::bmm),
    TORCH_TPU_META(addmm, at::meta::addmm),
    TORCH_TPU_META(baddbmm, at::meta::baddbmm),
    TORCH_TPU_META(cat, at::meta::cat),
    TORCH_TPU_META(_scaled_dot_product_flash_attention_for_cpu, flash_attention_for_cpu),
    TORCH_TPU_META(_scaled_dot_product_flash_attention_for_cpu_backward,
                   flash_attention_for_cpu_backward),
};

#undef TORCH_TPU_META

}  // namespace

std::optional<c10::KernelFunction> structured_meta_kernel(const c10::OperatorName& name) {
  for (const Entry& entry : kEntries) {
    if (name.name == entry.name && name.overload_name == entry.overload) return entry.make();
  }
  return std::nullopt;
}

}  // namespace torch_tpu::ops
