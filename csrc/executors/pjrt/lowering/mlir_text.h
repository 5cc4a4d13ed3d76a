// Writing one StableHLO function as MLIR text in the generic op form (`"stablehlo.add"(%a, %b)
// : (...) -> ...`), the form that changes least across StableHLO versions (notes/pjrt.md).
// Torch-free. Tensors are SSA names with their IR dtype and static shape; every op the lowering
// emits goes through FunctionBuilder, so the text has one spelling for each construct.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "executors/executor.h"
#include "ir/dtype.h"

namespace torch_tpu::executors::pjrt::lowering {

// f16, bf16, f32 or f64.
bool is_floating(ir::DType dtype);

// The MLIR element type of `dtype` ("f32", "i64", "i1" for bool, "ui8", "bf16", ...). Throws
// executors::NotSupported "not supported yet: ..." for complex, quantized and float8 types.
std::string element_type(ir::DType dtype);
// "tensor<3x4xf32>", "tensor<f32>" for rank 0.
std::string tensor_type(ir::DType dtype, const std::vector<int64_t>& shape);
// "array<i64: 1, 0>", the spelling of StableHLO's i64 array attributes.
std::string i64_array(const std::vector<int64_t>& values);
// "[1, 0]", the spelling of index lists inside #stablehlo.gather / #stablehlo.dot.
std::string index_list(const std::vector<int64_t>& values);
// The precision_config attribute of a dot_general or convolution that multiplies its f32
// operands in full f32, as PyTorch's default (float32 matmul precision "highest") promises.
// Without it a backend may round them: TPUs multiply f32 as one bf16 pass, GPUs as TF32.
std::string highest_precision();

// An SSA value of the function being built.
struct Tensor {
  std::string name;  // "%7"
  ir::DType dtype = ir::DType::kFloat32;
  std::vector<int64_t> shape;

  std::string type() const { return tensor_type(dtype, shape); }
  int64_t numel() const;
};

// Builds the body of `main`: parameters first, then ops in order, then the return. Not
// thread-safe (one builder per lowering).
class FunctionBuilder {
 public:
  // Appends a parameter of the given type and returns it.
  Tensor parameter(ir::DType dtype, std::vector<int64_t> shape);

  // Emits `%n = "<op>"(<operands>) {<attributes>} : (<operand types>) -> <result type>` and
  // returns the result. `attributes` is the text inside the braces, empty for none.
  Tensor op(const std::string& name, const std::vector<Tensor>& operands, ir::DType dtype,
            std::vector<int64_t> shape, const std::string& attributes = "");
  // The same with a single-block region (reduce's computation): `region` is the block body,
  // `region_arguments` its arguments (made with region_argument).
  Tensor op_with_region(const std::string& name, const std::vector<Tensor>& operands,
                        ir::DType dtype, std::vector<int64_t> shape, const std::string& attributes,
                        const std::vector<Tensor>& region_arguments, const std::string& region);
  // A fresh name for a region's block argument, of the given 0-d type.
  Tensor region_argument(ir::DType dtype);
  // The same as op_with_region for an op with several results (a variadic reduce, a sort of
  // values and indices): `%n:k = ...`, returned as %n#0 ... %n#(k-1), typed as `results`
  // (whose names are ignored).
  std::vector<Tensor> multi_result_op_with_region(const std::string& name,
                                                  const std::vector<Tensor>& operands,
                                                  const std::vector<Tensor>& results,
                                                  const std::string& attributes,
                                                  const std::vector<Tensor>& region_arguments,
                                                  const std::string& region);
  // A region body written with this builder's own methods: the ops `emit` adds (between the
  // call's start and its end) become the body, followed by a stablehlo.return of the tensors
  // `emit` returns; they are not part of the function's body.
  std::string region_body(const std::function<std::vector<Tensor>()>& emit);

  // A constant splat of `literal` ("0", "1.000000e+00", "false") with the given type.
  Tensor splat(const std::string& literal, ir::DType dtype, std::vector<int64_t> shape);
  // A zero of `dtype` ("0", "0.000000e+00" or "false") as a splat of `shape`.
  Tensor zeros(ir::DType dtype, std::vector<int64_t> shape);

  // Common ops, typed from their operands.
  Tensor reshape(const Tensor& x, std::vector<int64_t> shape);
  Tensor convert(const Tensor& x, ir::DType dtype);
  // `x` rounded to `dtype` and back to its own dtype: a step ATen stores in `dtype` (a
  // half-precision intermediate) inside an f32 computation. `x` itself when they agree.
  Tensor round_through(const Tensor& x, ir::DType dtype);
  // stablehlo.pad with zeros: `low`/`high` per dimension (negative: cropped), `interior`
  // zeros between neighbours.
  Tensor pad(const Tensor& x, const std::vector<int64_t>& low, const std::vector<int64_t>& high,
             const std::vector<int64_t>& interior);
  // Broadcasts `x` (numpy rules: trailing dims aligned, size-1 dims stretched) to `shape`.
  Tensor broadcast_to(const Tensor& x, const std::vector<int64_t>& shape);
  Tensor binary(const std::string& name, const Tensor& a, const Tensor& b);
  // Broadcasts `x` to `shape`, its dimension i becoming `dimensions[i]` (channel vectors).
  Tensor broadcast_in_dim(const Tensor& x, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& dimensions);
  // A splat of the floating value `value` (eps, a count) rounded to `dtype` by the parser.
  Tensor float_splat(double value, ir::DType dtype, std::vector<int64_t> shape);
  Tensor unary(const std::string& name, const Tensor& x);
  // stablehlo.compare of two tensors of one shape ("EQ", "NE", "LT", "LE", "GT", "GE"): bool.
  Tensor compare(const Tensor& a, const Tensor& b, const std::string& direction);
  // stablehlo.select: `on_true` where `condition` (bool, of their shape) holds, else `on_false`.
  Tensor select(const Tensor& condition, const Tensor& on_true, const Tensor& on_false);

  // Per parameter: whether the body or `results` use it (XLA drops an unused one, but the
  // caller would still have to pass a buffer).
  std::vector<bool> parameters_used(const std::vector<Tensor>& results) const;

  // The whole module, returning `results`. Call once, after the body is complete.
  // `aliases`: (parameter, result) pairs of one type whose parameter buffer a run may donate
  // to that result (`tf.aliasing_output`): XLA then writes the result into it.
  std::string finish_module(const std::vector<Tensor>& results,
                            const std::vector<std::pair<size_t, size_t>>& aliases = {}) const;

  // A fresh SSA name ("%12"), for the values inside a region a lowering writes itself.
  std::string next_name();

 private:
  std::vector<Tensor> parameters_;
  // Appends `  ^bbN(<arguments>):\n<region>    })`, a region's block, to the body.
  void append_region(const std::vector<Tensor>& arguments, const std::string& region);

  // Plain text, appended to: no stream, so no locale can reformat a number, and a region's body
  // is set aside by swapping strings (a GPU host's build crashed writing the first number into
  // an ostringstream that had been swapped).
  std::string body_;
  int64_t next_ = 0;
};

}  // namespace torch_tpu::executors::pjrt::lowering
