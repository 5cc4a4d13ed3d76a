#include "ops/op_description.h"

#include "executors/host/host_op_work.h"
#include "privateuse1/tpu_tensor.h"

#include "executors/host/fusible_kernel_call.h"

#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace torch_tpu::ops {
namespace {

using executors::host::CapturedArgs;

using engine::StorageRef;

using privateuse1::is_tpu;

using executors::host::PointwiseExpression;
using executors::host::PointwiseOpcode;
using executors::host::PointwiseOperand;

// How the register-level loop computes an op: its opcode, which arguments are its operands (in
// order), and which argument is alpha (-1: none).
struct ExpressionRule {
  PointwiseOpcode opcode;
  std::vector<int> operand_args;
  int alpha_arg = -1;
  // pow(tensor, scalar): the opcode depends on the exponent (integer_power_expression).
  bool integer_power = false;
};

// "aten::add_.Tensor" -> "add" and "Tensor". A multi-tensor op's lane is its per-tensor op:
// "aten::_foreach_add_.List" -> "add" and "Tensor" (a list of scalars: "Scalar").
std::pair<std::string, std::string> base_and_overload(const std::string& name) {
  std::string base = name.substr(name.find("::") + 2);
  std::string overload;
  if (const size_t dot = base.find('.'); dot != std::string::npos) {
    overload = base.substr(dot + 1);
    base.resize(dot);
  }
  if (!base.empty() && base.back() == '_') base.pop_back();
  if (base.rfind("_foreach_", 0) == 0) {
    base = base.substr(9);
    static const std::map<std::string, std::string> kLaneOverloads = {
        {"List", "Tensor"}, {"ScalarList", "Scalar"}, {"List_out", "Tensor_out"},
        {"ScalarList_out", "Scalar_out"}};
    if (auto found = kLaneOverloads.find(overload); found != kLaneOverloads.end()) overload = found->second;
  }
  return {base, overload};
}

std::optional<ExpressionRule> expression_rule(const std::string& name) {
  if (name == "aten::pow.Tensor_Scalar" || name == "aten::pow.Tensor_Scalar_out" ||
      name == "aten::pow_.Scalar") {
    return ExpressionRule{PointwiseOpcode::kMul, {0}, -1, /*integer_power=*/true};
  }
  const auto [base, overload] = base_and_overload(name);
  const bool tensor_or_scalar = overload.empty() || overload == "Tensor" || overload == "Scalar" ||
                                overload == "out" || overload == "Scalar_out" ||
                                overload == "Tensor_out";
  if (!tensor_or_scalar) return std::nullopt;  // div's rounding modes, ...
  // The register form's clamp bounds are constants; clamp.Tensor's bounds may be whole
  // tensors, which only ATen's kernel handles.
  if (base == "clamp" && overload.rfind("Tensor", 0) == 0) return std::nullopt;
  static const std::map<std::string, ExpressionRule> kRules = {
      {"add", {PointwiseOpcode::kAdd, {0, 1}, 2}},
      {"sub", {PointwiseOpcode::kSub, {0, 1}, 2}},
      {"rsub", {PointwiseOpcode::kSub, {1, 0}, 2}},
      {"mul", {PointwiseOpcode::kMul, {0, 1}}},
      {"div", {PointwiseOpcode::kDiv, {0, 1}}},
      {"maximum", {PointwiseOpcode::kMaximum, {0, 1}}},
      {"minimum", {PointwiseOpcode::kMinimum, {0, 1}}},
      {"clamp", {PointwiseOpcode::kClamp, {0, 1, 2}}},
      {"neg", {PointwiseOpcode::kNeg, {0}}},
      {"relu", {PointwiseOpcode::kRelu, {0}}},
      {"abs", {PointwiseOpcode::kAbs, {0}}},
      {"reciprocal", {PointwiseOpcode::kReciprocal, {0}}},
      {"sqrt", {PointwiseOpcode::kSqrt, {0}}},
      {"rsqrt", {PointwiseOpcode::kRsqrt, {0}}},
      {"exp", {PointwiseOpcode::kExp, {0}}},
      {"tanh", {PointwiseOpcode::kTanh, {0}}},
      {"sigmoid", {PointwiseOpcode::kSigmoid, {0}}},
      {"silu", {PointwiseOpcode::kSilu, {0}}},
      {"addcmul", {PointwiseOpcode::kAddcmul, {0, 1, 2}, 3}},
      {"addcdiv", {PointwiseOpcode::kAddcdiv, {0, 1, 2}, 3}},
      {"lerp", {PointwiseOpcode::kLerp, {0, 1, 2}}},
  };
  auto found = kRules.find(base);
  if (found == kRules.end()) return std::nullopt;
  return found->second;
}

// The value of a one-element real CPU tensor (a wrapped Python number, a user's 0-dim tensor)
// as float, as the CPU kernel converts it to a float32 op's dtype: a plain conversion, so
// `x + 1e300` gives inf as on CPU (item<float>() raised that the value overflows float). Read
// directly: item() goes through the dispatcher, ~1 us on every recorded `x + 1`.
std::optional<float> one_value_as_float(const at::Tensor& tensor) {
  if (tensor.numel() != 1 || !tensor.device().is_cpu()) return std::nullopt;
  const void* data = tensor.const_data_ptr();
  switch (tensor.scalar_type()) {
    case c10::kDouble: return static_cast<float>(*static_cast<const double*>(data));
    case c10::kFloat: return *static_cast<const float*>(data);
    case c10::kLong: return static_cast<float>(*static_cast<const int64_t*>(data));
    case c10::kInt: return static_cast<float>(*static_cast<const int32_t*>(data));
    case c10::kBool: return *static_cast<const bool*>(data) ? 1.0f : 0.0f;
    case c10::kHalf: return static_cast<float>(*static_cast<const c10::Half*>(data));
    case c10::kBFloat16: return static_cast<float>(*static_cast<const c10::BFloat16*>(data));
    default: return std::nullopt;  // complex, other integers: left to the op's own kernel
  }
}

// The plan's rule, parsed from its name once per op and thread rather than on every recorded
// call (and every lane of a multi-tensor call).
const std::optional<ExpressionRule>& rule_of(const OpPlan& plan) {
  thread_local std::unordered_map<const OpPlan*, std::optional<ExpressionRule>> rules;
  auto found = rules.find(&plan);
  if (found == rules.end()) found = rules.emplace(&plan, expression_rule(plan.name)).first;
  return found->second;
}

// pow(x, 1), pow(x, 2) and float32 pow(x, 3) as ATen computes them, in float32 and bf16: ATen
// copies for an exponent of 1 (x * 1 is x, bit for bit), and multiplies for 2 and 3, left to
// right. (For bf16 it rounds x * x before the third factor, which one instruction cannot; for
// float16, and other exponents, it calls pow.) RMSNorm squares, and its backward cubes: as
// plain products their clusters run in the register loop instead of PyTorch's kernels on
// chunks.
bool integer_power_expression(const CapturedArgs& captured, const executors::host::FusibleKernelCall& op,
                              PointwiseExpression& expression) {
  if (captured.args.size() < 2 || captured.args[1].kind != CapturedArgs::Arg::Kind::kValue) return false;
  const c10::IValue& exponent = captured.args[1].value;
  if (!exponent.isScalar() || exponent.toScalar().isComplex()) return false;
  const double power = exponent.toScalar().toDouble();
  const c10::ScalarType dtype = op.tensors()[static_cast<size_t>(expression.output)].snapshot->dtype();
  if (dtype != c10::kFloat && dtype != c10::kBFloat16) return false;
  const PointwiseOperand base = expression.operands.front();
  if (power == 1.0) {
    expression.operands.push_back(PointwiseOperand{-1, 1.0f});
  } else if (power == 2.0) {
    expression.operands.push_back(base);
  } else if (power == 3.0 && dtype == c10::kFloat) {
    expression.opcode = PointwiseOpcode::kCube;
  } else {
    return false;
  }
  return true;
}

// The op's expression (of lane `lane` of a multi-tensor op), when every operand is a chip tensor
// or a single known value.
std::optional<PointwiseExpression> expression_of(const OpPlan& plan, const executors::host::CpuKernelCall& queued,
                                                 const executors::host::FusibleKernelCall& op, int lane = -1) {
  const std::optional<ExpressionRule>& rule = rule_of(plan);
  if (!rule) return std::nullopt;
  const CapturedArgs& captured = queued.captured;
  PointwiseExpression expression;
  expression.opcode = rule->opcode;
  for (size_t k = 0; k < rule->operand_args.size(); ++k) {
    const size_t a = static_cast<size_t>(rule->operand_args[k]);
    if (a >= captured.args.size()) return std::nullopt;
    const CapturedArgs::Arg& arg = captured.args[a];
    PointwiseOperand operand;
    if (arg.kind == CapturedArgs::Arg::Kind::kTensorList && lane >= 0) {
      operand.tensor = op.tensor_at_slot(arg.first_tensor + static_cast<size_t>(lane));
    } else if (arg.kind == CapturedArgs::Arg::Kind::kValue && arg.value.isList() && lane >= 0) {
      const c10::IValue element = arg.value.toList().get(static_cast<size_t>(lane));
      if (!element.isScalar()) return std::nullopt;
      operand.constant = static_cast<float>(element.toScalar().toDouble());
    } else if (arg.kind == CapturedArgs::Arg::Kind::kTensor) {
      const CapturedArgs::Tensor& element = captured.tensors[arg.first_tensor];
      if (element.snapshot.defined()) {
        operand.tensor = op.tensor_at_slot(arg.first_tensor);
      } else if (auto value = element.host.defined() ? one_value_as_float(element.host)
                                                     : std::nullopt) {
        operand.constant = *value;
      } else {
        return std::nullopt;
      }
    } else if (arg.kind == CapturedArgs::Arg::Kind::kValue && arg.value.isScalar()) {
      operand.constant = static_cast<float>(arg.value.toScalar().toDouble());
    } else if (arg.kind == CapturedArgs::Arg::Kind::kValue && arg.value.isNone() &&
               rule->opcode == PointwiseOpcode::kClamp) {
      operand.constant = k == 1 ? -std::numeric_limits<float>::infinity()
                                : std::numeric_limits<float>::infinity();
    } else {
      return std::nullopt;
    }
    expression.operands.push_back(operand);
  }
  if (rule->alpha_arg >= 0 && static_cast<size_t>(rule->alpha_arg) < captured.args.size()) {
    c10::IValue alpha = captured.args[static_cast<size_t>(rule->alpha_arg)].value;
    if (alpha.isList() && lane >= 0) alpha = alpha.toList().get(static_cast<size_t>(lane));
    if (!alpha.isScalar()) return std::nullopt;
    expression.alpha = static_cast<float>(alpha.toScalar().toDouble());
  }
  // The written tensor: the out= target we allocated, or the argument the op writes (self for
  // in-place ops, `out` for out= calls); a lane's element of them.
  if (lane >= 0) {
    const auto element = static_cast<size_t>(lane);
    if (!queued.targets.empty()) {
      expression.output = op.tensor_at_slot(captured.tensors.size() + element);
    } else if (!plan.written_args.empty() && plan.written_args[0] &&
               captured.args[0].kind == CapturedArgs::Arg::Kind::kTensorList) {
      expression.output = op.tensor_at_slot(captured.args[0].first_tensor + element);
    }
  } else if (queued.use_out_variant) {
    expression.output = op.tensor_at_slot(captured.tensors.size());
  } else {
    for (size_t a = 0; a < plan.written_args.size() && a < captured.args.size(); ++a) {
      if (plan.written_args[a] && captured.args[a].kind == CapturedArgs::Arg::Kind::kTensor) {
        expression.output = op.tensor_at_slot(captured.args[a].first_tensor);
        break;
      }
    }
  }
  if (expression.output < 0) return std::nullopt;
  if (rule->integer_power && !integer_power_expression(captured, op, expression)) return std::nullopt;
  return expression;
}

// A reduction over non-leading dims (FusibleOp::reduces_rows): sum/mean/amax/amin over an
// explicit list of dims that leaves dim 0, without a dtype conversion. Chunks of rows reduce
// independently, each row with the kernel's own arithmetic, so fusing it changes no result.
bool is_row_reduction(const OpPlan& plan, BoxedArgs args,
                      const std::vector<at::Tensor>& outputs) {
  static const std::unordered_set<std::string> kRowReductions = {
      "aten::sum.dim_IntList", "aten::sum.IntList_out", "aten::mean.dim", "aten::mean.out",
      "aten::amax", "aten::amax.out", "aten::amin", "aten::amin.out"};
  if (!kRowReductions.count(plan.name) || outputs.size() != 1 || args.size() < 3) return false;
  if (!args[0].isTensor() || !args[1].isIntList()) return false;
  const at::Tensor& input = args[0].toTensor();
  const int64_t rank = input.dim();
  const std::vector<int64_t> dims = args[1].toIntVector();
  if (rank < 2 || dims.empty()) return false;
  for (int64_t dim : dims) {
    if (dim < -rank || dim >= rank || dim == 0 || dim == -rank) return false;
  }
  // sum and mean take a dtype (4th argument): a conversion is left to the unfused kernel.
  const bool has_dtype = plan.name.rfind("aten::sum", 0) == 0 || plan.name.rfind("aten::mean", 0) == 0;
  if (has_dtype && (args.size() < 4 || !args[3].isNone())) return false;
  const at::Tensor& output = outputs.front();
  return output.dim() >= 1 && output.size(0) == input.size(0);
}

}  // namespace

