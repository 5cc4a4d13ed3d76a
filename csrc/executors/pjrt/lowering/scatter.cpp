// scatter and its reductions: self with src's (or a Scalar's) elements written at index along
// dim, out[..index[i][j]..] <op>= src[i][j]. Indices are checked at run time (ATen raises for one
// outside [0, size), negative ones included). A 0-d self, index or src counts as 1-D of one
// element. ATen's serial loop over dim decides the writes: a plain scatter keeps the last write
// where positions repeat (done exactly here); float sums and products may differ from its order
// within rounding; max / min are exact. Half-precision sums and products accumulate in float and
// round once, as ATen's CPU kernels do (opmath: measured against PyTorch 2.13, bit for bit), and a
// mean divides that rounded sum by the count in half precision.
#include "executors/pjrt/lowering/op_lowering.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

using ir::DType;

enum class Reduction { kAssign, kSum, kProd, kMean, kMax, kMin };

Reduction named_reduction(OpContext& context, size_t index, bool two) {
  const ir::Argument& arg = context.arg(index);
  if (arg.kind != ir::Argument::Kind::kString) context.refuse("a reduce argument that is not a string");
  const std::string& name = arg.text;
  if (!two && name == "add") return Reduction::kSum;
  if (!two && name == "multiply") return Reduction::kProd;
  if (two && name == "sum") return Reduction::kSum;
  if (two && name == "prod") return Reduction::kProd;
  if (two && name == "mean") return Reduction::kMean;
  if (two && name == "amax") return Reduction::kMax;
  if (two && name == "amin") return Reduction::kMin;
  context.refuse("reduce=\"" + name + "\"");
}

ScatterCombine combine_of(Reduction reduction, DType dtype) {
  const bool logical = dtype == DType::kBool;
  switch (reduction) {
    case Reduction::kSum:
    case Reduction::kMean:
      return [logical](FunctionBuilder& b, const Tensor& x, const Tensor& y) {
        return b.binary(logical ? "stablehlo.or" : "stablehlo.add", x, y);
      };
    case Reduction::kProd:
      return [logical](FunctionBuilder& b, const Tensor& x, const Tensor& y) {
        return b.binary(logical ? "stablehlo.and" : "stablehlo.multiply", x, y);
      };
    case Reduction::kMax:  // ATen's maximum keeps NaN from either side
      return [](FunctionBuilder& b, const Tensor& x, const Tensor& y) {
        return b.binary("stablehlo.maximum", x, y);
      };
    case Reduction::kMin:
      return [](FunctionBuilder& b, const Tensor& x, const Tensor& y) {
        return b.binary("stablehlo.minimum", x, y);
      };
    case Reduction::kAssign: break;
  }
  return nullptr;
}

// The identity ATen puts at each written element before reducing when include_self is false.
Tensor identity(FunctionBuilder& builder, Reduction reduction, DType dtype, const std::vector<int64_t>& shape) {
  switch (reduction) {
    case Reduction::kProd:
      return builder.convert(builder.splat("1", DType::kInt64, shape), dtype);
    case Reduction::kMax: return builder.broadcast_to(lowest_value(builder, dtype), shape);
    case Reduction::kMin: return builder.broadcast_to(highest_value(builder, dtype), shape);
    default: return builder.zeros(dtype, shape);
  }
}

// floor(a / b) for integers with b > 0 (ATen's div_(count, "floor")).
Tensor floor_divide_by_positive(FunctionBuilder& builder, const Tensor& a, const Tensor& b) {
  const Tensor quotient = builder.binary("stablehlo.divide", a, b);
  const Tensor remainder = builder.binary("stablehlo.remainder", a, b);
  const Tensor zero = builder.zeros(a.dtype, a.shape);
  const Tensor inexact_negative = builder.binary("stablehlo.and", builder.compare(remainder, zero, "NE"),
                                                 builder.compare(a, zero, "LT"));
  const Tensor one = builder.convert(builder.splat("1", DType::kInt64, a.shape), a.dtype);
  return builder.select(inexact_negative, builder.binary("stablehlo.subtract", quotient, one), quotient);
}

