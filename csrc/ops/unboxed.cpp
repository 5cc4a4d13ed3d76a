// Unboxed entry points into the generic kernel for the hottest functional ops (add, mul, mm,
// ...). Through a boxed kernel the dispatcher copies each argument into an IValue, and a copy
// of a Python-owned tensor makes PyTorch take the GIL to keep its Python object alive, and
// again to let it go (PyObject preservation): ~9% of `a + b`'s host time. Here the tensors are
// boxed as borrowed IValues instead (no reference count touched), read by the generic kernel
// where they lie, and released unread.
#include <array>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/silu_backward_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <torch/library.h>

#include "ops/generic_kernel.h"

namespace torch_tpu::ops {
namespace {

// Arguments boxed for one call: tensors borrowed (the caller keeps them alive for the call),
// everything else owned. Borrowed ones are released without a decrement, also on an exception.
struct BorrowedArgs {
  torch::jit::Stack stack;
  uint64_t borrowed = 0;  // bit i: stack[i] is a borrowed tensor (ops here have < 64 arguments)

  template <class Arg>
  void box(Arg&& arg) {
    if constexpr (std::is_same_v<std::decay_t<Arg>, at::Tensor>) {
      borrowed |= uint64_t{1} << stack.size();
      stack.emplace_back(c10::MaybeOwnedTraits<at::Tensor>::createBorrow(arg));
    } else {
      torch::jit::push_one(stack, std::forward<Arg>(arg));
    }
  }
  ~BorrowedArgs() {
    for (size_t i = 0; i < stack.size(); ++i) {
      if (borrowed >> i & 1) c10::MaybeOwnedTraits<c10::IValue>::destroyBorrow(stack[i]);
    }
  }
};

template <class Op, class Signature = typename Op::schema>
struct UnboxedGenericKernel;

// Ops returning one tensor (the only kind listed below).
template <class Op, class... Args>
struct UnboxedGenericKernel<Op, at::Tensor(Args...)> {
  static at::Tensor call(c10::DispatchKeySet, Args... args) {
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    static_assert(sizeof...(Args) < 64);
    BorrowedArgs boxed;
    boxed.stack.reserve(sizeof...(Args));
    (boxed.box(std::forward<Args>(args)), ...);
    torch::jit::Stack results = run_generic_kernel(op, boxed.stack);
    return std::move(results.front()).toTensor();
  }
};

template <class Op>
std::pair<c10::OperatorName, torch::CppFunction (*)()> entry() {
  return {c10::OperatorName(Op::name, Op::overload_name), [] {
            return torch::CppFunction::makeFromUnboxedFunction(
                TORCH_FN(UnboxedGenericKernel<Op>::call));
          }};
}

}  // namespace

std::optional<torch::CppFunction> unboxed_generic_kernel(const c10::OperatorName& name) {
  // The functional ops a training step issues most (forward, backward and the optimizer's
  // foreach fallbacks); all structured, so they would take the generic kernel anyway.
  static const std::array kEntries = {
      entry<at::_ops::add_Tensor>(),        entry<at::_ops::sub_Tensor>(),
      entry<at::_ops::mul_Tensor>(),        entry<at::_ops::div_Tensor>(),
      entry<at::_ops::mm>(),                entry<at::_ops::bmm>(),
      entry<at::_ops::addmm>(),             entry<at::_ops::exp>(),
      entry<at::_ops::neg>(),               entry<at::_ops::rsqrt>(),
      entry<at::_ops::sqrt>(),              entry<at::_ops::sigmoid>(),
      entry<at::_ops::tanh>(),              entry<at::_ops::silu>(),
      entry<at::_ops::silu_backward>(),     entry<at::_ops::gelu>(),
      entry<at::_ops::gelu_backward>(),     entry<at::_ops::threshold_backward>(),
      entry<at::_ops::pow_Tensor_Scalar>(), entry<at::_ops::mean_dim>(),
      entry<at::_ops::sum_dim_IntList>(),   entry<at::_ops::_softmax>(),
      entry<at::_ops::_log_softmax>(),
  };
  for (const auto& [entry_name, make] : kEntries) {
    if (entry_name == name) return make();
  }
  return std::nullopt;
}

}  // namespace torch_tpu::ops
