// Ops that move elements without computing on them: flip (stablehlo.reverse). Every dtype.
#include <algorithm>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {

// flip(self, dims): repeated dims are an error in PyTorch before dispatch; 0-d is itself.
std::vector<Tensor> lower_flip(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  const Tensor x = context.tensor(0);
  if (x.dtype != out.dtype) context.refuse("flip into another dtype");
  const ir::Argument& dims = context.arg(1);
  if (dims.kind != ir::Argument::Kind::kIntList) context.refuse("dims that are not an int list");
  std::vector<int64_t> reversed;
  for (const int64_t dim : dims.list) {
    if (x.shape.empty() && (dim == 0 || dim == -1)) continue;
    reversed.push_back(normalized_dim(context, dim, x.shape.size()));
  }
  std::sort(reversed.begin(), reversed.end());
  if (reversed.empty()) return {x};
  return {context.builder().op("stablehlo.reverse", {x}, x.dtype, x.shape,
                               "dimensions = " + i64_array(reversed))};
}

}  // namespace torch_tpu::executors::pjrt::lowering
