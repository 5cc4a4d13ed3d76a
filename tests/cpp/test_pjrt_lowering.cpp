// The StableHLO text the lowering emits (no plugin needed): what a reader of the PJRT executor
// should expect to see, and the refusals of what it cannot express yet.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "executors/pjrt/lowering/lower_program.h"
#include "executors/pjrt/lowering/op_lowering.h"
#include "pjrt_test_programs.h"

using namespace torch_tpu::ir;
using namespace torch_tpu::ir::testing;
using namespace torch_tpu::executors::pjrt::lowering;

namespace {

// neg of f32[2] in s0 into a fresh s1: each storage is an f32 array (its values' dtype), so the
// module is the op alone.
constexpr char kNegModule[] = R"mlir("builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "stablehlo.negate"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> (tensor<2xf32>), sym_name = "main"} : () -> ()
}) : () -> ()
)mlir";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(PjrtLowering, NegOfAVectorIsThisModule) {
  const Program program = unary_program("aten::neg", row_major(DType::kFloat32, {2}),
                                        row_major(DType::kFloat32, {2}));
  const LoweredProgram lowered = lower_program(program);
  // Typed in, typed out: no conversion at the program's edges (on a TPU each would relayout).
  EXPECT_EQ(lowered.mlir, kNegModule) << lowered.mlir;
  EXPECT_EQ(lowered.storage_units, (std::vector<DType>{DType::kFloat32, DType::kFloat32}));
}

TEST(PjrtLowering, AddTakesOneParameterPerReadStorageAndItsAlpha) {
  const LoweredProgram lowered = lower_program(add_program(2.0));
  EXPECT_EQ(lowered.parameter_storages, (std::vector<StorageId>{0, 1}));
  EXPECT_EQ(lowered.result_storages, std::vector<StorageId>{2});
  EXPECT_EQ(lowered.scalar_kinds, std::vector<ScalarValue::Kind>{ScalarValue::Kind::kDouble});
  const std::string& text = lowered.mlir;
  EXPECT_TRUE(contains(text, "^bb0(%arg0: tensor<32xf32>, %arg1: tensor<32xf32>, %arg2: tensor<f64>)"))
      << text;
  EXPECT_FALSE(contains(text, "%arg3")) << text;
  EXPECT_TRUE(contains(text, "\"stablehlo.add\"")) << text;
  EXPECT_FALSE(contains(text, "\"stablehlo.bitcast_convert\"")) << text;
  EXPECT_TRUE(contains(text, "\"func.return\"")) << text;
  // The alpha's value is not in the text: one executable serves every value.
  EXPECT_FALSE(contains(text, "2.0")) << text;
}

TEST(PjrtLowering, MatrixProductsMultiplyFloat32InFullPrecision) {
  // PyTorch's default float32 matmul precision is "highest"; with XLA's default a TPU would
  // multiply f32 as one bf16 pass and a GPU as TF32.
  const Program program = binary_program("aten::mm", row_major(DType::kFloat32, {2, 3}),
                                         row_major(DType::kFloat32, {3, 4}),
                                         row_major(DType::kFloat32, {2, 4}));
  const std::string text = lower_program(program).mlir;
  EXPECT_TRUE(contains(text, "\"stablehlo.dot_general\"")) << text;
  EXPECT_TRUE(contains(text, "precision_config = [#stablehlo<precision HIGHEST>, "
                             "#stablehlo<precision HIGHEST>]")) << text;
}

