// cat(tensors, dim) as stablehlo.concatenate. Inputs of another dtype than the output (type
// promotion) are converted. A 1-D input without elements is skipped, whatever the others' rank:
// ATen's legacy rule (cat_should_skip_tensor), which lets torch.cat([torch.empty(0), x]) work.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {

std::vector<Tensor> lower_cat(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  std::vector<Tensor> inputs;
  for (const Tensor& input : context.tensor_list(0)) {
    if (input.shape == std::vector<int64_t>{0}) continue;
    if (input.shape.size() != out.sizes.size()) context.refuse("an input of another rank (an empty 1-D tensor)");
    if (context.writes_an_argument() && input.dtype != out.dtype) context.refuse("out= of another dtype");
    inputs.push_back(builder.convert(input, out.dtype));
  }
  if (inputs.empty()) context.refuse("no inputs with elements");
  const int64_t dim = normalized_dim(context, context.arg(1).integer, out.sizes.size());
  if (inputs.size() == 1) return {inputs.front()};
  return {builder.op("stablehlo.concatenate", inputs, out.dtype, out.sizes,
                     "dimension = " + std::to_string(dim) + " : i64")};
}

}  // namespace torch_tpu::executors::pjrt::lowering