// self (argument 0) with `updates` (index-shaped, self's dtype) scattered at index (argument
// 2) along dim (argument 1) by `reduction`.
std::vector<Tensor> scatter(OpContext& context, Reduction reduction, bool include_self,
                            const std::function<Tensor(const std::vector<int64_t>&)>& make_updates) {
  const ir::TensorType& out = context.return_type(0);
  FunctionBuilder& builder = context.builder();
  const Tensor self = at_least_1d(builder, context.tensor(0));
  if (self.dtype != out.dtype || self.shape != (out.sizes.empty() ? std::vector<int64_t>{1} : out.sizes)) {
    context.refuse("an output of another dtype or shape");
  }
  if (context.arg(1).kind != ir::Argument::Kind::kInt) context.refuse("a dim that is not an int");
  const int64_t dim = normalized_dim(context, context.arg(1).integer, self.shape.size());
  if (reduction == Reduction::kMean && out.dtype == DType::kBool) context.refuse("the mean of bool");
  const Tensor index = at_least_1d(builder, index_operand(context, 2));
  if (index.shape.size() != self.shape.size()) context.refuse("an index of another rank than self");
  if (index.numel() == 0) return {builder.reshape(self, out.sizes)};
  const int64_t size = self.shape[static_cast<size_t>(dim)];
  context.check(out_of_range(builder, index, size),
                "an index is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(size));
  const int64_t count = index.numel();
  const Tensor positions =
      builder.reshape(linear_positions(builder, self.shape, index.shape, dim, index), {count});
  Tensor updates = builder.reshape(make_updates(index.shape), {count});
  Tensor flat = builder.reshape(self, {self.numel()});
  if (reduction == Reduction::kAssign) {
    return {builder.reshape(assign_linear_last_wins(builder, flat, positions, updates), out.sizes)};
  }
  // Sums and products of half-precision elements accumulate in float (ATen's opmath).
  const bool widened = is_half_precision(out.dtype) && reduction != Reduction::kMax && reduction != Reduction::kMin;
  const DType compute = widened ? DType::kFloat32 : out.dtype;
  std::optional<Tensor> written;
  if (!include_self || reduction == Reduction::kMean) written = written_mask(builder, self.numel(), positions);
  if (!include_self) flat = builder.select(*written, identity(builder, reduction, out.dtype, flat.shape), flat);
  Tensor result = scatter_linear(builder, builder.convert(flat, compute), positions, builder.convert(updates, compute),
                                 combine_of(reduction, compute));
  result = builder.convert(result, out.dtype);
  if (reduction == Reduction::kMean) {
    // ATen divides the sum, rounded to self's dtype, by the count of updates (+ 1 with self),
    // counted in self's dtype, 1 where nothing was written; floor division for integers.
    const Tensor ones = builder.convert(builder.splat("1", DType::kInt64, {count}), compute);
    const Tensor start = include_self ? builder.convert(builder.splat("1", DType::kInt64, flat.shape), compute)
                                      : builder.zeros(compute, flat.shape);
    Tensor counts = builder.convert(scatter_linear(builder, start, positions, ones, combine_of(Reduction::kSum, compute)),
                                    out.dtype);
    counts = builder.select(*written, counts, builder.convert(builder.splat("1", DType::kInt64, flat.shape), out.dtype));
    result = is_floating(out.dtype) ? builder.binary("stablehlo.divide", result, counts)
                                    : floor_divide_by_positive(builder, result, counts);
  }
  return {builder.reshape(result, out.sizes)};
}

// src (argument 3) cut to index's sizes: scatter reads src[i][j] for the index's coordinates.
std::function<Tensor(const std::vector<int64_t>&)> from_src(OpContext& context) {
  return [&context](const std::vector<int64_t>& shape) {
    FunctionBuilder& builder = context.builder();
    const Tensor src = at_least_1d(builder, context.tensor(3));
    if (src.dtype != context.return_type(0).dtype) context.refuse("src of another dtype than self");
    if (src.shape.size() != shape.size()) context.refuse("src of another rank than index");
    if (src.shape == shape) return src;
    std::vector<int64_t> starts(shape.size(), 0);
    std::vector<int64_t> steps(shape.size(), 1);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] > src.shape[d]) context.refuse("an index larger than src");
    }
    return builder.op("stablehlo.slice", {src}, src.dtype, shape,
                      "start_indices = " + i64_array(starts) + ", limit_indices = " + i64_array(shape) +
                          ", strides = " + i64_array(steps));
  };
}

// The Scalar (argument 3) as self's dtype, as ATen converts it, at every index position.
std::function<Tensor(const std::vector<int64_t>&)> from_value(OpContext& context) {
  return [&context](const std::vector<int64_t>& shape) {
    return context.builder().broadcast_to(scalar_as(context, 3, context.return_type(0).dtype), shape);
  };
}

bool include_self_flag(OpContext& context) {
  const ir::Argument& arg = context.arg(5);
  if (arg.kind != ir::Argument::Kind::kBool) context.refuse("an include_self that is not a bool");
  return arg.integer != 0;
}

}  // namespace

std::vector<Tensor> lower_scatter_src(OpContext& context) {
  return scatter(context, Reduction::kAssign, true, from_src(context));
}
std::vector<Tensor> lower_scatter_value(OpContext& context) {
  return scatter(context, Reduction::kAssign, true, from_value(context));
}
std::vector<Tensor> lower_scatter_reduce(OpContext& context) {
  return scatter(context, named_reduction(context, 4, false), true, from_src(context));
}
std::vector<Tensor> lower_scatter_value_reduce(OpContext& context) {
  return scatter(context, named_reduction(context, 4, false), true, from_value(context));
}
std::vector<Tensor> lower_scatter_add(OpContext& context) {
  return scatter(context, Reduction::kSum, true, from_src(context));
}
std::vector<Tensor> lower_scatter_reduce_two(OpContext& context) {
  return scatter(context, named_reduction(context, 4, true), include_self_flag(context), from_src(context));
}

}  // namespace torch_tpu::executors::pjrt::lowering
