// Fused mode's rematerialization of saved activations. Autograd keeps the tensors backward
// needs; in fused mode many of them are results of cheap pointwise ops (a norm's scaled input,
// SwiGLU's silu(x) and product) whose inputs autograd keeps anyway. For those, autograd's
// saved-tensor hooks (python/torch_tpu/_saved_recipes.py) keep a *recipe* instead, the op and
// its input tensors, and backward recomputes the value (recorded and fused like any op). The
// tensor itself then dies with the forward's temporaries, and lazy allocation
// (runtime/lazy_buffers.h) means it often never takes chip memory at all.
//
// A recipe is made only when every input is kept anyway (saved by autograd itself, a view of
// such a tensor, or itself kept as a recipe), so holding the inputs costs no memory, and an
// in-place change to one raises in backward in Strict as well; and only when neither the value
// nor its inputs were modified in place since it was computed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "ops/boxed_args.h"

namespace torch_tpu::ops {

// Whether recipes are being made (the Python hooks are installed, fused mode).
bool saved_recipes_enabled();
void set_saved_recipes_enabled(bool enabled);

// Notes that `output` is the fresh result of the deterministic, cheap `op` on `args` (a
// pointwise op, or a clone), so that autograd may later keep a recipe for it. Holds no strong
// reference to any tensor.
void note_recomputable_result(const c10::OperatorHandle& op, BoxedArgs args,
                           const at::Tensor& output);

// Ops one of whose outputs may be kept as a recipe, and which: normalizations' first output,
// one pass over an input autograd keeps anyway (their backward needs it), whose CPU kernel
// computes each row (LayerNorm) or channel (BatchNorm on a contiguous input) alone, so the
// same bits whatever the thread count; the RNN cells' workspace (activated gates), pointwise
// in the inputs their backward keeps (ops/recurrent_cells.h).
std::optional<size_t> recomputable_output(const std::string& name);

// Notes output `recomputable_output(op's name)` of a call as recomputable. BatchNorm only in
// training, on a contiguous input, and recomputed without its running statistics: updating
// them again would change them, and in training they do not change the output.
void note_recomputable_output(const c10::OperatorHandle& op, BoxedArgs args,
                              const std::vector<at::Tensor>& outputs);

// Notes that `self` (argument 0 of `args`), just written in place by the pointwise op whose
// functional form is `functional` (a ReLU(inplace=True) after a batch norm), holds
// `functional(args)` of its previous value, if that value was itself noted: the recipe then
// recomputes the chain. Called before autograd counts the write: `self`'s version is the
// previous value's.
void note_recomputable_update(const c10::OperatorHandle& functional, BoxedArgs args,
                              const at::Tensor& self);

// Sizes, strides and storage offset of a tensor (inline up to 6 dims: every op fused mode
// records with grad on notes a few of these).
struct TensorGeometry {
  c10::SmallVector<int64_t, 6> sizes;
  c10::SmallVector<int64_t, 6> strides;
  int64_t offset = 0;
  bool operator==(const TensorGeometry&) const = default;
};

// One value that several saved tensors hold (a ReLU's result, which the next layer also keeps
// as its input): backward's first unpack recomputes it, and the others reuse it until each
// has unpacked.
struct SharedRecomputation {
  std::mutex mutex;
  int unpacks_left = 0;  // saved tensors of the value that have not unpacked it yet
  at::Tensor value;      // as computed, while some have not
};

// A saved tensor as `op` applied to `args`, then viewed as `view`.
struct SavedRecipe {
  struct NestedInput {
    size_t arg;                           // which argument
    std::shared_ptr<const SavedRecipe> recipe;
    TensorGeometry geometry;              // the argument as a view of the recipe's result
  };
  std::optional<c10::OperatorHandle> op;  // always set
  size_t output = 0;                      // which of its outputs
  torch::jit::Stack args;  // kept tensors in place; nested inputs are None until recomputed
  std::vector<NestedInput> nested;
  struct ViewInput {
    size_t arg;
    at::Tensor base;          // kept anyway; the argument was a view of it that has died
    TensorGeometry geometry;  // the argument, as a view of `base`'s storage
    uint32_t version;         // shared by a view and its base
  };
  std::vector<ViewInput> views;
  std::vector<std::pair<size_t, uint32_t>> versions;  // kept tensor arguments' versions
  TensorGeometry result;  // the op's result as it was computed
  TensorGeometry view;    // the saved tensor, a view of that result's storage
  // The saved tensor's version counter (shared with its views, alive after them) and its
  // version when saved: modifying it in place afterwards raises in backward, as in Strict.
  // Unset for an earlier value of a storage an in-place op then wrote (NestedInput of the
  // op's recipe), whose version the saved tensor's own check covers.
  std::optional<c10::VariableVersion> counter;
  uint32_t version = 0;
  std::shared_ptr<SharedRecomputation> shared;  // set on saved tensors' recipes
};

// What autograd should keep for `saved` (any device: the hooks are autograd's default ones): a
// recipe if one can be made (see above), else a detached alias of `saved`, as autograd itself
// keeps a saved tensor, noted as kept so that later recipes may use it as an input. Never
// `saved` itself: it may be the op's own result, whose grad_fn holds what is kept, and the
// graph would then live in a reference cycle until the garbage collector found it.
struct KeptForBackward {
  std::shared_ptr<const SavedRecipe> recipe;  // or null, and then:
  at::Tensor tensor;
};
KeptForBackward keep_for_backward(const at::Tensor& saved);

// The saved tensor again: its op run on its inputs, recorded like any op, under the caller's
// grad mode (so double backward differentiates through the recomputation). Raises autograd's
// in-place modification error if an input changed since.
at::Tensor recompute(const SavedRecipe& recipe);

// Counts for tests: recipes made (autograd kept no tensor) and recomputations run.
struct SavedRecipeStats {
  int64_t recipes = 0;
  int64_t recomputed = 0;
};
SavedRecipeStats saved_recipe_stats();

}  // namespace torch_tpu::ops
