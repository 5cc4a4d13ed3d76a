#include "ops/saved_recipes.h"

#include <algorithm>
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
  return {{tensor.sizes().begin(), tensor.sizes().end()},
          {tensor.strides().begin(), tensor.strides().end()},
          tensor.storage_offset()};
}

uint32_t version_of(const at::Tensor& tensor) { return tensor._version(); }

// An input nobody keeps is copied into the recipe if it is this many times smaller than the
// result at least: a batch norm's bias (one number a channel) beside its output.
constexpr size_t kSnapshotRatio = 16;

// How many producers deep a recipe may recompute inputs nobody keeps: each level is work
// backward does again.
constexpr int kMostNestedProducers = 2;

// A recipe argument to replace by a copy of itself once the recipe is made.
struct Snapshot {
  SavedRecipe* recipe;
  size_t arg;
};

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
  size_t output;           // which of its outputs
  torch::jit::Stack args;  // tensor arguments are None here (held weakly in `inputs`)
  std::vector<Input> inputs;
  WeakStorage storage;
  uint32_t version;
  TensorGeometry geometry;
  size_t result_bytes;
  // An in-place op's note: argument `previous_arg` was this storage's earlier value, itself
  // noted (note_recomputable_update).
  std::shared_ptr<const NotedResult> previous;
  size_t previous_arg = 0;
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


  // A recipe for `saved`, or null; `snapshots` lists its arguments to copy (after the lock is
  // released: copying dispatches an op).
  std::shared_ptr<const SavedRecipe> recipe_for(const at::Tensor& saved,
                                                std::vector<Snapshot>& snapshots) {
    const c10::StorageImpl* key = saved.storage().unsafeGetStorageImpl();
    std::lock_guard<std::mutex> lock(mutex_);
    sweep_now_and_then();
    auto recipe = make_recipe(saved, key, snapshots);
    if (recipe == nullptr) snapshots.clear();
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
  // (Still: an alias is alive. A graph that kept it may have run backward since.)
  bool kept_anyway(const c10::StorageImpl* storage) {
    const KeptTensors* kept = live_entry(kept_, storage);
    return kept != nullptr &&
           std::any_of(kept->aliases.begin(), kept->aliases.end(),
                       [](const WeakTensor& alias) { return !alias.expired(); });
  }

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
                                                 const c10::StorageImpl* key,
                                                 std::vector<Snapshot>& snapshots) {
    NotedResult* noted = live_entry(results_, key);
    // Only a value that still is what the op computed.
    if (noted == nullptr || version_of(saved) != noted->version) return nullptr;
    std::shared_ptr<SavedRecipe> recipe;
    if (std::shared_ptr<const SavedRecipe> earlier = live_recipe(key);
        earlier != nullptr && earlier->version == noted->version) {
      // Another saved tensor of this value has its recipe (ReLU's result, then the next
      // layer's input): the same one, whose inputs nobody kept may have died since.
      recipe = std::make_shared<SavedRecipe>(*earlier);
    } else {
      recipe = recipe_from(*noted, snapshots);
      if (recipe == nullptr) return nullptr;
      recipe->shared = std::make_shared<SharedRecomputation>();
    }
    {
      std::lock_guard<std::mutex> shared_lock(recipe->shared->mutex);
      ++recipe->shared->unpacks_left;
    }
    recipe->view = geometry_of(saved);
    recipe->counter = saved.unsafeGetTensorImpl()->version_counter();
    recipe->version = version_of(saved);
    return recipe;
  }

  // The recipe of the value `noted` describes, if each of its inputs is usable (kept anyway,
  // unchanged, or itself a recipe); null otherwise.
  std::shared_ptr<SavedRecipe> recipe_from(const NotedResult& noted, std::vector<Snapshot>& snapshots,
                                           int depth = 0) {
    auto recipe = std::make_shared<SavedRecipe>();
    recipe->op = noted.op;
    recipe->output = noted.output;
    recipe->args = noted.args;
    recipe->result = noted.geometry;
    recipe->view = noted.geometry;
    if (noted.previous != nullptr) {
      std::shared_ptr<SavedRecipe> previous = recipe_from(*noted.previous, snapshots, depth + 1);
      if (previous == nullptr) return nullptr;
      recipe->nested.push_back({noted.previous_arg, std::move(previous), noted.previous->geometry});
    }
    for (const NotedResult::Input& input : noted.inputs) {
      const c10::StorageImpl* input_key = input.storage._unsafe_get_target();
      if (auto impl = input.tensor.lock()) {
        at::Tensor tensor(std::move(impl));
        if (version_of(tensor) != input.version) return nullptr;
        if (kept_anyway(input_key)) {
          recipe->versions.emplace_back(input.arg, input.version);
          recipe->args[input.arg] = std::move(tensor);
          continue;
        }
        if (tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
          // A Python number made a tensor for this call (`x * 2.0`): nobody else holds it.
          recipe->args[input.arg] = std::move(tensor);
          continue;
        }
        if (tensor.nbytes() * kSnapshotRatio <= noted.result_bytes) {
          // A small input nobody keeps (a batch norm's bias): the recipe keeps a copy.
          recipe->args[input.arg] = std::move(tensor);
          snapshots.push_back({recipe.get(), input.arg});
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
      // A dead input (or one nobody keeps): usable if it is itself kept as a recipe, or
      // recomputable itself (a batch norm's output under a ReLU, which keeps only its own
      // result) as it was when this op read it.
      if (std::shared_ptr<const SavedRecipe> kept = live_recipe(input_key)) {
        recipe->nested.push_back({input.arg, std::move(kept), input.geometry});
        continue;
      }
      NotedResult* producer = depth < kMostNestedProducers ? live_entry(results_, input_key) : nullptr;
      if (producer == nullptr || producer->version != input.version) return nullptr;
      std::shared_ptr<SavedRecipe> nested = recipe_from(*producer, snapshots, depth + 1);
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

  // `update` of `self`'s storage, chained to the value noted for it if `self` is that whole
  // value, unchanged; otherwise nothing is noted (the old note is stale by its version).
  void note_update(NotedResult update, const at::Tensor& self) {
    const c10::StorageImpl* key = self.storage().unsafeGetStorageImpl();
    std::lock_guard<std::mutex> lock(mutex_);
    NotedResult* previous = live_entry(results_, key);
    if (previous == nullptr || previous->version != version_of(self) ||
        previous->geometry != geometry_of(self)) {
      return;
    }
    update.previous = std::make_shared<const NotedResult>(std::move(*previous));
    results_.insert_or_assign(key, std::move(update));
  }

 private:
  // Most noted results are intermediates that die at once. Sweeping them often keeps the maps
  // small: sweeping 4096 entries at a time gave their memory back to the system in one piece,
  // and the next 4096 notes took it back page fault by page fault.
  static constexpr uint64_t kSweepEvery = 256;

  void sweep_now_and_then() {
    if (++operations_ % kSweepEvery != 0) return;
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

namespace {

// Autograd saves only what it computes with grad mode on from an input that requires grad:
// any other result (inference, the optimizer step, buffers) never gets asked for a recipe,
// and noting it cost the host ~0.2 ms per demo training step.
bool autograd_may_save(BoxedArgs args) {
  if (!c10::GradMode::is_enabled()) return false;
  for (const c10::IValue& arg : args) {
    if (arg.isTensor() && arg.toTensor().defined() && arg.toTensor().requires_grad()) return true;
  }
  return false;
}

// A shape (native_layer_norm's normalized_shape, a SymInt[] boxed as a generic list).
bool is_int_list(const c10::IValue& arg) {
  if (arg.isIntList()) return true;
  for (const c10::IValue& element : arg.toListRef()) {
    if (!element.isInt()) return false;
  }
  return true;
}

// `op`'s call on `args` giving a value of `result`'s storage at `version`, its tensors held
// weakly; argument `previous_arg`, if given, is left out (it is the storage's earlier value).
// Nothing for a call with list arguments (not a simple call).
std::optional<NotedResult> noted_call(const c10::OperatorHandle& op, BoxedArgs args,
                                      const at::Tensor& result, uint32_t version,
                                      std::optional<size_t> previous_arg = std::nullopt,
                                      size_t output = 0) {
  NotedResult noted{op, output, {}, {}, WeakStorage(result.storage().getWeakStorageImpl()),
                    version, geometry_of(result), result.nbytes()};
  noted.args.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& arg = args[i];
    if (arg.isTensorList() || (arg.isList() && !is_int_list(arg))) return std::nullopt;
    if (!arg.isTensor()) {
      noted.args.push_back(arg);
      continue;
    }
    noted.args.emplace_back();  // held weakly in `inputs`
    const at::Tensor& tensor = arg.toTensor();
    if (tensor.defined() && i != previous_arg) {
      // A weak reference to the tensor itself stands for "no base" (it is the view's own).
      WeakTensor base(tensor.is_view() ? tensor._base().getIntrusivePtr() : tensor.getIntrusivePtr());
      noted.inputs.push_back({i, WeakTensor(tensor.getIntrusivePtr()),
                              WeakStorage(tensor.storage().getWeakStorageImpl()), std::move(base),
                              version_of(tensor), geometry_of(tensor)});
    }
  }
  if (previous_arg.has_value()) noted.previous_arg = *previous_arg;
  return noted;
}

}  // namespace

void note_recomputable_result(const c10::OperatorHandle& op, BoxedArgs args,
                              const at::Tensor& output) {
  if (!autograd_may_save(args)) return;
  if (auto noted = noted_call(op, args, output, version_of(output))) registry().note(std::move(*noted));
}

std::optional<size_t> recomputable_output(const std::string& name) {
  if (name == "aten::native_layer_norm" || name == "aten::native_batch_norm") return 0;
  if (name == "torch_tpu::lstm_cell") return 2;
  if (name == "torch_tpu::gru_cell") return 1;
  return std::nullopt;
}

void note_recomputable_output(const c10::OperatorHandle& op, BoxedArgs args,
                              const std::vector<at::Tensor>& outputs) {
  if (!autograd_may_save(args)) return;
  const size_t output = *recomputable_output(op.schema().name());
  const at::Tensor& result = outputs[output];
  if (op.schema().name() != "aten::native_batch_norm") {
    if (auto noted = noted_call(op, args, result, version_of(result), std::nullopt, output)) {
      registry().note(std::move(*noted));
    }
    return;
  }
  // (input, weight, bias, running_mean, running_var, training, momentum, eps). A channels-last
  // input's statistics are summed in per-thread partial sums: other bits on another team.
  constexpr size_t kInput = 0, kRunningMean = 3, kRunningVar = 4, kTraining = 5;
  if (!args[kTraining].toBool() || !args[kInput].toTensor().is_contiguous()) return;
  torch::jit::Stack without_running_stats = args.vec();
  without_running_stats[kRunningMean] = c10::IValue();
  without_running_stats[kRunningVar] = c10::IValue();
  note_recomputable_result(op, without_running_stats, result);
}

void note_recomputable_update(const c10::OperatorHandle& functional, BoxedArgs args,
                              const at::Tensor& self) {
  if (!autograd_may_save(args)) return;
  // Autograd's in-place wrapper counts the write after this kernel returns: the value noted
  // here is the one at the next version. (An in-place call below that wrapper would not count
  // it, and then neither would any recipe's version check: recipes rely on version counters.)
  if (auto noted = noted_call(functional, args, self, version_of(self) + 1, /*previous_arg=*/0)) {
    registry().note_update(std::move(*noted), self);
  }
}

KeptForBackward keep_for_backward(const at::Tensor& saved) {
  const bool on_chip = saved.defined() && saved.device().type() == c10::DeviceType::PrivateUse1 &&
                       saved.has_storage();
  if (on_chip) {
    std::vector<Snapshot> snapshots;
    if (auto recipe = registry().recipe_for(saved, snapshots)) {
      // Grad mode off: a copy autograd does not track, and that is not noted for recipes.
      const c10::AutoGradMode no_grad(false);
      for (const Snapshot& snapshot : snapshots) {
        c10::IValue& arg = snapshot.recipe->args[snapshot.arg];
        arg = arg.toTensor().detach().clone();
      }
      return {std::move(recipe), at::Tensor()};
    }
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
  if (recipe.counter.has_value()) {
    check_unmodified(recipe.counter->current_version(), recipe.version, recipe.view, recipe);
  }
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
  return stack[recipe.output].toTensor();
}

}  // namespace

at::Tensor recompute(const SavedRecipe& recipe) {
  SharedRecomputation* shared = recipe.shared.get();
  at::Tensor result;
  if (shared != nullptr) {
    std::lock_guard<std::mutex> lock(shared->mutex);
    result = shared->value;
  }
  if (result.defined()) {
    check_unmodified(recipe.counter->current_version(), recipe.version, recipe.view, recipe);
  } else {
    registry().count_recompute();
    result = recompute_result(recipe);
  }
  if (shared != nullptr) {
    // A graph run backward again (retain_graph) unpacks more often: then it recomputes.
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->value = --shared->unpacks_left > 0 ? result : at::Tensor();
  }
  return view_as(result, recipe.result, recipe.view);
}

SavedRecipeStats saved_recipe_stats() { return registry().stats(); }

}  // namespace torch_tpu::ops
