#include "engine/executable_cache.h"

#include <gtest/gtest.h>

#include "engine/memory_mappings.h"
#include "executors/null_executor.h"
#include "ir/verifier.h"
#include "ir_test_programs.h"
#include "runtime/stream.h"

namespace torch_tpu::engine {
namespace {

using ir::testing::add_program;

TEST(ExecutableCache, CompilesEachStructureOnce) {
  executors::NullExecutor executor;
  ExecutableCache cache;
  const auto first = cache.get_or_compile(executor, add_program(1.0));
  const auto second = cache.get_or_compile(executor, add_program(0.5));  // other scalar value
  const auto third = cache.get_or_compile(executor, add_program(1.0, {2, 2}));
  EXPECT_FALSE(first.hit);
  EXPECT_TRUE(second.hit);
  EXPECT_EQ(first.executable, second.executable);
  EXPECT_FALSE(third.hit);
  EXPECT_EQ(executor.compiles(), 2);
  const ExecutableCacheStats stats = cache.stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 2);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(ExecutableCache, KeysByExecutorToo) {
  class OtherExecutor : public executors::NullExecutor {
   public:
    std::string name() const override { return "other"; }
  };
  executors::NullExecutor null;
  OtherExecutor other;
  ExecutableCache cache;
  cache.get_or_compile(null, add_program());
  EXPECT_FALSE(cache.get_or_compile(other, add_program()).hit);
  EXPECT_TRUE(cache.get_or_compile(other, add_program()).hit);
}

TEST(ExecutableCache, RefusesAnInvalidProgramAndCachesNothing) {
  executors::NullExecutor executor;
  ExecutableCache cache;
  ir::Program broken = add_program();
  broken.nodes[0].accesses.clear();
  EXPECT_THROW(cache.get_or_compile(executor, broken), ir::InvalidProgram);
  EXPECT_EQ(executor.compiles(), 0);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ExecutableCache, AFailedCompileIsNotCached) {
  class FailingExecutor : public executors::NullExecutor {
   public:
    std::shared_ptr<const executors::Executable> compile(const ir::Program&) override {
      throw std::runtime_error("cannot lower aten::add.Tensor");
    }
  };
  FailingExecutor executor;
  ExecutableCache cache;
  EXPECT_THROW(cache.get_or_compile(executor, add_program()), std::runtime_error);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.stats().misses, 0);
}

TEST(ExecutableCache, AFullCacheStartsOver) {
  executors::NullExecutor executor;
  ExecutableCache cache(/*capacity=*/2);
  cache.get_or_compile(executor, add_program(1.0, {1}));
  cache.get_or_compile(executor, add_program(1.0, {2}));
  cache.get_or_compile(executor, add_program(1.0, {3}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.stats().evictions, 2);
  EXPECT_FALSE(cache.get_or_compile(executor, add_program(1.0, {1})).hit);
}

TEST(ExecutableCache, NearTheResourceLimitDropsEverythingCachedBeforeCompiling) {
  executors::NullExecutor executor;
  bool near_limit = false;
  ExecutableCache cache(4096, [&] { return near_limit; });
  const auto first = cache.get_or_compile(executor, add_program(1.0, {1}));
  cache.get_or_compile(executor, add_program(1.0, {2}));
  near_limit = true;
  EXPECT_TRUE(cache.get_or_compile(executor, add_program(1.0, {1})).hit);  // hits ask nothing
  cache.get_or_compile(executor, add_program(1.0, {3}));
  near_limit = false;
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.stats().evictions, 2);
  EXPECT_EQ(cache.stats().evictions_for_mappings, 2);
  // A run still holding an executable keeps it alive; the cache compiles anew on the next miss.
  EXPECT_NE(first.executable, nullptr);
  EXPECT_FALSE(cache.get_or_compile(executor, add_program(1.0, {1})).hit);
}

TEST(MemoryMappings, ReadsThisProcesssMappingsAndTheKernelsLimit) {
  const MemoryMappings mappings = memory_mappings();
  EXPECT_GT(mappings.in_use, 10);  // the executable, libc, the stack, ...
  EXPECT_GT(mappings.limit, mappings.in_use);
}

TEST(ExecutableCache, RunsBindTheRunningProgramsScalars) {
  executors::NullExecutor executor;
  ExecutableCache cache;
  runtime::Stream stream(0, 0, 0);
  for (const double alpha : {1.0, 0.25}) {
    const ir::Program program = add_program(alpha);
    const auto found = cache.get_or_compile(executor, program);
    executor.run(found.executable, {{0x100, 0x200, 0x300}, ir::dynamic_scalars(program)}, stream);
  }
  stream.synchronize();
  const auto runs = executor.runs_bound();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].scalars.at(0).real, 1.0);
  EXPECT_EQ(runs[1].scalars.at(0).real, 0.25);
  EXPECT_EQ(runs[1].storages.at(2), 0x300u);
  EXPECT_EQ(executor.compiles(), 1);
}

}  // namespace
}  // namespace torch_tpu::engine
