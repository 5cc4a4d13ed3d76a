#include "engine/deferral.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/chip.h"

namespace torch_tpu::engine {
namespace {

// A runner that plans every flush as one task running the pending ops in order, and notes
// what it was handed.
class RecordingRunner final : public ProgramRunner {
 public:
  std::vector<PlannedTask> plan(runtime::Stream&, std::vector<PendingOp>&& pending,
                                const char* reason) override {
    reasons.emplace_back(reason);
    batch_sizes.push_back(pending.size());
    auto ops = std::make_shared<std::vector<PendingOp>>(std::move(pending));
    std::vector<PlannedTask> planned;
    planned.push_back({"test::program", [ops] {
                         for (PendingOp& op : *ops) {
                           op.task();
                           for (runtime::Task& then : op.then) then();
                         }
                       }});
    return planned;
  }
  std::vector<std::string> reasons;
  std::vector<size_t> batch_sizes;
};

// Streams of the process-wide runtime, as the engine sees them in the extension: they live as
// long as the process (each test runs in a process of its own under ctest).
class DeferralTest : public ::testing::Test {
 protected:
  void SetUp() override { set_program_runner(&runner); }
  void TearDown() override { set_program_runner(nullptr); }
  static runtime::Stream& stream(int64_t id) { return runtime::Runtime::instance().chip(0).stream(id); }
  RecordingRunner runner;
};

PendingOp op(const char* name, runtime::Task task) {
  return PendingOp{name, nullptr, std::move(task), nullptr, {}};
}

TEST_F(DeferralTest, OpsWaitUntilAFlushPlansThemAsOneProgram) {
  runtime::Stream& s = stream(0);
  std::vector<int> seen;
  defer(s, op("test::a", [&] { seen.push_back(1); }));
  defer(s, op("test::b", [&] { seen.push_back(2); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(seen.empty());  // deferred: nothing ran
  EXPECT_TRUE(has_pending(s));
  EXPECT_EQ(s.queued_count(), 0u);  // the runtime's queue saw nothing
  flush(s, "test_reason");
  EXPECT_FALSE(has_pending(s));
  s.synchronize();
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  EXPECT_EQ(runner.reasons, (std::vector<std::string>{"test_reason"}));
  EXPECT_EQ(runner.batch_sizes, (std::vector<size_t>{2}));
}

TEST_F(DeferralTest, SynchronizeFlushesAndTheSizeBoundFlushesOnItsOwn) {
  runtime::Stream& s = stream(0);
  int count = 0;
  for (size_t i = 0; i < kMaxPendingOps + 3; ++i) defer(s, op("test::inc", [&] { ++count; }));
  ASSERT_EQ(runner.reasons, (std::vector<std::string>{"size_bound"}));
  synchronize_stream(s, "synchronize");
  EXPECT_EQ(count, static_cast<int>(kMaxPendingOps + 3));
  EXPECT_EQ(runner.reasons.back(), "synchronize");
}

TEST_F(DeferralTest, PastTheSoftBoundAProgramBoundaryFlushes) {
  runtime::Stream& s = stream(0);
  int count = 0;
  for (size_t i = 0; i < kSoftPendingOps + 5; ++i) {
    defer(s, op("test::fusible", [&] { ++count; }));  // not a boundary: keeps recording
  }
  EXPECT_TRUE(runner.reasons.empty());
  defer(s, op("test::boundary", [&] { ++count; }), /*program_boundary=*/true);
  ASSERT_EQ(runner.reasons, (std::vector<std::string>{"size_bound"}));
  EXPECT_EQ(runner.batch_sizes.back(), kSoftPendingOps + 6);
  synchronize_stream(s, "synchronize");
  EXPECT_EQ(count, static_cast<int>(kSoftPendingOps + 6));
}

TEST_F(DeferralTest, UnboundedOpsStayPendingPastBothBoundsUntilAFlush) {
  runtime::Stream& s = stream(0);
  int count = 0;
  const size_t ops = 2 * kMaxPendingOps;
  for (size_t i = 0; i < ops; ++i) {
    defer(s, op("test::graph_op", [&] { ++count; }), /*program_boundary=*/true,
          /*size_bounded=*/false);
  }
  EXPECT_TRUE(runner.reasons.empty());
  flush(s, "compiled_graph");
  EXPECT_EQ(runner.batch_sizes, (std::vector<size_t>{ops}));
  s.synchronize();
  EXPECT_EQ(count, static_cast<int>(ops));
}

TEST_F(DeferralTest, WorkAfterIssuedOpsFollowsTheLastPendingOp) {
  runtime::Stream& s = stream(0);
  std::vector<int> seen;
  defer(s, op("test::a", [&] { seen.push_back(1); }));
  after_issued_work(s, [&] { seen.push_back(-1); });
  defer(s, op("test::b", [&] { seen.push_back(2); }));
  EXPECT_TRUE(seen.empty());  // pending: the release waits with them
  synchronize_stream(s, "synchronize");
  EXPECT_EQ(seen, (std::vector<int>{1, -1, 2}));
  after_issued_work(s, [&] { seen.push_back(-2); });  // idle, nothing pending: at once
  EXPECT_EQ(seen.back(), -2);
}

TEST_F(DeferralTest, AMarkWaitsBehindPendingOpsAndWaitingOnItFlushesItsStream) {
  runtime::Stream& producer = stream(1);
  runtime::Stream& consumer = stream(2);
  std::atomic<int> value{0};
  defer(producer, op("test::produce", [&] { value = 1; }));
  runtime::Event ready;
  record_mark(ready, producer);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(ready.query());  // behind the pending op, which has not run
  block_on_event(ready, consumer);  // flushes the producer, or the consumer would wait forever
  EXPECT_FALSE(has_pending(producer));
  int seen = -1;
  consumer.enqueue("test::consume", [&] { seen = value.load(); });
  synchronize_stream(consumer, "synchronize");
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(runner.reasons, (std::vector<std::string>{"cross_stream_wait"}));
}

TEST_F(DeferralTest, TheAllocatorsMarksWaitBehindPendingOpsOnceInstalled) {
  runtime::set_mark_recorder(&record_mark);
  runtime::Chip& chip = runtime::Runtime::instance().chip(0);
  runtime::Stream& side = stream(3);
  const runtime::DeviceAddress block = chip.allocator().allocate(4096, /*stream=*/0);
  chip.allocator().record_stream(block, side.id());
  std::atomic<bool> used{false};
  defer(side, op("test::use_block", [&] { used = true; }));
  chip.allocator().free(block);  // marks `side`: the block waits for the pending use
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const runtime::DeviceAddress other =
      chip.allocator().allocate(4096, /*stream=*/0, runtime::WhenFull::kThrowForRetry);
  EXPECT_NE(other, block);  // a mark recorded at once would have freed it for reuse
  synchronize_stream(side, "synchronize");
  EXPECT_TRUE(used.load());
  chip.allocator().free(other);
  runtime::set_mark_recorder(nullptr);
}

TEST(Deferral, WithoutARunnerPendingOpsRunAsTheyAre) {
  runtime::Stream& s = runtime::Runtime::instance().chip(0).stream(0);
  std::vector<int> seen;
  defer(s, PendingOp{"test::a", nullptr, [&] { seen.push_back(1); }, nullptr, {}});
  after_issued_work(s, [&] { seen.push_back(-1); });
  defer(s, PendingOp{"test::b", nullptr, [&] { seen.push_back(2); }, nullptr, {}});
  synchronize_stream(s, "synchronize");
  EXPECT_EQ(seen, (std::vector<int>{1, -1, 2}));
}

}  // namespace
}  // namespace torch_tpu::engine
