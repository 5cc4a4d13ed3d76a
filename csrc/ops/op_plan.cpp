#include "ops/op_plan.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "ops/cpu_output_rules.h"
#include "ops/op_description.h"
#include "ops/out_variants.h"
#include "ops/saved_recipes.h"
#include "ops/structured_meta.h"

namespace torch_tpu::ops {
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

// Arguments an op writes although its schema does not mark them (a PyTorch schema quirk):
// native_batch_norm updates running_mean and running_var (arguments 3 and 4) in training.
// Treating them as written keeps those updates where the kernel runs on copies of the
// storages (the PJRT runtime's host fallback) and orders later reads after the op.
bool written_without_annotation(const std::string& name, size_t index) {
  return name == "aten::native_batch_norm" && (index == 3 || index == 4);
}

bool is_scalar_type(const c10::TypePtr& type) {
  // Exact kinds: `int` is a subtype of Scalar in the type system but shapes depend on it.
  c10::TypePtr element = type;
  if (element->kind() == c10::TypeKind::OptionalType) element = element->containedType(0);
  if (element->kind() == c10::TypeKind::ListType) element = element->containedType(0);
  return element->kind() == c10::TypeKind::NumberType;
}

// A norm's order picks its algorithm (a maximum, a count, a sum of powers): the value is
// recorded as structure (a double or int argument), not as a run-time Scalar operand, so that
// programs of different orders differ.
bool scalar_picks_algorithm(const std::string& op, const c10::Argument& arg) {
  return (op == "aten::linalg_vector_norm" && arg.name() == "ord") || (op == "aten::norm" && arg.name() == "p");
}

bool is_optional_generator(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::OptionalType &&
         type->containedType(0)->kind() == c10::TypeKind::GeneratorType;
}

bool is_dtype(const c10::Argument& arg) {
  c10::TypePtr type = arg.real_type();
  if (type->kind() == c10::TypeKind::OptionalType) type = type->containedType(0);
  return type->kind() == c10::TypeKind::ScalarTypeType;
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
  if (!plan->mutates_args && !out_variant_is_narrower(schema.name())) {
    plan->out_variant = out_variant_of(op);
  }
  const auto& args = schema.arguments();
  const std::string& name = schema.name();
  for (size_t i = 0; i < args.size(); ++i) {
    plan->scalar_args.push_back(is_scalar_type(args[i].type()) && !scalar_picks_algorithm(name, args[i]));
    if (is_optional_generator(args[i].type())) plan->generator_args.push_back(i);
    if (is_dtype(args[i])) plan->dtype_args.push_back(i);
  }
  plan->scalar_values_shape_outputs = name == "aten::arange" || name == "aten::range" ||
                                      name == "aten::linspace" || name == "aten::logspace";
  plan->pointwise = is_pointwise_op(name) && plan->generator_args.empty();
  plan->recomputable_output = recomputable_output(name);
  plan->may_write_overlapping_elements = name.rfind("aten::masked_fill", 0) == 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::Argument& arg = args[i];
    const bool written = (arg.alias_info() != nullptr && arg.alias_info()->isWrite()) ||
                         written_without_annotation(name, i);
    plan->mutates_args |= written;
    plan->written_args.push_back(written);
    plan->out_args.push_back(written && arg.kwarg_only());
  }
  const bool writes_only_self = !plan->written_args.empty() && plan->written_args[0] &&
                                !plan->out_args[0] &&
                                std::count(plan->written_args.begin(), plan->written_args.end(), true) == 1;
  if (plan->pointwise && writes_only_self) plan->functional_of_inplace = functional_of_inplace(op);
  plan->shape_function = structured_meta_kernel(op.operator_name());
  plan->accepts_cpu_tensors = name == "aten::index" || name == "aten::index_put_" ||
                              name == "aten::_index_put_impl_" || name == "aten::index_put";
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

}  // namespace torch_tpu::ops
