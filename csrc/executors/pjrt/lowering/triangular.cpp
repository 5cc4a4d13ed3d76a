// tril(self, diagonal) and triu(self, diagonal): the last two dimensions' lower (upper)
// triangle from the `diagonal`-th diagonal on, zeros elsewhere; any leading dimensions batch.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

// Keeps element (i, j) of each matrix where `direction` holds between j - i and diagonal.
std::vector<Tensor> keep_triangle(OpContext& context, const char* direction) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = context.tensor(0);
  if (self.shape.size() < 2) context.refuse("an input of fewer than two dimensions (ATen raises)");
  if (self.dtype != out.dtype || self.shape != out.sizes) context.refuse("an output unlike self");
  const int64_t diagonal = context.arg(1).integer;
  const std::string rows = std::to_string(self.shape.size() - 2);
  const std::string columns = std::to_string(self.shape.size() - 1);
  const Tensor row = builder.op("stablehlo.iota", {}, DType::kInt64, self.shape, "iota_dimension = " + rows + " : i64");
  const Tensor column = builder.op("stablehlo.iota", {}, DType::kInt64, self.shape, "iota_dimension = " + columns + " : i64");
  const Tensor offset = builder.binary("stablehlo.subtract", column, row);
  const Tensor keep = builder.compare(offset, builder.splat(std::to_string(diagonal), DType::kInt64, self.shape), direction);
  return {builder.select(keep, self, builder.zeros(self.dtype, self.shape))};
}

}  // namespace

std::vector<Tensor> lower_tril(OpContext& context) { return keep_triangle(context, "LE"); }
std::vector<Tensor> lower_triu(OpContext& context) { return keep_triangle(context, "GE"); }

}  // namespace torch_tpu::executors::pjrt::lowering
