#include "privateuse1/op_plan.h"

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "privateuse1/out_variants.h"

namespace torch_tpu::privateuse1 {
namespace {

bool returns_need_data(const c10::FunctionSchema& schema) {
  for (const auto& ret : schema.returns()) {
    const auto kind = ret.type()->kind();
    const bool tensor_like = kind == c10::TypeKind::TensorType ||
                             ret.type()->isSubtypeOf(*c10::ListType::ofTensors()) ||
                             ret.type()->isSubtypeOf(*c10::OptionalType::ofTensor());
    if (!tensor_like) return true;  // a bool/int/float result is read from chip data
  }
  return false;
}

// Ops whose CPU kernels size some outputs differently from their Meta kernels (embedding_bag's
// auxiliary outputs feed its CPU backward, so their CPU shapes must be kept): they run on the
// synchronous fallback, where outputs take the CPU kernel's shapes.
bool cpu_shapes_differ_from_meta(const std::string& name) {
  return name == "aten::_embedding_bag" || name == "aten::_embedding_bag_forward_only";
}

std::unique_ptr<OpPlan> make_plan(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  auto plan = std::make_unique<OpPlan>();
  plan->name = schema.name();
  if (!schema.overload_name().empty()) plan->name += "." + schema.overload_name();
  plan->mutates_args = schema.is_mutable();
  if (returns_need_data(schema) || cpu_shapes_differ_from_meta(schema.name())) {
    plan->strategy = OpStrategy::kSyncFallback;
  }
  if (!plan->mutates_args) plan->out_variant = out_variant_of(op);
  return plan;
}

std::shared_mutex g_mutex;
// Keyed by schema address: stable while the op is registered, and cheap to hash per call.
std::unordered_map<const c10::FunctionSchema*, std::unique_ptr<OpPlan>> g_plans;

}  // namespace

OpPlan& plan_of(const c10::OperatorHandle& op) {
  const c10::FunctionSchema* key = &op.schema();
  {
    std::shared_lock<std::shared_mutex> lock(g_mutex);
    auto it = g_plans.find(key);
    if (it != g_plans.end()) return *it->second;
  }
  auto plan = make_plan(op);
  std::unique_lock<std::shared_mutex> lock(g_mutex);
  auto [it, inserted] = g_plans.emplace(key, std::move(plan));
  return *it->second;
}

}  // namespace torch_tpu::privateuse1
