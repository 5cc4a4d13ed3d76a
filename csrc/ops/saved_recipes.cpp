#include "ops/saved_recipes.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

#include <ATen/ops/as_strided.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

namespace torch_tpu::ops {
namespace {

using WeakStorage = c10::weak_intrusive_ptr<c10::StorageImpl>;
using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

TensorGeometry geometry_of(const at::Tensor& tensor) {
  return {tensor.sizes().vec(), tensor.strides().vec(), tensor.storage_offset()};
}

uint32_t version_of(const at::Tensor& tensor) { return tensor._version(); }

// A pointwise result as recorded: enough to make a recipe while its inputs live.
struct NotedResult {
  struct Input {
    size_t arg;
    WeakTensor tensor;
    WeakStorage storage;  // keeps the identity, to find a recipe kept for a dead input
    WeakTensor base;      // for a view: what it views (often kept when the view is not)
    uint32_t version;
    TensorGeometry geometry;
  };
  c10::OperatorHandle op;
  torch::jit::Stack args;  // tensor arguments are None here (held weakly in `inputs`)
  std::vector<Input> inputs;
  WeakStorage storage;
  uint32_t version;
  TensorGeometry geometry;
};

// Everything is keyed by storage identity; an entry whose weak storage expired is stale (the
// address may be a new storage's) and is dropped when met or swept.
class Registry {
 public:
  void note(NotedResult result) {
    std::lock_guard<std::mutex> lock(mutex_);
    sweep_now_and_then();
    const c10::StorageImpl* key = result.storage._unsafe_get_target();
    results_.insert_or_assign(key, std::move(result));
  }

  std::shared_ptr<const SavedRecipe> recipe_for(const at::Tensor& saved) {
    const c10::StorageImpl* key = saved.storage().unsafeGetStorageImpl();
    std::lock_guard<std::mutex> lock(mutex_);
    sweep_now_and_then();
    auto recipe = make_recipe(saved, key);
    if (recipe) {
      recipes_.insert_or_assign(key, KeptRecipe{weak(saved), recipe});
      ++stats_.recipes;
    }
    return recipe;
  }

  void count_recompute() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.recomputed;
  }
  SavedRecipeStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  struct KeptRecipe {
    WeakStorage storage;
    std::weak_ptr<const SavedRecipe> recipe;
  };
  // Saved tensors autograd keeps over one storage: the detached aliases it holds.
  struct KeptTensors {
    WeakStorage storage;
    std::vector<WeakTensor> aliases;
  };

  static WeakStorage weak(const at::Tensor& tensor) {
    return WeakStorage(tensor.storage().getWeakStorageImpl());
  }
  template <typename Map>
  static auto* live_entry(Map& map, const c10::StorageImpl* key) {
    auto found = map.find(key);
    if (found == map.end()) return static_cast<typename Map::mapped_type*>(nullptr);
    if (stale(found->second)) {
      map.erase(found);
      return static_cast<typename Map::mapped_type*>(nullptr);
    }
    return &found->second;
  }
  // A result or a tensor autograd keeps is of interest while its storage lives; a recipe while
  // autograd keeps it (its storage has usually died: that is the point). The weak storage
  // reference keeps the key's identity in both cases.
  static bool stale(const NotedResult& r) { return r.storage.expired(); }
  static bool stale(const KeptTensors& k) { return k.storage.expired(); }
  static bool stale(const KeptRecipe& r) { return r.recipe.expired(); }

  // Saved by autograd itself (its storage, through any tensor). Then changing it in place
  // before backward raises in Strict too, so recomputing from it adds no new error; a
  // parameter nobody saved may be changed freely, so it does not count.
  bool kept_anyway(const c10::StorageImpl* storage) { return live_entry(kept_, storage) != nullptr; }

  // An alias autograd keeps of `storage` viewed as `geometry`: an op's input whose own tensor
  // died (a temporary such as `x @ w` in `silu(x @ w)`) while autograd keeps it.
  std::optional<at::Tensor> kept_alias(const c10::StorageImpl* storage, const TensorGeometry& geometry) {
    KeptTensors* kept = live_entry(kept_, storage);
    if (kept == nullptr) return std::nullopt;
    for (const WeakTensor& weak_alias : kept->aliases) {
      if (auto impl = weak_alias.lock()) {
        at::Tensor alias(std::move(impl));
        if (geometry_of(alias) == geometry) return alias;
      }
    }
    return std::nullopt;
  }

