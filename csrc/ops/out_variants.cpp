#include "ops/out_variants.h"

#include <mutex>
#include <unordered_map>

namespace torch_tpu::ops {
namespace {

bool returns_only_tensors(const c10::FunctionSchema& schema) {
  if (schema.returns().empty()) return false;
  for (const auto& ret : schema.returns()) {
    if (ret.type()->kind() != c10::TypeKind::TensorType || ret.alias_info() != nullptr) {
      return false;
    }
  }
  return true;
}

bool is_out_of(const c10::FunctionSchema& functional, const c10::FunctionSchema& candidate) {
  const auto& args = functional.arguments();
  const auto& out_args = candidate.arguments();
  const size_t num_outs = functional.returns().size();
  if (out_args.size() != args.size() + num_outs) return false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].type()->str() != out_args[i].type()->str()) return false;
  }
  for (size_t i = args.size(); i < out_args.size(); ++i) {
    const auto& arg = out_args[i];
    if (!arg.kwarg_only() || arg.type()->kind() != c10::TypeKind::TensorType ||
        arg.alias_info() == nullptr || !arg.alias_info()->isWrite()) {
      return false;
    }
  }
  return true;
}

// Overload names of every registered op, by op name. Out overloads are named inconsistently
// (add.out, sum.IntList_out, max.dim_max, sort.values), so candidates are matched by schema.
// Built once: ops registered later (custom libraries) have no out variants we could use anyway.
const std::unordered_map<std::string, std::vector<std::string>>& overloads_by_name() {
  static const auto index = [] {
    std::unordered_map<std::string, std::vector<std::string>> result;
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
      result[name.name].push_back(name.overload_name);
    }
    return result;
  }();
  return index;
}

// Loss ops with a `reduction` argument have CPU out= kernels that expect the output sized like
// the input, not like the reduced result (binary_cross_entropy_out computes into a wrongly
// shaped buffer and returns different numbers): they run functionally and are copied.
bool has_reduction_argument(const c10::FunctionSchema& schema) {
  for (const auto& arg : schema.arguments()) {
    if (arg.name() == "reduction") return true;
  }
  return false;
}

std::optional<c10::OperatorHandle> search(const c10::OperatorHandle& functional) {
  const c10::FunctionSchema& schema = functional.schema();
  if (!returns_only_tensors(schema) || has_reduction_argument(schema)) return std::nullopt;
  const auto& index = overloads_by_name();
  const auto it = index.find(schema.name());
  if (it == index.end()) return std::nullopt;
  for (const std::string& overload : it->second) {
    auto handle = c10::Dispatcher::singleton().findSchema({schema.name(), overload});
    if (handle.has_value() && is_out_of(schema, handle->schema())) return handle;
  }
  return std::nullopt;
}

}  // namespace

std::optional<c10::OperatorHandle> out_variant_of(const c10::OperatorHandle& functional) {
  static std::mutex mutex;
  static std::unordered_map<c10::OperatorName, std::optional<c10::OperatorHandle>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(functional.operator_name());
  if (it == cache.end()) {
    it = cache.emplace(functional.operator_name(), search(functional)).first;
  }
  return it->second;
}

std::optional<c10::OperatorHandle> functional_variant_of(const c10::OperatorHandle& out) {
  static std::mutex mutex;
  static std::unordered_map<c10::OperatorName, std::optional<c10::OperatorHandle>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(out.operator_name());
    if (it != cache.end()) return it->second;
  }
  std::optional<c10::OperatorHandle> found;
  const auto& index = overloads_by_name();
  const auto it = index.find(out.schema().name());
  if (it != index.end()) {
    for (const std::string& overload : it->second) {
      auto candidate = c10::Dispatcher::singleton().findSchema({out.schema().name(), overload});
      if (!candidate.has_value() || candidate->operator_name() == out.operator_name()) continue;
      // out_variant_of takes its own lock: called without ours.
      const auto candidate_out = out_variant_of(*candidate);
      if (candidate_out.has_value() && candidate_out->operator_name() == out.operator_name()) {
        found = candidate;
        break;
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(out.operator_name(), found);
  return found;
}

std::optional<c10::OperatorHandle> functional_of_inplace(const c10::OperatorHandle& inplace) {
  const std::string& name = inplace.schema().name();
  if (name.size() < 2 || name.back() != '_' || name.ends_with("__")) return std::nullopt;
  auto functional = c10::Dispatcher::singleton().findSchema(
      {name.substr(0, name.size() - 1), inplace.schema().overload_name()});
  if (!functional.has_value() ||
      functional->schema().arguments().size() != inplace.schema().arguments().size()) {
    return std::nullopt;
  }
  return functional;
}

}  // namespace torch_tpu::ops
