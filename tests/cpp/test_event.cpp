#include "runtime/event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

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

TEST(Event, NeverRecordedEventIsComplete) {
  Event event;
  Stream stream(0, 0, 0);
  EXPECT_FALSE(event.was_recorded());
  EXPECT_TRUE(event.query());
  event.synchronize();
  event.block(stream);  // no-op: nothing is queued
  EXPECT_TRUE(stream.query());
}

TEST(Event, QueryAndSynchronizeFollowTheStream) {
  Stream stream(0, 0, 0);
  Gate gate;
  Event event;
  stream.enqueue("test::gate", [&gate] { gate.wait(); });
  event.record(stream);
  EXPECT_TRUE(event.was_recorded());
  EXPECT_FALSE(event.query());
  gate.open();
  event.synchronize();
  EXPECT_TRUE(event.query());
}

TEST(Event, BlockOrdersAcrossStreams) {
  Stream producer(0, 1, 0);
  Stream consumer(0, 2, 0);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> value{0};
    int seen = -1;
    producer.enqueue("test::produce", [&value] {
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      value = 1;
    });
    Event ready;
    ready.record(producer);
    ready.block(consumer);
    consumer.enqueue("test::consume", [&value, &seen] { seen = value.load(); });
    consumer.synchronize();
    EXPECT_EQ(seen, 1);
    producer.synchronize();
  }
}

TEST(Event, BlockWaitsForTheMarkItSawEvenIfReRecorded) {
  Stream gated(0, 1, 0);
  Stream waiter(0, 2, 0);
  Stream idle(0, 3, 0);
  Gate gate;
  std::atomic<bool> ran{false};
  Event event;
  gated.enqueue("test::gate", [&gate] { gate.wait(); });
  event.record(gated);
  event.block(waiter);
  waiter.enqueue("test::flag", [&ran] { ran = true; });

  event.record(idle);  // replaces the mark for later users only
  event.synchronize();
  EXPECT_TRUE(event.query());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(ran.load());
  EXPECT_FALSE(waiter.query());

  gate.open();
  waiter.synchronize();
  EXPECT_TRUE(ran.load());
}

TEST(Event, ElapsedTimeCoversTheWorkBetweenMarks) {
  Stream stream(0, 0, 0);
  Event start(true);
  Event end(true);
  start.record(stream);
  stream.enqueue("test::sleep",
                 [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  end.record(stream);
  end.synchronize();
  const double ms = start.elapsed_ms(end);
  // sleep_for never returns early, so this lower bound is exact; no upper bound (noisy hosts).
  EXPECT_GE(ms, 20.0);
  EXPECT_LT(end.elapsed_ms(start), 0.0);
}

TEST(Event, ElapsedTimeRejectsUnusableEvents) {
  Stream stream(0, 0, 0);
  Event timed(true);
  Event untimed(false);
  Event never(true);
  timed.record(stream);
  untimed.record(stream);
  stream.synchronize();

  auto message_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const RuntimeError& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message_of([&] { timed.elapsed_ms(untimed); }).find("enable_timing"),
            std::string::npos);
  EXPECT_NE(message_of([&] { timed.elapsed_ms(never); }).find("recorded"), std::string::npos);

  Gate gate;
  Event pending(true);
  stream.enqueue("test::gate", [&gate] { gate.wait(); });
  pending.record(stream);
  EXPECT_NE(message_of([&] { timed.elapsed_ms(pending); }).find("completed"),
            std::string::npos);
  gate.open();
  stream.synchronize();
  EXPECT_GE(timed.elapsed_ms(pending), 0.0);
}

TEST(Event, FailureOnTheRecordingStreamReachesWaitingStreamsOnce) {
  Stream producer(0, 1, 0);
  Stream consumer(0, 2, 0);
  producer.enqueue("test::failing_collective", [] { throw std::runtime_error("peer vanished"); });
  Event done;
  done.record(producer);
  while (!done.query()) std::this_thread::yield();
  EXPECT_NE(done.error(), nullptr);  // inspecting does not report it
  done.block(consumer);
  bool consumer_ran_later_work = false;
  consumer.enqueue("test::after", [&] { consumer_ran_later_work = true; });
  // The consumer fails with the producer's error, still naming the op that failed.
  try {
    consumer.synchronize();
    FAIL() << "the consumer should have raised the producer's error";
  } catch (const AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "test::failing_collective");
    EXPECT_NE(std::string(error.what()).find("peer vanished"), std::string::npos);
  }
  EXPECT_TRUE(consumer_ran_later_work);  // the stream stays usable
  // Reported once: the producer, the event and later marks no longer raise it.
  done.synchronize();
  Event later;
  later.record(producer);
  later.block(consumer);
  consumer.synchronize();
  // A second failure on the producer, before anyone synced it, is reported too.
  producer.enqueue("test::second_failure", [] { throw std::runtime_error("again"); });
  Event second;
  second.record(producer);
  second.block(consumer);
  try {
    consumer.synchronize();
    FAIL() << "the second failure should reach the consumer";
  } catch (const AsyncOpError& error) {
    EXPECT_EQ(error.op_name(), "test::second_failure");
  }
  producer.synchronize();
}

TEST(Event, HostWaitOnAFailedMarkRaisesItOnce) {
  Stream producer(0, 1, 0);
  Stream consumer(0, 2, 0);
  producer.enqueue("test::failing", [] { throw std::runtime_error("boom"); });
  Event done;
  done.record(producer);
  EXPECT_THROW(done.synchronize(), AsyncOpError);
  done.block(consumer);  // already reported: nothing to hand on
  consumer.synchronize();
  producer.synchronize();
}

}  // namespace
}  // namespace torch_tpu::runtime
