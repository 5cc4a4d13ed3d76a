#include "ir/verifier.h"

#include "ir/printer.h"

#include <gtest/gtest.h>

#include "ir_test_programs.h"

namespace torch_tpu::ir {
namespace {

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  for (const std::string& problem : problems) {
    if (problem.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(IrVerifier, AcceptsAWellFormedProgram) {
  EXPECT_TRUE(verify(testing::add_program()).empty());
}

TEST(IrVerifier, AcceptsAnInPlaceOpAndAView) {
  Program program = testing::add_program();
  // %3 = aten::add_.Tensor(%2, %1): writes s2 in place, returns its new contents.
  Node in_place;
  in_place.op = "aten::add_.Tensor";
  in_place.args = {Argument::tensor(2), Argument::tensor(1),
                   Argument::scalar_value({ScalarValue::Kind::kInt, 1, 0, 0})};
  in_place.accesses = {{2, Access::kReadWrite}, {1, Access::kRead}};
  program.add_node(in_place);
  program.add_return(program.values[2].type, 2);
  // %4 = aten::slice.Tensor(%3, 0, 2, 4, 1): a view, no access of its own.
  Node view;
  view.op = "aten::slice.Tensor";
  view.args = {Argument::tensor(3), Argument::int_value(0), Argument::int_value(2),
               Argument::int_value(4), Argument::int_value(1)};
  program.add_node(view);
  TensorType rows = testing::row_major(DType::kFloat32, {2, 4});
  rows.storage_offset = 8;
  program.add_return(rows, 2);
  EXPECT_TRUE(verify(program).empty());
}

TEST(IrVerifier, NamesAUseBeforeDefinition) {
  Program program = testing::add_program();
  program.nodes[0].args[1] = Argument::tensor(2);  // its own return
  const auto problems = verify(program);
  EXPECT_TRUE(mentions(problems, "node 0 (aten::add.Tensor): argument %2 is used before it is defined"));
}

TEST(IrVerifier, NamesAMissingValueAndStorage) {
  Program program = testing::add_program();
  program.nodes[0].args[0] = Argument::tensor(42);
  program.nodes[0].accesses.push_back({9, Access::kRead});
  const auto problems = verify(program);
  EXPECT_TRUE(mentions(problems, "argument %42 does not exist"));
  EXPECT_TRUE(mentions(problems, "accesses s9, which does not exist"));
}

TEST(IrVerifier, NamesAnUndeclaredWriteOfAFreshReturn) {
  Program program = testing::add_program();
  program.nodes[0].accesses.pop_back();
  EXPECT_TRUE(mentions(verify(program), "returns %2 in s2 without declaring a write to it"));
}

TEST(IrVerifier, NamesALayoutPastItsStorage) {
  Program program = testing::add_program();
  program.storages[1].bytes = 64;
  EXPECT_TRUE(mentions(verify(program), "value %1: f32[8, 4]{4, 1} reaches byte 128 of s1, which has 64"));
}

TEST(IrVerifier, AcceptsALayoutOfNoElementsAnywhere) {
  // PyTorch makes such views (the backward of combinations over one element: f32[0]+1 of an
  // empty storage); they reach no byte.
  Program program = testing::add_program(1.0, {0});
  program.values[1].type.storage_offset = 1;
  EXPECT_TRUE(verify(program).empty());
}

TEST(IrVerifier, NamesAReadOfACreatedStorageBeforeItIsWritten) {
  Program program = testing::add_program();
  program.nodes[0].accesses[2].access = Access::kReadWrite;
  EXPECT_TRUE(mentions(verify(program), "reads created storage s2 before anything writes it"));
}

TEST(IrVerifier, NamesAWrittenOrCreatedHostStorageAndRankMismatch) {
  Program program = testing::add_program();
  program.storages[0].on_host = true;
  program.storages[0].external = false;
  program.storages[2].on_host = true;
  program.values[1].type.strides.pop_back();
  const auto problems = verify(program);
  EXPECT_TRUE(mentions(problems, "value %0: host storage s0 is not external"));
  EXPECT_TRUE(mentions(problems, "node 0 (aten::add.Tensor): writes host storage s2"));
  EXPECT_TRUE(mentions(problems, "value %1: 2 sizes but 1 strides"));
}

TEST(IrVerifier, AcceptsAViewOfACreatedStorageReadAfterItIsWritten) {
  Program program = testing::add_program();
  TensorType row = testing::row_major(DType::kFloat32, {4});
  row.storage_offset = 4;
  const ValueId view = program.add_input(row, 2);  // y[1], made without an op
  Node neg;
  neg.op = "aten::neg";
  neg.args = {Argument::tensor(view)};
  const StorageId out = program.add_storage(16, /*external=*/false, /*live_out=*/true);
  neg.accesses = {{2, Access::kRead}, {out, Access::kWrite}};
  program.add_node(neg);
  program.add_return(testing::row_major(DType::kFloat32, {4}), out);
  EXPECT_TRUE(verify(program).empty());
  EXPECT_NE(to_text(program).find("%3 = view : f32[4]{1}+4 s2\n"), std::string::npos) << to_text(program);
}

TEST(IrVerifier, NamesAValueDefinedButNotReturnedAndADuplicateAccess) {
  Program program = testing::add_program();
  program.add_return(program.values[2].type, 2, /*append_to_returns=*/false);
  program.nodes[0].accesses.push_back({0, Access::kRead});
  const auto problems = verify(program);
  EXPECT_TRUE(mentions(problems, "defines %3 but does not return it"));
  EXPECT_TRUE(mentions(problems, "lists s0 twice"));
}

TEST(IrVerifier, ThrowsListingEveryProblem) {
  Program program = testing::add_program();
  program.nodes[0].op.clear();
  program.nodes[0].accesses.pop_back();
  try {
    verify_or_throw(program);
    FAIL() << "no exception";
  } catch (const InvalidProgram& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("invalid tpu program (2 problems):"), std::string::npos) << message;
    EXPECT_NE(message.find("no op name"), std::string::npos);
  }
}

}  // namespace
}  // namespace torch_tpu::ir