TEST(PjrtLowering, AStorageViewedAsTwoDtypesStaysBytes) {
  // s0 holds i32[4]; %1 = view of s0 as f32[4] (a value of another dtype over it), neg'd into s1.
  Program program;
  const StorageId s0 = program.add_storage(16, true);
  const StorageId s1 = program.add_storage(16, false, /*live_out=*/true);
  program.add_input(row_major(DType::kInt32, {4}), s0);
  const ValueId as_float = program.add_input(row_major(DType::kFloat32, {4}), s0);
  program.add_node(make_node("aten::neg", {Argument::tensor(as_float)},
                             {{s0, Access::kRead}, {s1, Access::kWrite}}));
  program.add_return(row_major(DType::kFloat32, {4}), s1);
  const LoweredProgram lowered = lower_program(program);
  EXPECT_EQ(lowered.storage_units, (std::vector<DType>{DType::kUInt8, DType::kFloat32}));
  EXPECT_TRUE(contains(lowered.mlir, "^bb0(%arg0: tensor<16xui8>)")) << lowered.mlir;
  EXPECT_TRUE(contains(lowered.mlir, "\"stablehlo.bitcast_convert\"")) << lowered.mlir;
}

TEST(PjrtLowering, ViewsEmitNothingAndATransposedReadIsATranspose) {
  // A gather would cost each element's index on a TPU; nested strides read as a box.
  const LoweredProgram lowered = lower_program(transposed_neg_program(2, 3));
  EXPECT_FALSE(contains(lowered.mlir, "aten::t"));
  EXPECT_FALSE(contains(lowered.mlir, "\"stablehlo.gather\"")) << lowered.mlir;
  EXPECT_TRUE(contains(lowered.mlir, "\"stablehlo.transpose\"")) << lowered.mlir;
}

TEST(PjrtLowering, OverlappingStridesStillGather) {
  // f32[3, 3] over 5 elements with strides (1, 1): rows overlap, no box holds them.
  Program program;
  const TensorType overlapping = strided(DType::kFloat32, {3, 3}, {1, 1});
  const TensorType out = row_major(DType::kFloat32, {3, 3});
  const StorageId x = program.add_storage(5 * 4, true);
  const StorageId y = program.add_storage(out.extent_bytes(), false, /*live_out=*/true);
  const ValueId a = program.add_input(overlapping, x);
  program.add_node(make_node("aten::neg", {Argument::tensor(a)}, {{x, Access::kRead}, {y, Access::kWrite}}));
  program.add_return(out, y);
  EXPECT_TRUE(contains(lower_program(program).mlir, "\"stablehlo.gather\""));
}

TEST(PjrtLowering, RefusesWhatItCannotExpressYet) {
  auto message = [](const Program& program) {
    try {
      lower_program(program);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("(lowered)");
  };
  EXPECT_EQ(message(unary_program("aten::frobnicate", row_major(DType::kFloat32, {4}),
                                  row_major(DType::kFloat32, {4}))),
            "not supported yet: no StableHLO lowering for aten::frobnicate");
  EXPECT_EQ(message(unary_program("aten::neg", row_major(DType::kComplex64, {4}),
                                  row_major(DType::kComplex64, {4}))).rfind("not supported yet: ", 0),
            0u);
  // A write through an expanded (stride-0) layout has no single answer.
  EXPECT_EQ(message(out_into_view_program("aten::mul.out", 3, 4,
                                          strided(DType::kFloat32, {4}, {0}), false))
                .rfind("not supported yet: a write into the overlapping layout", 0),
            0u);
}

TEST(PjrtLowering, TableListsTheFirstOps) {
  const std::vector<std::string> ops = lowered_ops();
  for (const char* op : {"aten::add.Tensor", "aten::mul.Tensor", "aten::sub.Tensor", "aten::div.Tensor",
                         "aten::neg", "aten::relu", "aten::exp", "aten::mm", "aten::sum.dim_IntList",
                         "aten::add.out", "aten::add_.Tensor"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
}

TEST(PjrtLowering, EmptyStoragesAreNeitherParametersNorResults) {
  // An empty tensor's storage has no buffer (a null data pointer): nothing to pass or return.
  const Program program = unary_program("aten::neg", row_major(DType::kFloat32, {0}),
                                        row_major(DType::kFloat32, {0}));
  const LoweredProgram lowered = lower_program(program);
  EXPECT_TRUE(lowered.parameter_storages.empty());
  EXPECT_TRUE(lowered.result_storages.empty());
}
