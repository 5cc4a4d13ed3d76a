// Ops that make a tensor from Scalars: arange. Its Scalars are run-time operands, so one
// executable serves every start and step of a length.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {

// arange.start_out(start, end, step, out): out[i] = start + step * i, computed as ATen's CPU
// kernel does in the accumulation type (f64 for f32/f64, f32 for half precision, i64 for
// integers: a floating start or step is truncated first, as Scalar::to<int64_t> does) and cast
// once. The length is out's, which PyTorch sized from the Scalars.
std::vector<Tensor> lower_arange(OpContext& context) {
  const ir::TensorType& out = context.return_type(0);
  if (out.sizes.size() != 1) context.refuse("an output that is not 1-d");
  ir::DType accumulate = ir::DType::kInt64;
  if (out.dtype == ir::DType::kFloat16 || out.dtype == ir::DType::kBFloat16) {
    accumulate = ir::DType::kFloat32;
  } else if (is_floating(out.dtype)) {
    accumulate = ir::DType::kFloat64;
  } else if (out.dtype == ir::DType::kBool) {
    context.refuse("arange into bool");
  }
  for (size_t index : {size_t{0}, size_t{2}}) {
    if (context.arg(index).kind != ir::Argument::Kind::kScalar) context.refuse("a start or step that is not a Scalar");
  }
  FunctionBuilder& builder = context.builder();
  const Tensor index = builder.convert(builder.op("stablehlo.iota", {}, ir::DType::kInt64, out.sizes,
                                                  "iota_dimension = 0 : i64"),
                                       accumulate);
  const Tensor start = builder.broadcast_to(builder.convert(context.scalar(0), accumulate), out.sizes);
  const Tensor step = builder.broadcast_to(builder.convert(context.scalar(2), accumulate), out.sizes);
  const Tensor values = builder.binary("stablehlo.add", start, builder.binary("stablehlo.multiply", step, index));
  return {builder.convert(values, out.dtype)};
}

}  // namespace torch_tpu::executors::pjrt::lowering
