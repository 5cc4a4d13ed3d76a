// Vector norms: linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None) and the
// older norm(self, p=2, dim, keepdim) forms, over the named dimensions (all when none):
// ord 2 sqrt(sum x^2), 1 sum |x|, inf max |x|, -inf min |x|, 0 the count of nonzeros, any other
// p (sum |x|^p)^(1/p). The order is structure, not a run-time operand (ops/op_plan.cpp), so each
// order compiles its own program. Half precision computes in f32 and rounds once; float32 sums
// run in f64 (XLA's order is not ATen's vectorized one) and are rounded once.
#include <cmath>
#include <limits>

#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::Argument;
using ir::DType;

double order_of(OpContext& context) {
  const Argument& ord = context.arg(1);
  if (ord.kind == Argument::Kind::kNone) return 2.0;
  if (ord.kind == Argument::Kind::kInt || ord.kind == Argument::Kind::kBool) return static_cast<double>(ord.integer);
  if (ord.kind == Argument::Kind::kDouble) return ord.real;
  context.refuse("an order of that kind");
}

std::vector<Tensor> vector_norm(OpContext& context, bool has_dims) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64 && out.dtype != DType::kBFloat16 &&
      out.dtype != DType::kFloat16) {
    context.refuse("a norm of dtype " + ir::dtype_name(out.dtype));
  }
  const DType compute = out.dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  const DType sum_in = out.dtype == DType::kFloat32 ? DType::kFloat64 : compute;
  const Tensor x = context.tensor(0);
  const std::vector<int64_t> dims =
      reduction_dims(context, has_dims ? 2 : context.node().args.size(), x.shape.size(), /*empty_list_is_all=*/true);
  const std::vector<int64_t> kept = kept_sizes(x.shape, dims);
  const double ord = order_of(context);
  const Tensor magnitude = builder.unary("stablehlo.abs", builder.convert(x, compute));
  const auto sum = [&](const Tensor& terms) {
    const Tensor wide = builder.convert(terms, sum_in);
    return builder.convert(dims.empty() ? wide : reduce_sum(builder, wide, dims, kept), compute);
  };
  Tensor result;
  if (std::isinf(ord)) {
    for (const int64_t d : dims) {
      if (x.shape[static_cast<size_t>(d)] == 0) context.refuse("an infinity norm over an empty dimension (ATen raises)");
    }
    const bool largest = ord > 0;
    result = dims.empty() ? magnitude
                          : reduce(builder, magnitude, dims, kept, largest ? "stablehlo.maximum" : "stablehlo.minimum",
                                   largest ? builder.zeros(compute, {}) : highest_value(builder, compute));
  } else if (ord == 0.0) {
    const Tensor nonzero = builder.compare(magnitude, builder.zeros(compute, magnitude.shape), "NE");
    result = sum(builder.convert(nonzero, compute));
  } else if (ord == 1.0) {
    result = sum(magnitude);
  } else if (ord == 2.0) {
    result = builder.unary("stablehlo.sqrt", sum(builder.binary("stablehlo.multiply", magnitude, magnitude)));
  } else {
    const Tensor p = builder.float_splat(ord, compute, magnitude.shape);
    const Tensor total = sum(builder.binary("stablehlo.power", magnitude, p));
    result = builder.binary("stablehlo.power", total, builder.float_splat(1.0 / ord, compute, total.shape));
  }
  return {builder.reshape(builder.convert(result, out.dtype), out.sizes)};
}

}  // namespace

std::vector<Tensor> lower_linalg_vector_norm(OpContext& context) { return vector_norm(context, true); }

std::vector<Tensor> lower_norm(OpContext& context) {
  // norm.Scalar(self, p) names no dimension; the other forms name them at argument 2.
  const bool has_dims = context.node().args.size() > 2 && context.arg(2).kind == Argument::Kind::kIntList;
  return vector_norm(context, has_dims);
}

}  // namespace torch_tpu::executors::pjrt::lowering
