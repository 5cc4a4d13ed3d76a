#include "executors/host/host_executor.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

#include "executors/host/host_work.h"
#include "ir_test_programs.h"
#include "runtime/chip.h"

namespace torch_tpu::executors::host {
namespace {

using ir::testing::add_program;

runtime::Stream& default_stream() { return runtime::Runtime::instance().chip(0).default_stream(); }

RunBindings bindings_of(runtime::Task task, const char* issued_at = nullptr) {
  RunBindings bindings;
  bindings.recorded.push_back(std::make_shared<const TaskWork>(std::move(task)));
  bindings.issued_at = issued_at;
  return bindings;
}

TEST(HostExecutor, AOneNodeProgramRunsItsOpsRecordedWork) {
  Executor& executor = host_executor();
  EXPECT_EQ(executor.name(), "host");
  const auto executable = executor.compile(add_program());
  std::atomic<int> runs{0};
  for (int i = 0; i < 3; ++i) executor.run(executable, bindings_of([&] { ++runs; }), default_stream());
  default_stream().synchronize();
  EXPECT_EQ(runs.load(), 3);
}

TEST(HostExecutor, AFailingRunNamesItsOpAndWhereItWasIssued) {
  Executor& executor = host_executor();
  executor.run(executor.compile(add_program()),
               bindings_of([] { throw std::runtime_error("bad input"); }, "model.py:3 in forward"),
               default_stream());
  try {
    default_stream().synchronize();
    FAIL() << "expected the op's error";
  } catch (const runtime::AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "aten::add.Tensor");
    EXPECT_EQ(error.issued_at(), "model.py:3 in forward");
  }
}

TEST(HostExecutor, RefusesWhatItCannotRun) {
  Executor& executor = host_executor();
  ir::Program two_nodes = add_program();
  two_nodes.nodes.push_back(two_nodes.nodes.front());
  try {
    executor.compile(two_nodes);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("not supported yet"), std::string::npos);
  }
  EXPECT_THROW(executor.run(executor.compile(add_program()), RunBindings{}, default_stream()),
               std::invalid_argument);
}

TEST(HostExecutor, BuffersTakeCopiesInStreamOrder) {
  Executor& executor = host_executor();
  runtime::Stream& stream = default_stream();
  const std::array<float, 4> source{1.0f, 2.0f, 3.0f, 4.0f};
  std::array<float, 4> back{};
  const runtime::DeviceAddress first = executor.allocate(0, sizeof(source), stream.id());
  const runtime::DeviceAddress second = executor.allocate(0, sizeof(source), stream.id());
  EXPECT_NE(first, second);
  executor.copy_to_device(source.data(), first, sizeof(source), stream);
  executor.copy_on_device(first, second, sizeof(source), stream);
  executor.copy_to_host(second, back.data(), sizeof(source), stream);
  stream.synchronize();
  EXPECT_EQ(back, source);
  executor.free(0, first);
  executor.free(0, second);
  EXPECT_THROW(executor.copy_to_host(12345, back.data(), 4, stream), std::invalid_argument);
}

}  // namespace
}  // namespace torch_tpu::executors::host
