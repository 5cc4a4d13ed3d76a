// What the generic kernel knows about an op, worked out once per op and cached (so no call
// inspects the schema): its printable name (interned, for errors), how it runs (queued with
// shapes from its Meta kernel, or as a synchronous CPU fallback), its out= overload, and which
// arguments need special handling.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

namespace torch_tpu::ops {

enum class OpStrategy {
  kQueued,       // output shapes from the Meta kernel; runs on the chip's queue
  kSyncFallback  // returns a non-tensor value read from chip data (equal, is_nonzero), or
                 // CPU and Meta kernels disagree on output shapes; calls whose output shapes
                 // need data are marked per call in the shape cache instead
};

struct OpPlan {
  std::string name;  // "aten::add.Tensor"; stable address for the op's lifetime
  OpStrategy strategy = OpStrategy::kQueued;
  bool mutates_args = false;                     // in-place or out= op
  std::optional<c10::OperatorHandle> out_variant;  // for functional ops
  std::vector<size_t> generator_args;  // indexes of `Generator?` arguments
  std::vector<size_t> dtype_args;      // indexes of `ScalarType` / `ScalarType?` arguments
  // Per argument: typed Scalar (or Scalar?/Scalar[]), recorded as a run-time operand; the
  // shape cache keys only their types, unless scalar_values_shape_outputs (arange(0, n): the
  // values decide the output shape). A Scalar whose value picks the algorithm (a norm's order)
  // is not one: it is recorded, and keyed, by value.
  std::vector<bool> scalar_args;
  bool scalar_values_shape_outputs = false;
  bool accepts_cpu_tensors = false;  // indexing ops take CPU index tensors, as on CUDA
  // Fused mode: a pointwise op (outputs elementwise in its broadcast inputs, no randomness),
  // which the fused loop engine may run in chunks (ops/op_description.h).
  bool pointwise = false;
  // Fused mode: the output autograd may keep as a recipe of a non-pointwise op (a
  // normalization's, an RNN cell's workspace; ops/saved_recipes.h).
  std::optional<size_t> recomputable_output;
  // Fused mode: for an in-place pointwise op (relu_), its functional form, for the recipe of
  // the value it writes (ops/saved_recipes.h).
  std::optional<c10::OperatorHandle> functional_of_inplace;
  // A pointwise op ATen lets write a tensor whose elements share memory (masked_fill_ on an
  // expanded view: only deprecated); the call-time overlap check spares it.
  bool may_write_overlapping_elements = false;
  // PyTorch's C++ shape function for the op, when ops/structured_meta.h has one: output specs
  // come from it instead of the Meta dispatch key's (often Python) kernel.
  std::optional<c10::KernelFunction> shape_function;
  std::vector<bool> written_args;  // per argument: the op writes it (in-place / out=)
  std::vector<bool> out_args;      // per argument: an out= argument (written, never read)
};

// The cached plan of `op` (thread-safe; the reference stays valid).
OpPlan& plan_of(const c10::OperatorHandle& op);

}  // namespace torch_tpu::ops
