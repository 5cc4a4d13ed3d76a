#include "runtime/stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace torch_tpu::runtime {
namespace {

// Holds a stream's worker inside a task until opened, to observe not-yet-run states.
class Gate {
 public:
  void wait() const {
    while (!open_.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  void open() { open_.store(true); }

 private:
  std::atomic<bool> open_{false};
};

TEST(Stream, RunsTasksInEnqueueOrder) {
  Stream stream(0, 0, 0);
  std::vector<int> order;
  for (int i = 0; i < 1000; ++i) {
    stream.enqueue("test::append", [&order, i] { order.push_back(i); });
  }
  stream.synchronize();
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(order[i], i);
}

TEST(Stream, SynchronizeOnUnusedStreamReturns) {
  Stream stream(1, 7, -1);
  EXPECT_TRUE(stream.query());
  stream.synchronize();
  EXPECT_EQ(stream.chip_index(), 1);
  EXPECT_EQ(stream.id(), 7);
  EXPECT_EQ(stream.priority(), -1);
}

TEST(Stream, QueryReflectsPendingWork) {
  Stream stream(0, 0, 0);
  Gate gate;
  stream.enqueue("test::gate", [&gate] { gate.wait(); });
  EXPECT_FALSE(stream.query());
  gate.open();
  stream.synchronize();
  EXPECT_TRUE(stream.query());
}

TEST(Stream, KeepsFirstErrorUntilSynchronizeAndRunsLaterTasks) {
  Stream stream(0, 0, 0);
  std::atomic<bool> later_ran{false};
  stream.enqueue("aten::add", [] { throw std::runtime_error("boom"); });
  stream.enqueue("aten::mul", [] { throw std::runtime_error("second failure"); });
  stream.enqueue("test::flag", [&later_ran] { later_ran = true; });
  try {
    stream.synchronize();
    FAIL() << "expected AsyncOpError";
  } catch (const AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "aten::add");
    EXPECT_STREQ(error.what(), "error in asynchronously executed op 'aten::add': boom");
  }
  EXPECT_TRUE(later_ran.load());
  EXPECT_NO_THROW(stream.synchronize());  // raised once, then cleared
}

TEST(Stream, AFailureNamesWhereItsTaskWasIssued) {
  Stream stream(0, 0, 0);
  stream.enqueue("aten::div", [] { throw std::runtime_error("boom"); }, "model.py:7 in forward");
  try {
    stream.synchronize();
    FAIL() << "expected AsyncOpError";
  } catch (const AsyncOpError& error) {
    EXPECT_EQ(error.issued_at(), "model.py:7 in forward");
    EXPECT_STREQ(error.what(),
                 "error in asynchronously executed op 'aten::div' (issued at model.py:7 in "
                 "forward): boom");
  }
}

TEST(Stream, WorkQueuedFirstBySynchronizeRuns) {
  Stream stream(0, 0, 0);
  std::vector<int> seen;
  stream.synchronize([&] {
    stream.enqueue("test::a", [&] { seen.push_back(1); });
    stream.enqueue("test::b", [&] { seen.push_back(2); });
  });
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  // A failure while queueing leaves the stream usable: the worker runs later work.
  EXPECT_THROW(stream.synchronize([] { throw std::runtime_error("planning failed"); }),
               std::runtime_error);
  std::atomic<bool> ran{false};
  stream.enqueue("test::after", [&] { ran = true; });
  while (!ran.load()) std::this_thread::yield();
}

TEST(Stream, AnOutOfMemoryFailureKeepsItsKind) {
  Stream stream(0, 0, 0);
  stream.enqueue("test::materialize", [] { throw OutOfMemoryError(0, 1024, 0, 512); });
  try {
    stream.synchronize();
    FAIL() << "expected the task's error";
  } catch (const AsyncOpError& error) {
    EXPECT_TRUE(error.out_of_memory());
    EXPECT_EQ(error.op_name(), "test::materialize");
  }
}

TEST(Stream, NonStandardExceptionsAreKeptToo) {
  Stream stream(0, 0, 0);
  stream.enqueue("test::throw_int", [] { throw 42; });
  try {
    stream.synchronize();
    FAIL() << "expected AsyncOpError";
  } catch (const AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "test::throw_int");
    EXPECT_NE(std::string(error.what()).find("unknown exception"), std::string::npos);
  }
}

TEST(Stream, RaisePendingErrorDoesNotWait) {
  Stream stream(0, 0, 0);
  Gate gate;
  stream.enqueue("test::fail", [] { throw std::runtime_error("bad"); });
  stream.enqueue("test::gate", [&gate] { gate.wait(); });
  while (!stream.query()) {
    // The error is kept once the first task ran, even though the gate still holds the stream.
    try {
      stream.raise_pending_error();
    } catch (const AsyncOpError& error) {
      EXPECT_EQ(error.op_name(), "test::fail");
      gate.open();
      stream.synchronize();
      return;
    }
    std::this_thread::yield();
  }
  FAIL() << "the stream finished before the gate was opened";
}

TEST(Stream, DestructorDrainsQueuedWork) {
  std::atomic<int> ran{0};
  {
    Stream stream(0, 0, 0);
    for (int i = 0; i < 20; ++i) {
      stream.enqueue("test::slow", [&ran] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ++ran;
      });
    }
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(Stream, TaskCapturesAreReleasedBeforeSynchronizeReturns) {
  Stream stream(0, 0, 0);
  auto resource = std::make_shared<int>(5);
  std::weak_ptr<int> watch = resource;
  stream.enqueue("test::hold", [held = std::move(resource)] { (void)*held; });
  stream.synchronize();
  EXPECT_TRUE(watch.expired());
}

TEST(Stream, TasksMayEnqueueOntoTheirOwnStream) {
  Stream stream(0, 0, 0);
  std::vector<int> order;
  stream.enqueue("test::outer", [&] {
    order.push_back(1);
    stream.enqueue("test::inner", [&order] { order.push_back(3); });
    order.push_back(2);
  });
  // The inner task is queued before the outer one completes, so the second sync covers it.
  stream.synchronize();
  stream.synchronize();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(Stream, WakesAfterTheWorkerFellAsleep) {
  Stream stream(0, 0, 0);
  std::atomic<int> ran{0};
  for (int round = 0; round < 5; ++round) {
    stream.enqueue("test::inc", [&ran] { ++ran; });
    stream.synchronize();
    EXPECT_EQ(ran.load(), round + 1);
    // Long past the spin budget, so the next enqueue must wake a sleeping worker.
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
}

TEST(Stream, ConcurrentProducersKeepTheirOwnOrder) {
  Stream stream(0, 0, 0);
  constexpr int kPerThread = 2000;
  std::vector<int> seen_a;
  std::vector<int> seen_b;
  auto producer = [&stream](std::vector<int>* seen) {
    for (int i = 0; i < kPerThread; ++i) {
      stream.enqueue("test::append", [seen, i] { seen->push_back(i); });
    }
  };
  std::thread a(producer, &seen_a);
  std::thread b(producer, &seen_b);
  a.join();
  b.join();
  stream.synchronize();
  ASSERT_EQ(seen_a.size(), static_cast<size_t>(kPerThread));
  ASSERT_EQ(seen_b.size(), static_cast<size_t>(kPerThread));
  for (int i = 0; i < kPerThread; ++i) {
    EXPECT_EQ(seen_a[i], i);
    EXPECT_EQ(seen_b[i], i);
  }
}

TEST(Stream, ManyShortSynchronizedRoundTrips) {
  // The enqueue-then-wait pattern of a host reading each result: must never lose a wakeup.
  Stream stream(0, 0, 0);
  int value = 0;
  for (int i = 0; i < 20000; ++i) {
    stream.enqueue("test::inc", [&value] { ++value; });
    stream.synchronize();
    ASSERT_EQ(value, i + 1);
  }
}

// Turns on deferral for one test, with a planner that records what it was given.
TEST(Stream, WorkAfterIssuedTasksRunsAtOnceWhenIdleElseAfterThem) {
  Stream stream(0, 0, 0);
  bool ran = false;
  stream.after_issued_work([&] { ran = true; });
  EXPECT_TRUE(ran);  // idle: nothing to wait for

  std::atomic<bool> release_gate{false};
  std::vector<int> seen;
  stream.enqueue("test::slow", [&] {
    while (!release_gate.load()) std::this_thread::yield();
    seen.push_back(1);
  });
  stream.after_issued_work([&] { seen.push_back(2); });
  EXPECT_TRUE(seen.empty());
  release_gate = true;
  stream.synchronize();
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
}

TEST(Stream, ATaskThatNamesItsOwnOpKeepsThatName) {
  Stream stream(0, 0, 0);
  stream.enqueue("test::node", [] { throw AsyncOpError("aten::mul", "bad input"); });
  try {
    stream.synchronize();
    FAIL() << "expected the node's error";
  } catch (const AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "aten::mul");
  }
}

}  // namespace
}  // namespace torch_tpu::runtime