bool is_pointwise_op(const std::string& name) {
  static const std::unordered_set<std::string> kPointwise = {
      "aten::abs", "aten::add", "aten::addcdiv", "aten::addcmul", "aten::bitwise_and",
      "aten::bitwise_not", "aten::bitwise_or", "aten::bitwise_xor", "aten::ceil", "aten::clamp",
      "aten::clamp_max", "aten::clamp_min", "aten::cos", "aten::div", "aten::elu", "aten::eq",
      "aten::erf", "aten::exp", "aten::exp2", "aten::expm1", "aten::floor", "aten::fmod",
      "aten::frac", "aten::ge", "aten::gelu", "aten::gelu_backward", "aten::gt",
      "aten::hardsigmoid", "aten::hardswish", "aten::hardtanh", "aten::le", "aten::leaky_relu",
      "aten::lerp", "aten::log", "aten::log1p", "aten::log2", "aten::logical_and",
      "aten::logical_not", "aten::logical_or", "aten::lt", "aten::masked_fill", "aten::maximum",
      "aten::minimum", "aten::mish", "aten::mul", "aten::ne", "aten::neg", "aten::pow",
      "aten::reciprocal", "aten::relu", "aten::remainder", "aten::round", "aten::rsqrt",
      "aten::rsub", "aten::sigmoid", "aten::sigmoid_backward", "aten::sign", "aten::silu",
      "aten::silu_backward", "aten::sin", "aten::softplus", "aten::sqrt", "aten::square",
      "aten::sub", "aten::tanh", "aten::tanh_backward", "aten::threshold_backward",
      "aten::trunc", "aten::where",
  };
  // An in-place variant (add_) is as elementwise as its functional op.
  const bool in_place = name.size() > 1 && name.back() == '_';
  return kPointwise.count(in_place ? name.substr(0, name.size() - 1) : name) > 0;
}