  std::shared_ptr<const SavedRecipe> live_recipe(const c10::StorageImpl* key) {
    KeptRecipe* kept = live_entry(recipes_, key);
    return kept != nullptr ? kept->recipe.lock() : nullptr;
  }

  std::shared_ptr<const SavedRecipe> make_recipe(const at::Tensor& saved,
                                                 const c10::StorageImpl* key) {
    NotedResult* noted = live_entry(results_, key);
    // Only a value that still is what the op computed.
    if (noted == nullptr || version_of(saved) != noted->version) return nullptr;
    auto recipe = std::make_shared<SavedRecipe>();
    recipe->op = noted->op;
    recipe->args = noted->args;
    recipe->result = noted->geometry;
    recipe->view = geometry_of(saved);
    recipe->counter = saved.unsafeGetTensorImpl()->version_counter();
    recipe->version = version_of(saved);
    for (const NotedResult::Input& input : noted->inputs) {
      const c10::StorageImpl* input_key = input.storage._unsafe_get_target();
      if (auto impl = input.tensor.lock()) {
        at::Tensor tensor(std::move(impl));
        if (version_of(tensor) != input.version) return nullptr;
        if (kept_anyway(input_key)) {
          recipe->versions.emplace_back(input.arg, input.version);
          recipe->args[input.arg] = std::move(tensor);
          continue;
        }
      } else if (std::optional<at::Tensor> alias = kept_alias(input_key, input.geometry)) {
        if (version_of(*alias) != input.version) return nullptr;
        recipe->versions.emplace_back(input.arg, input.version);
        recipe->args[input.arg] = std::move(*alias);
        continue;
      }
      auto base_impl = input.base.lock();
      if (base_impl && base_impl.get() != input.tensor._unsafe_get_target()) {
        // A view (of something kept) taken for this op.
        at::Tensor base(std::move(base_impl));
        if (version_of(base) != input.version) return nullptr;
        if (kept_anyway(input_key)) {
          recipe->views.push_back({input.arg, std::move(base), input.geometry, input.version});
          continue;
        }
      }
      // A dead input (or one nobody keeps): usable only if it is itself kept as a recipe.
      std::shared_ptr<const SavedRecipe> nested = live_recipe(input_key);
      if (nested == nullptr) return nullptr;
      recipe->nested.push_back({input.arg, std::move(nested), input.geometry});
    }
    return recipe;
  }

 public:
  // `alias` (of a saved tensor without a recipe) is what autograd keeps (keep_for_backward).
  void note_kept(const at::Tensor& alias) {
    const c10::StorageImpl* key = alias.storage().unsafeGetStorageImpl();
    std::lock_guard<std::mutex> lock(mutex_);
    KeptTensors* kept = live_entry(kept_, key);
    if (kept == nullptr) kept = &kept_.insert_or_assign(key, KeptTensors{weak(alias), {}}).first->second;
    std::erase_if(kept->aliases, [](const WeakTensor& t) { return t.expired(); });
    kept->aliases.emplace_back(alias.getIntrusivePtr());
  }

 private:
  void sweep_now_and_then() {
    if (++operations_ % 4096 != 0) return;
    const auto sweep = [](auto& map) {
      for (auto it = map.begin(); it != map.end();) {
        it = stale(it->second) ? map.erase(it) : std::next(it);
      }
    };
    sweep(results_);
    sweep(kept_);
    sweep(recipes_);
  }

