// IR programs the PJRT executor's tests lower and run: single ops over fresh storages, views,
// in-place and out= writes, a chain of nodes. Each builder says in its comment what it holds.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir_test_programs.h"
#include "ir/program.h"

namespace torch_tpu::ir::testing {

inline Argument double_scalar(double value) {
  return Argument::scalar_value({ScalarValue::Kind::kDouble, 0, value, 0.0});
}

inline Node make_node(std::string op, std::vector<Argument> args,
                      std::vector<StorageAccess> accesses = {}) {
  Node node;
  node.op = std::move(op);
  node.args = std::move(args);
  node.accesses = std::move(accesses);
  return node;
}

inline TensorType strided(DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                          int64_t offset = 0) {
  return TensorType{dtype, std::move(sizes), std::move(strides), offset};
}

// %in = input (external s0, layout `in`); %out = <op>(%in, extra args...) in a created,
// live-out s1 of `out`'s size. A unary op, or any op whose other arguments are not tensors.
inline Program unary_program(const std::string& op, TensorType in, TensorType out,
                             std::vector<Argument> extra = {}, int64_t in_bytes = -1) {
  Program program;
  const StorageId x = program.add_storage(in_bytes >= 0 ? in_bytes : in.extent_bytes(), true);
  const StorageId y = program.add_storage(out.extent_bytes(), false, /*live_out=*/true);
  const ValueId a = program.add_input(std::move(in), x);
  Node node;
  node.op = op;
  node.args = {Argument::tensor(a)};
  for (Argument& arg : extra) node.args.push_back(std::move(arg));
  node.accesses = {{x, Access::kRead}, {y, Access::kWrite}};
  program.add_node(std::move(node));
  program.add_return(std::move(out), y);
  return program;
}

// %a, %b inputs (external s0, s1); %c = <op>(%a, %b, extra...) in created, live-out s2.
inline Program binary_program(const std::string& op, const TensorType& a_type,
                              const TensorType& b_type, const TensorType& out,
                              std::vector<Argument> extra = {}) {
  Program program;
  const StorageId sa = program.add_storage(a_type.extent_bytes(), true);
  const StorageId sb = program.add_storage(b_type.extent_bytes(), true);
  const StorageId sc = program.add_storage(out.extent_bytes(), false, /*live_out=*/true);
  const ValueId a = program.add_input(a_type, sa);
  const ValueId b = program.add_input(b_type, sb);
  Node node;
  node.op = op;
  node.args = {Argument::tensor(a), Argument::tensor(b)};
  for (Argument& arg : extra) node.args.push_back(std::move(arg));
  node.accesses = {{sa, Access::kRead}, {sb, Access::kRead}, {sc, Access::kWrite}};
  program.add_node(std::move(node));
  program.add_return(out, sc);
  return program;
}

// s0 = x, s1 = w (f32[rows, cols], external); %2 = mul(x, w) in scratch s2; %3 = relu(%2) in
// scratch s3; %4 = sum.dim_IntList(%3, [1], False, None) in live-out s4 (f32[rows]).
inline Program mul_relu_sum_program(int64_t rows, int64_t cols) {
  Program program;
  const TensorType matrix = row_major(DType::kFloat32, {rows, cols});
  const TensorType vector = row_major(DType::kFloat32, {rows});
  const StorageId x = program.add_storage(matrix.extent_bytes(), true);
  const StorageId w = program.add_storage(matrix.extent_bytes(), true);
  const StorageId product = program.add_storage(matrix.extent_bytes(), false);
  const StorageId rectified = program.add_storage(matrix.extent_bytes(), false);
  const StorageId total = program.add_storage(vector.extent_bytes(), false, /*live_out=*/true);
  const ValueId a = program.add_input(matrix, x);
  const ValueId b = program.add_input(matrix, w);
  program.add_node(make_node("aten::mul.Tensor",
                    {Argument::tensor(a), Argument::tensor(b)},
                    {{x, Access::kRead}, {w, Access::kRead}, {product, Access::kWrite}}));
  const ValueId p = program.add_return(matrix, product);
  program.add_node(make_node("aten::relu",
                    {Argument::tensor(p)},
                    {{product, Access::kRead}, {rectified, Access::kWrite}}));
  const ValueId r = program.add_return(matrix, rectified);
  program.add_node(make_node("aten::sum.dim_IntList",
                    {Argument::tensor(r), Argument::int_list({1}), Argument::boolean(false),
                             Argument::none()},
                    {{rectified, Access::kRead}, {total, Access::kWrite}}));
  program.add_return(vector, total);
  return program;
}

// s0 = self (external, live out), s1 = other (external): %2 = add_.Tensor(%0, %1, alpha),
// written over s0.
inline Program inplace_add_program(std::vector<int64_t> sizes, double alpha) {
  Program program;
  const TensorType type = row_major(DType::kFloat32, std::move(sizes));
  const StorageId self = program.add_storage(type.extent_bytes(), true, /*live_out=*/true);
  const StorageId other = program.add_storage(type.extent_bytes(), true);
  const ValueId a = program.add_input(type, self);
  const ValueId b = program.add_input(type, other);
  program.add_node(make_node("aten::add_.Tensor",
                    {Argument::tensor(a), Argument::tensor(b), double_scalar(alpha)},
                    {{self, Access::kReadWrite}, {other, Access::kRead}}));
  program.add_return(type, self);
  return program;
}

// s0 = base (external, live out, f32[rows, cols]); %view = a view of s0 at layout `view`;
// s1, s2 = a, b (external, view's sizes, contiguous): %4 = <op>.out(%a, %b, [alpha,] out=%view)
// written over s0 at the view's layout; the rest of s0 keeps its bytes.
inline Program out_into_view_program(const std::string& op, int64_t rows, int64_t cols,
                                     const TensorType& view, bool with_alpha) {
  Program program;
  const TensorType base = row_major(DType::kFloat32, {rows, cols});
  const TensorType operand = row_major(DType::kFloat32, view.sizes);
  const StorageId s_base = program.add_storage(base.extent_bytes(), true, /*live_out=*/true);
  const StorageId s_a = program.add_storage(operand.extent_bytes(), true);
  const StorageId s_b = program.add_storage(operand.extent_bytes(), true);
  const ValueId out = program.add_input(view, s_base);
  const ValueId a = program.add_input(operand, s_a);
  const ValueId b = program.add_input(operand, s_b);
  Node node = make_node(op, {Argument::tensor(a), Argument::tensor(b)});
  if (with_alpha) node.args.push_back(double_scalar(1.0));
  node.args.push_back(Argument::tensor(out));
  node.accesses = {{s_base, Access::kWrite}, {s_a, Access::kRead}, {s_b, Access::kRead}};
  program.add_node(std::move(node));
  program.add_return(view, s_base);
  return program;
}

// s0 = x (external, f32[rows, cols]); %1 = aten::t(%0) (a view: sizes swapped, strides swapped,
// no write); %2 = neg(%1) in live-out s1, f32[cols, rows] contiguous.
inline Program transposed_neg_program(int64_t rows, int64_t cols) {
  Program program;
  const TensorType base = row_major(DType::kFloat32, {rows, cols});
  const TensorType transposed = strided(DType::kFloat32, {cols, rows}, {1, cols});
  const TensorType out = row_major(DType::kFloat32, {cols, rows});
  const StorageId x = program.add_storage(base.extent_bytes(), true);
  const StorageId y = program.add_storage(out.extent_bytes(), false, /*live_out=*/true);
  const ValueId a = program.add_input(base, x);
  program.add_node(make_node("aten::t", {Argument::tensor(a)}, {{x, Access::kRead}}));
  const ValueId t = program.add_return(transposed, x);
  program.add_node(make_node("aten::neg",
                    {Argument::tensor(t)},
                    {{x, Access::kRead}, {y, Access::kWrite}}));
  program.add_return(out, y);
  return program;
}

}  // namespace torch_tpu::ir::testing
