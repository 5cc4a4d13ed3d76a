// Finds the out= overload of a functional ATen op (add.Tensor -> add.out), so queued kernels can
// write straight into a preallocated chip buffer instead of allocating and copying.
#pragma once

#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>

namespace torch_tpu::ops {

// The out= overload of `functional` if one exists: same name, the same leading arguments with the
// same types, then exactly one kwarg-only mutable Tensor argument per returned Tensor.
// Cached per op; thread-safe.
std::optional<c10::OperatorHandle> out_variant_of(const c10::OperatorHandle& functional);

// The inverse: the functional overload whose out= overload `out` is (mul.out -> mul.Tensor).
// Its arguments are `out`'s minus the trailing out= ones. Cached per op; thread-safe.
std::optional<c10::OperatorHandle> functional_variant_of(const c10::OperatorHandle& out);

// The functional op of an in-place one (relu_ -> relu, add_.Tensor -> add.Tensor): the name
// without its trailing underscore, the same overload, the same arguments. Not cached (a
// dispatcher lookup); nothing for dunder names (__iand__).
std::optional<c10::OperatorHandle> functional_of_inplace(const c10::OperatorHandle& inplace);

}  // namespace torch_tpu::ops
