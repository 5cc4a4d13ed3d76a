// Every kernel the tpu device registers with PyTorch's dispatcher, in one table (DESIGN §2).
// The generic kernel (generic_kernel.cpp) is the backend fallback: any op without a row here
// runs PyTorch's CPU kernel through it on chip memory. A row is an op whose tpu kernel differs:
// one that must reach device memory itself, a view that never touches the chip, or an op whose
// CPU kernel's contract differs on tpu. Adding an op: docs/adding_an_op.md. Device integration
// (autocast, hooks, guard) registers in privateuse1/.
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include "ops/convolution.h"
#include "ops/copy.h"
#include "ops/generic_kernel.h"
#include "ops/histogram.h"
#include "ops/memory.h"
#include "ops/prefer_cpu_kernels.h"
#include "ops/recurrent_cells.h"

namespace torch_tpu::ops {

// Our own ops: the RNN cells as one queued op each on the host runtime (recurrent_cells.h).
// Their CPU kernels run on the host's view of chip memory through the generic kernel; their
// Meta kernels are the same code on Meta tensors.
TORCH_LIBRARY(torch_tpu, m) {
  m.def(kLstmCellSchema);
  m.def(kLstmCellBackwardSchema);
  m.def(kGruCellSchema);
  m.def(kGruCellBackwardSchema);
}

TORCH_LIBRARY_IMPL(torch_tpu, CPU, m) {
  m.impl("lstm_cell", TORCH_FN(lstm_cell_on_host));
  m.impl("lstm_cell_backward", TORCH_FN(lstm_cell_backward_on_host));
  m.impl("gru_cell", TORCH_FN(gru_cell_on_host));
  m.impl("gru_cell_backward", TORCH_FN(gru_cell_backward_on_host));
}

TORCH_LIBRARY_IMPL(torch_tpu, Meta, m) {
  m.impl("lstm_cell", TORCH_FN(lstm_cell_on_host));
  m.impl("lstm_cell_backward", TORCH_FN(lstm_cell_backward_on_host));
  m.impl("gru_cell", TORCH_FN(gru_cell_on_host));
  m.impl("gru_cell_backward", TORCH_FN(gru_cell_backward_on_host));
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&generic_tpu_kernel>());
}

// Quantized tensors dispatch to QuantizedPrivateUse1, where no kernel exists; say so clearly.
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&reject_quantized>());
}

// The conjugate and negative views' fallbacks resolve a lazy bit by cloning, and a clone copies
// through _copy_from again, forever. Copies honour the bits themselves instead: the CPU views
// they run on carry them (TensorSnapshot, cpu_view_now), and CPU's copy_ applies them.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Creation, storage and metadata (memory.cpp).
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Storage", TORCH_FN(at::native::set_));
  m.impl("set_.source_Tensor", TORCH_FN(at::native::set_tensor_));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
  // Views: ATen's own kernels; they share the base's storage and never reach the chip.
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  // Copies and host reads (copy.cpp).
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  // Ops whose CPU kernel's contract differs on tpu.
  m.impl("convolution_overrideable",
         torch::CppFunction::makeFromBoxedFunction<&convolution_forward>());
  m.impl("convolution_backward_overrideable",
         torch::CppFunction::makeFromBoxedFunction<&convolution_backward>());
  m.impl("histc", torch::CppFunction::makeFromBoxedFunction<&histc>());
  // The fused RNN cells ATen's RNN code picks for tpu, as for CUDA (recurrent_cells.cpp).
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));
  // Last, so the rows above win: the generic kernel over composite kernels
  // (prefer_cpu_kernels.cpp).
  register_generic_kernel_over_composites(m);
}

}  // namespace torch_tpu::ops
