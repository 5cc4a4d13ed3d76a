#include "ops/cpu_output_rules.h"

#include <optional>
#include <unordered_map>

#include <ATen/core/Reduction.h>

namespace torch_tpu::ops {
namespace {

// The saved statistics of normalization ops (returns 1 and 2: mean and inverse std). CPU
// kernels return them in the input's dtype unless the input is reduced precision and the
// parameters are float32 ("mixed type"), then in float32; Meta follows CUDA instead (layer
// norm: always float32; group norm: always the input's dtype). In evaluation, CPU batch norm
// saves nothing and returns them empty, where Meta returns [C].
struct SavedStatsArgs {
  int input = 0;
  int weight = 1;
  int running_mean = -1;  // -1: no running statistics argument
  int training = -1;      // argument index of `training`, or -1 if fixed
  bool fixed_training = true;
};

const std::unordered_map<std::string, SavedStatsArgs>& normalization_ops() {
  static const std::unordered_map<std::string, SavedStatsArgs> ops = {
      {"aten::native_batch_norm", {0, 1, 3, 5, true}},
      {"aten::_native_batch_norm_legit", {0, 1, 3, 5, true}},
      {"aten::_native_batch_norm_legit_no_training", {0, 1, 3, -1, false}},
      {"aten::_batch_norm_with_update", {0, 1, 3, -1, true}},
      {"aten::_batch_norm_no_update", {0, 1, 3, -1, false}},
      {"aten::native_layer_norm", {0, 2, -1, -1, true}},
      {"aten::native_group_norm", {0, 1, -1, -1, true}},
  };
  return ops;
}

std::optional<c10::ScalarType> tensor_dtype(BoxedArgs args, int index) {
  if (index < 0 || index >= static_cast<int>(args.size()) || !args[index].isTensor()) {
    return std::nullopt;
  }
  const at::Tensor& tensor = args[index].toTensor();
  if (!tensor.defined()) return std::nullopt;
  return tensor.scalar_type();
}

void apply_saved_stats_rule(const SavedStatsArgs& layout, BoxedArgs args,
                           OutputSpecs& specs) {
  if (specs.size() < 3) return;
  const bool training = layout.training >= 0 && args[layout.training].isBool()
                            ? args[layout.training].toBool()
                            : layout.fixed_training;
  const c10::ScalarType input = args[layout.input].toTensor().scalar_type();
  std::optional<c10::ScalarType> parameter = tensor_dtype(args, layout.weight);
  if (!parameter) parameter = tensor_dtype(args, layout.running_mean);
  const bool mixed = at::isReducedFloatingType(input) && parameter == c10::ScalarType::Float;
  for (const size_t index : {size_t{1}, size_t{2}}) {
    if (specs[index].kind != ReturnSpec::Kind::kTensor) continue;
    TensorSpec& saved = specs[index].tensors[0];
    if (saved.kind != TensorSpec::Kind::kFresh) continue;
    saved.dtype = mixed ? c10::ScalarType::Float : input;
    if (!training) {
      saved.sizes.assign({0});
      saved.strides.assign({1});
    }
  }
}

// multilabel_margin_loss_forward (self, target, reduction): CPU returns a 0-dim loss unless
// the reduction is none over a batch (a 2-dim target); Meta returns [1] for an unbatched input
// with no reduction. Found by the ModuleInfo sweep (conformance/modules, nn.MultiLabelMarginLoss).
void apply_multilabel_margin_rule(BoxedArgs args, OutputSpecs& specs) {
  if (specs.empty() || specs[0].kind != ReturnSpec::Kind::kTensor) return;
  if (args.size() < 3 || !args[1].isTensor() || !args[2].isInt()) return;
  const bool reduced = args[2].toInt() != at::Reduction::None;
  if (!reduced && args[1].toTensor().dim() > 1) return;
  TensorSpec& loss = specs[0].tensors[0];
  if (loss.kind != TensorSpec::Kind::kFresh) return;
  loss.sizes.clear();
  loss.strides.clear();
}

}  // namespace

void apply_cpu_output_rules(const std::string& op_name, BoxedArgs args,
                            OutputSpecs& specs) {
  const auto& ops = normalization_ops();
  if (const auto it = ops.find(op_name); it != ops.end()) {
    apply_saved_stats_rule(it->second, args, specs);
  } else if (op_name == "aten::multilabel_margin_loss_forward") {
    apply_multilabel_margin_rule(args, specs);
  }
}

bool out_variant_is_narrower(const std::string& op_name) {
  // native_batch_norm.out rejects a reduced-precision input with float32 parameters, which the
  // functional CPU kernel accepts.
  return op_name == "aten::native_batch_norm";
}

}  // namespace torch_tpu::ops