namespace {

// Fills `work` with how the fused loop engine runs the op, where it can, and `description` with
// the storages the op touches.
void describe_into(const OpPlan& plan, BoxedArgs args, const std::vector<at::Tensor>& outputs,
                   const std::vector<at::Tensor>& fresh,
                   const std::shared_ptr<const executors::host::CpuKernelCall>& queued,
                   engine::OpDescription* description, executors::host::HostOpWork& work) {
  const CapturedArgs& captured = queued->captured;
  // The argument tensors, in the order they were captured, with whether the op writes and
  // reads each (out= arguments are written, not read).
  struct ArgTensor {
    const at::Tensor* tensor;
    bool written;
    bool read;
  };
  const FlatTensors flat = flatten_tensors(args);
  std::vector<ArgTensor> captured_tensors;
  captured_tensors.reserve(flat.size());
  for (const FlatTensor& element : flat) {
    const bool written = element.arg < plan.written_args.size() && plan.written_args[element.arg];
    const bool read = !(element.arg < plan.out_args.size() && plan.out_args[element.arg]);
    captured_tensors.push_back({&*element.tensor, written, read});
  }
  TORCH_INTERNAL_ASSERT(captured_tensors.size() == captured.tensors.size());
  const auto add_ref = [&](const at::Tensor& tensor, bool written) {
    if (!is_tpu(tensor)) return;
    description->storages.push_back(
        StorageRef{c10::weak_intrusive_ptr<c10::StorageImpl>(tensor.storage().getWeakStorageImpl()),
                   written});
  };
  for (const ArgTensor& arg : captured_tensors) add_ref(*arg.tensor, arg.written);
  for (const at::Tensor& tensor : fresh) add_ref(tensor, true);

  // A pointwise multi-tensor op: one lane per list element, which the planner may fuse with
  // the same lane of the multi-tensor ops around it (engine/program_plan.h).
  if (plan.name.rfind("aten::_foreach_", 0) == 0 &&
      is_pointwise_op("aten::" + base_and_overload(plan.name).first)) {
    std::optional<size_t> count;
    bool same_lengths = true;
    for (const CapturedArgs::Arg& arg : captured.args) {
      if (arg.kind != CapturedArgs::Arg::Kind::kTensorList) continue;
      if (count.has_value() && *count != arg.tensor_count) same_lengths = false;
      count = arg.tensor_count;
    }
    if (!count.has_value() || !same_lengths || (!fresh.empty() && fresh.size() != *count)) {
      return;
    }
    for (size_t lane = 0; lane < *count; ++lane) {
      const at::Tensor& output = fresh.empty() ? *captured_tensors[captured.args[0].first_tensor + lane].tensor
                                               : fresh[lane];
      auto op = std::make_shared<executors::host::FusibleKernelCall>(
          plan.name.c_str(), queued, output.sizes().vec(), false, static_cast<int>(lane),
          fresh.empty() ? std::nullopt : plan.out_variant);
      for (const CapturedArgs::Arg& arg : captured.args) {
        if (arg.kind == CapturedArgs::Arg::Kind::kValue) continue;
        const size_t slot = arg.first_tensor + (arg.kind == CapturedArgs::Arg::Kind::kTensorList ? lane : 0);
        const ArgTensor& tensor = captured_tensors[slot];
        if (is_tpu(*tensor.tensor)) {
          op->add(slot, captured.tensors[slot].snapshot, *tensor.tensor, tensor.written, tensor.read);
        }
      }
      if (!fresh.empty()) op->add(captured.tensors.size() + lane, queued->targets[lane], fresh[lane], true, false);
      if (auto expression = expression_of(plan, *queued, *op, static_cast<int>(lane))) {
        op->set_expression(std::move(*expression));
      }
      work.lanes.push_back(std::move(op));
    }
    return;
  }

  // Pointwise ops with one output shape, and reductions of rows, writing through out= or in
  // place, can be fused.
  const bool writes_in_place = queued->use_out_variant || fresh.empty();
  const bool reduction = writes_in_place && is_row_reduction(plan, args, outputs);
  const bool fusible_kind = (plan.pointwise && writes_in_place) || reduction;
  if (!fusible_kind || outputs.empty()) return;
  if (reduction && !is_tpu(args[0].toTensor())) return;
  const c10::IntArrayRef shape = reduction ? args[0].toTensor().sizes() : outputs.front().sizes();
  for (const at::Tensor& output : outputs) {
    if (!is_tpu(output) || (!reduction && output.sizes() != shape)) return;
  }
  auto op = std::make_shared<executors::host::FusibleKernelCall>(plan.name.c_str(), queued, shape.vec(), reduction);
  for (size_t i = 0; i < captured_tensors.size(); ++i) {
    const ArgTensor& arg = captured_tensors[i];
    if (is_tpu(*arg.tensor)) {
      op->add(i, captured.tensors[i].snapshot, *arg.tensor, arg.written, arg.read);
    }
  }
  for (size_t t = 0; t < fresh.size(); ++t) {
    op->add(captured.tensors.size() + t, queued->targets[t], fresh[t], true, false);
  }
  if (auto expression = expression_of(plan, *queued, *op)) op->set_expression(std::move(*expression));
  work.fusible = std::move(op);
  return;
}

}  // namespace

std::shared_ptr<engine::OpDescription> describe_op(
    const OpPlan& plan, BoxedArgs args, const std::vector<at::Tensor>& outputs,
    const std::vector<at::Tensor>& fresh, std::shared_ptr<const executors::host::CpuKernelCall> queued) {
  auto description = std::make_shared<engine::OpDescription>();
  auto work = std::make_shared<executors::host::HostOpWork>();
  describe_into(plan, args, outputs, fresh, queued, description.get(), *work);
  description->may_fuse = work->fusible != nullptr || !work->lanes.empty();
  // Ops that cannot fuse keep no work: the planner runs them as their task (host_work_of).
  if (description->may_fuse) description->work = std::move(work);
  return description;
}

}  // namespace torch_tpu::ops
