#include "ir/printer.h"
#include "ir/program.h"

#include <gtest/gtest.h>

#include "ir_test_programs.h"

namespace torch_tpu::ir {
namespace {

TEST(IrProgram, PrintsStoragesInputsAndNodes) {
  Program program = testing::add_program(2.5);
  program.nodes[0].issued_at = "train.py:3 in step";
  EXPECT_EQ(to_text(program),
            "s0: 128 bytes, external\n"
            "s1: 128 bytes, external\n"
            "s2: 128 bytes, created, live out\n"
            "%0 = input : f32[8, 4]{4, 1} s0\n"
            "%1 = input : f32[8, 4]{4, 1} s1\n"
            "%2 = aten::add.Tensor(%0, %1, 2.5) : f32[8, 4]{4, 1} s2"
            "  # reads s0 s1, writes s2; issued at train.py:3 in step\n");
}

TEST(IrProgram, PrintsEveryArgumentKind) {
  EXPECT_EQ(to_text(Argument::none()), "None");
  EXPECT_EQ(to_text(Argument::tensor_list({3, kNoValue})), "[%3, None]");
  EXPECT_EQ(to_text(Argument::boolean(true)), "True");
  EXPECT_EQ(to_text(Argument::int_list({1, -1})), "[1, -1]");
  EXPECT_EQ(to_text(Argument::double_list({0.5})), "[0.5]");
  EXPECT_EQ(to_text(Argument::string("tanh")), "\"tanh\"");
  EXPECT_EQ(to_text(Argument::dtype(DType::kBFloat16)), "bf16");
  EXPECT_EQ(to_text(Argument::enum_value(Argument::Kind::kDevice, 1)), "tpu:1");
  EXPECT_EQ(to_text(Argument::complex_value(1, 2)), "(1+2j)");
  EXPECT_EQ(to_text(Argument::scalar_value({ScalarValue::Kind::kInt, 7, 0, 0})), "7");
  Argument scalars;
  scalars.kind = Argument::Kind::kScalarList;
  scalars.scalars = {{ScalarValue::Kind::kDouble, 0, 0.5, 0}, {ScalarValue::Kind::kBool, 1, 0, 0}};
  EXPECT_EQ(to_text(scalars), "[0.5, True]");
  EXPECT_THROW(Argument::enum_value(Argument::Kind::kInt, 1), std::invalid_argument);
}

TEST(IrProgram, ViewsSayTheirOffset) {
  TensorType type = testing::row_major(DType::kInt64, {2, 3});
  type.strides = {1, 2};
  type.storage_offset = 5;
  EXPECT_EQ(to_text(type), "i64[2, 3]{1, 2}+5");
  EXPECT_EQ(type.extent_bytes(), (5 + 1 + 4 + 1) * 8);
  type.sizes = {0, 3};
  EXPECT_EQ(type.numel(), 0);
  EXPECT_EQ(type.extent_bytes(), 0);
}

TEST(IrProgram, DynamicScalarsComeInNodeAndArgumentOrder) {
  Program program = testing::add_program(3.0);
  Node second = program.nodes[0];
  second.args[2] = Argument::scalar_value({ScalarValue::Kind::kInt, 4, 0, 0});
  second.args[0] = Argument::tensor(2);
  second.accesses = {{2, Access::kReadWrite}, {1, Access::kRead}};
  program.add_node(second);
  program.add_return(program.values[2].type, 2);
  const std::vector<ScalarValue> scalars = dynamic_scalars(program);
  ASSERT_EQ(scalars.size(), 2u);
  EXPECT_EQ(scalars[0].real, 3.0);
  EXPECT_EQ(scalars[1].kind, ScalarValue::Kind::kInt);
  EXPECT_EQ(scalars[1].integer, 4);
}

TEST(IrProgram, DTypesHaveNamesAndSizes) {
  EXPECT_EQ(dtype_name(DType::kFloat32), "f32");
  EXPECT_EQ(element_size(DType::kBFloat16), 2);
  EXPECT_EQ(element_size(DType::kComplex128), 16);
  EXPECT_EQ(dtype_name(static_cast<DType>(18)), "dtype<18>");
  EXPECT_EQ(element_size(static_cast<DType>(18)), 0);
}

}  // namespace
}  // namespace torch_tpu::ir
