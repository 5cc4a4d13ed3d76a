// Small programs the IR and engine tests build: y = x + w * alpha, and its in-place form.
#pragma once

#include "ir/program.h"

namespace torch_tpu::ir::testing {

inline TensorType row_major(DType dtype, std::vector<int64_t> sizes) {
  TensorType type;
  type.dtype = dtype;
  type.sizes = sizes;
  type.strides.assign(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) type.strides[d - 1] = type.strides[d] * sizes[d];
  return type;
}

// %0, %1 inputs in s0, s1; %2 = aten::add.Tensor(%0, %1, alpha) in created, live-out s2.
inline Program add_program(double alpha = 1.0, std::vector<int64_t> sizes = {8, 4},
                           DType dtype = DType::kFloat32) {
  Program program;
  const TensorType type = row_major(dtype, sizes);
  const int64_t bytes = type.extent_bytes();
  const StorageId x = program.add_storage(bytes, /*external=*/true);
  const StorageId w = program.add_storage(bytes, /*external=*/true);
  const StorageId y = program.add_storage(bytes, /*external=*/false, /*live_out=*/true);
  const ValueId a = program.add_input(type, x);
  const ValueId b = program.add_input(type, w);
  Node node;
  node.op = "aten::add.Tensor";
  node.args = {Argument::tensor(a), Argument::tensor(b),
               Argument::scalar_value({ScalarValue::Kind::kDouble, 0, alpha, 0.0})};
  node.accesses = {{x, Access::kRead}, {w, Access::kRead}, {y, Access::kWrite}};
  program.add_node(std::move(node));
  program.add_return(type, y);
  return program;
}

}  // namespace torch_tpu::ir::testing
