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

// neg of f32[2] in s0 into a fresh s1: bytes in, bitcast to f32, negate, bitcast back, bytes out.
constexpr char kNegModule[] = R"mlir("builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<8xui8>):
    %0 = "stablehlo.reshape"(%arg0) : (tensor<8xui8>) -> tensor<2x4xui8>
    %1 = "stablehlo.bitcast_convert"(%0) : (tensor<2x4xui8>) -> tensor<2xf32>
    %2 = "stablehlo.negate"(%1) : (tensor<2xf32>) -> tensor<2xf32>
    %3 = "stablehlo.bitcast_convert"(%2) : (tensor<2xf32>) -> tensor<2x4xui8>
    %4 = "stablehlo.reshape"(%3) : (tensor<2x4xui8>) -> tensor<8xui8>
    "func.return"(%4) : (tensor<8xui8>) -> ()
  }) {function_type = (tensor<8xui8>) -> (tensor<8xui8>), sym_name = "main"} : () -> ()
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
  // Bytes in, bytes out: each storage is a ui8 array, reinterpreted inside the module.
  EXPECT_EQ(lowered.mlir, kNegModule) << lowered.mlir;
}

TEST(PjrtLowering, AddTakesOneParameterPerReadStorageAndItsAlpha) {
  const LoweredProgram lowered = lower_program(add_program(2.0));
  EXPECT_EQ(lowered.parameter_storages, (std::vector<StorageId>{0, 1}));
  EXPECT_EQ(lowered.result_storages, std::vector<StorageId>{2});
  EXPECT_EQ(lowered.scalar_kinds, std::vector<ScalarValue::Kind>{ScalarValue::Kind::kDouble});
  const std::string& text = lowered.mlir;
  EXPECT_TRUE(contains(text, "^bb0(%arg0: tensor<128xui8>, %arg1: tensor<128xui8>, %arg2: tensor<f64>)"))
      << text;
  EXPECT_FALSE(contains(text, "%arg3")) << text;
  EXPECT_TRUE(contains(text, "\"stablehlo.add\"")) << text;
  EXPECT_TRUE(contains(text, "\"stablehlo.bitcast_convert\"")) << text;
  EXPECT_TRUE(contains(text, "\"func.return\"")) << text;
  // The alpha's value is not in the text: one executable serves every value.
  EXPECT_FALSE(contains(text, "2.0")) << text;
}

TEST(PjrtLowering, ViewsEmitNothingAndStridedReadsGather) {
  const LoweredProgram lowered = lower_program(transposed_neg_program(2, 3));
  EXPECT_FALSE(contains(lowered.mlir, "aten::t"));
  EXPECT_TRUE(contains(lowered.mlir, "\"stablehlo.gather\"")) << lowered.mlir;
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