  std::mutex mutex_;
  std::unordered_map<const c10::StorageImpl*, NotedResult> results_;
  std::unordered_map<const c10::StorageImpl*, KeptTensors> kept_;  // saved by autograd itself
  std::unordered_map<const c10::StorageImpl*, KeptRecipe> recipes_;
  uint64_t operations_ = 0;
  SavedRecipeStats stats_;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

std::atomic<bool> g_enabled{false};

at::Tensor view_as(const at::Tensor& result, const TensorGeometry& computed,
                   const TensorGeometry& view) {
  TORCH_INTERNAL_ASSERT(geometry_of(result) == computed,
                        "a recomputed saved tensor came out with another layout");
  if (view == computed) return result;
  return at::as_strided(result, view.sizes, view.strides, view.offset);
}

}  // namespace

bool saved_recipes_enabled() { return g_enabled.load(std::memory_order_relaxed); }
void set_saved_recipes_enabled(bool enabled) { g_enabled.store(enabled); }

void note_recomputable_result(const c10::OperatorHandle& op, BoxedArgs args,
                           const at::Tensor& output) {
  // Autograd saves only what it computes with grad mode on from an input that requires grad:
  // any other result (inference, the optimizer step, buffers) never gets asked for a recipe,
  // and noting it cost the host ~0.2 ms per demo training step.
  if (!c10::GradMode::is_enabled()) return;
  bool needs_grad = false;
  for (const c10::IValue& arg : args) {
    if (arg.isTensor() && arg.toTensor().defined() && arg.toTensor().requires_grad()) {
      needs_grad = true;
      break;
    }
  }
  if (!needs_grad) return;
  NotedResult noted{op, args.vec(), {}, WeakStorage(output.storage().getWeakStorageImpl()),
                    version_of(output), geometry_of(output)};
  for (size_t i = 0; i < noted.args.size(); ++i) {
    c10::IValue& arg = noted.args[i];
    if (arg.isTensorList() || arg.isList()) return;  // not a simple pointwise call
    if (!arg.isTensor()) continue;
    const at::Tensor& tensor = arg.toTensor();
    if (tensor.defined()) {
      // A weak reference to the tensor itself stands for "no base" (it is the view's own).
      WeakTensor base(tensor.is_view() ? tensor._base().getIntrusivePtr() : tensor.getIntrusivePtr());
      noted.inputs.push_back({i, WeakTensor(tensor.getIntrusivePtr()),
                              WeakStorage(tensor.storage().getWeakStorageImpl()), std::move(base),
                              version_of(tensor), geometry_of(tensor)});
    }
    arg = c10::IValue();
  }
  registry().note(std::move(noted));
}

KeptForBackward keep_for_backward(const at::Tensor& saved) {
  const bool on_chip = saved.defined() && saved.device().type() == c10::DeviceType::PrivateUse1 &&
                       saved.has_storage();
  if (on_chip) {
    if (auto recipe = registry().recipe_for(saved)) return {std::move(recipe), at::Tensor()};
  }
  // Detached outside the registry's lock: detach dispatches an op.
  at::Tensor alias = saved.defined() ? saved.detach() : saved;
  if (on_chip) registry().note_kept(alias);
  return {nullptr, std::move(alias)};
}

namespace {

void check_unmodified(uint32_t now, uint32_t saved, const TensorGeometry& tensor,
                      const SavedRecipe& recipe) {
  TORCH_CHECK(now == saved,
              "one of the variables needed for gradient computation has been modified by an "
              "inplace operation: [tpu tensor of size ", c10::IntArrayRef(tensor.sizes),
              "] is at version ", now, "; expected version ", saved,
              " instead (fused mode recomputes the result of ", recipe.op->schema().name(),
              " in backward).");
}

at::Tensor recompute_result(const SavedRecipe& recipe) {
  check_unmodified(recipe.counter->current_version(), recipe.version, recipe.view, recipe);
  torch::jit::Stack stack = recipe.args;
  for (const auto& [arg, version] : recipe.versions) {
    const at::Tensor& input = stack[arg].toTensor();
    check_unmodified(version_of(input), version, geometry_of(input), recipe);
  }
  for (const SavedRecipe::ViewInput& input : recipe.views) {
    check_unmodified(version_of(input.base), input.version, input.geometry, recipe);
    stack[input.arg] = at::as_strided(input.base, input.geometry.sizes, input.geometry.strides,
                                      input.geometry.offset);
  }
  for (const SavedRecipe::NestedInput& input : recipe.nested) {
    stack[input.arg] =
        view_as(recompute_result(*input.recipe), input.recipe->result, input.geometry);
  }
  recipe.op->callBoxed(stack);
  return stack.front().toTensor();
}

}  // namespace

at::Tensor recompute(const SavedRecipe& recipe) {
  registry().count_recompute();
  return view_as(recompute_result(recipe), recipe.result, recipe.view);
}

SavedRecipeStats saved_recipe_stats() { return registry().stats(); }

}  // namespace torch_tpu::ops
