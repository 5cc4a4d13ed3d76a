#include "ir/structural_hash.h"

#include <gtest/gtest.h>

#include "ir_test_programs.h"

namespace torch_tpu::ir {
namespace {

TEST(IrStructuralKey, ScalarValuesAndIssueSitesAreNotStructure) {
  Program a = testing::add_program(1.0);
  Program b = testing::add_program(0.001);
  b.nodes[0].issued_at = "train.py:7 in step";
  EXPECT_EQ(structural_key(a), structural_key(b));
}

TEST(IrStructuralKey, ShapesDtypesOpsScalarKindsAndRolesAre) {
  const StructuralKey base = structural_key(testing::add_program());
  EXPECT_NE(base, structural_key(testing::add_program(1.0, {4, 8})));
  EXPECT_NE(base, structural_key(testing::add_program(1.0, {8, 4}, DType::kBFloat16)));
  Program sub = testing::add_program();
  sub.nodes[0].op = "aten::sub.Tensor";
  EXPECT_NE(base, structural_key(sub));
  Program int_alpha = testing::add_program();
  int_alpha.nodes[0].args[2] = Argument::scalar_value({ScalarValue::Kind::kInt, 1, 0, 0});
  EXPECT_NE(base, structural_key(int_alpha));
  Program dead = testing::add_program();
  dead.storages[2].live_out = false;
  EXPECT_NE(base, structural_key(dead));
  Program transposed = testing::add_program();
  transposed.values[0].type.strides = {1, 8};
  EXPECT_NE(base, structural_key(transposed));
}

TEST(IrStructuralKey, ConstantArgumentsAreStructure) {
  Program a = testing::add_program();
  a.nodes[0].args.push_back(Argument::int_list({0, 1}));
  Program b = testing::add_program();
  b.nodes[0].args.push_back(Argument::int_list({1, 0}));
  EXPECT_NE(structural_key(a), structural_key(b));
  Program c = testing::add_program();
  c.nodes[0].args.push_back(Argument::string("tanh"));
  Program d = testing::add_program();
  d.nodes[0].args.push_back(Argument::string("none"));
  EXPECT_NE(structural_key(c), structural_key(d));
}

// The hash is FNV-1a over the serialized words: the same in every process and build, so it can
// name executables cached on disk. A change to this number is a change to the key's format.
TEST(IrStructuralKey, HashIsStableAcrossBuilds) {
  const StructuralKey key = structural_key(testing::add_program());
  EXPECT_EQ(key.hash, structural_key(testing::add_program(5.0)).hash);
  EXPECT_EQ(key.hash, 0x7dea959bf267af6aull) << std::hex << key.hash;
}

}  // namespace
}  // namespace torch_tpu::ir
