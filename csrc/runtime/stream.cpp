#include "runtime/stream.h"

#include <chrono>
#include <exception>
#include <string>
#include <utility>

namespace torch_tpu::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// A host often enqueues a tiny op and waits for it at once; spinning this long before sleeping
// saves the two futex round trips (~10-50 us each) that a condvar handoff would cost.
constexpr auto kWorkerSpin = std::chrono::microseconds(40);
constexpr auto kHostSpin = std::chrono::microseconds(40);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

// Spins until `ready()` or `budget` runs out; returns ready()'s last answer.
template <typename Ready>
bool spin_until(Ready ready, Clock::duration budget) {
  const auto deadline = Clock::now() + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    // Reading the clock costs more than a pause; check it only every few rounds.
    if ((i & 63) == 63) {
      if (Clock::now() >= deadline) return ready();
      // On an oversubscribed machine the thread we wait for may need this core.
      std::this_thread::yield();
    }
    cpu_relax();
  }
}

std::atomic<ExecutorThreadHook> g_executor_thread_hook{nullptr};
thread_local bool t_is_stream_worker = false;
thread_local bool t_executor_prepared = false;

}  // namespace

void set_executor_thread_hook(ExecutorThreadHook hook) { g_executor_thread_hook.store(hook); }

Stream::Stream(int chip_index, int64_t id, int priority)
    : chip_index_(chip_index), id_(id), priority_(priority) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_one();
  // The worker drains the queue before it sees stopping_, so queued work still runs.
  if (worker_.joinable()) worker_.join();
}

void Stream::enqueue(const char* op_name, Task task) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) start_worker_locked();
    queue_.push_back(Entry{op_name, std::move(task)});
    // Counted under the lock after the push, so a worker seeing the count also finds the entry.
    enqueued_.fetch_add(1, std::memory_order_release);
    wake = worker_sleeping_;
  }
  if (wake) work_ready_.notify_one();
}

void Stream::synchronize() {
  const uint64_t target = enqueued_.load(std::memory_order_acquire);
  const auto done = [&] { return completed_.load(std::memory_order_acquire) >= target; };
  // A running worker finishes tiny ops faster than a futex round trip: spin a little before
  // taking over. A sleeping worker would not start soon; take over at once (Debug mode waits
  // after every op, so this is its common case).
  if (done() || (!worker_sleeping_.load(std::memory_order_relaxed) && spin_until(done, kHostSpin))) {
    raise_pending_error();
    return;
  }
  // Take over the queue: the worker gives up the executor after the task it is running.
  host_wants_executor_.fetch_add(1);
  while (!done()) {
    std::lock_guard<std::mutex> executor(executor_);
    std::deque<Entry> batch = take_queued();
    for (Entry& entry : batch) run_entry(entry);
  }
  host_wants_executor_.fetch_sub(1);
  raise_pending_error();
}

void Stream::raise_pending_error() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!pending_error_) return;
  AsyncOpError error = std::move(*pending_error_);
  pending_error_.reset();
  lock.unlock();
  throw error;
}

bool Stream::query() const {
  return completed_.load(std::memory_order_acquire) >=
         enqueued_.load(std::memory_order_acquire);
}

void Stream::start_worker_locked() { worker_ = std::thread([this] { run_worker(); }); }

std::deque<Stream::Entry> Stream::take_queued() {
  std::deque<Entry> batch;
  std::lock_guard<std::mutex> lock(mutex_);
  batch.swap(queue_);
  return batch;
}

void Stream::run_worker() {
  t_is_stream_worker = true;
  for (;;) {
    // enqueued_ is read without the lock so the spin does not contend with enqueue().
    spin_until([&] { return enqueued_.load(std::memory_order_acquire) !=
                            completed_.load(std::memory_order_acquire); },
               kWorkerSpin);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      while (queue_.empty() || host_wants_executor_.load() > 0) {
        if (stopping_ && queue_.empty()) return;
        worker_sleeping_ = true;
        // A host running the queue wakes us when it leaves (or work arrives); the timeout
        // covers a host that left between our check and the wait.
        work_ready_.wait_for(lock, std::chrono::milliseconds(1));
        worker_sleeping_ = false;
      }
    }
    // One task per turn, so a host that starts waiting takes over after the current task.
    // (Taking several per turn made the host slower on tiny ops: the worker then releases
    // their storages in step with the host capturing new ones, and the refcount cache lines
    // bounce between the cores.)
    std::lock_guard<std::mutex> executor(executor_);
    std::optional<Entry> entry;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) continue;
      entry.emplace(std::move(queue_.front()));
      queue_.pop_front();
    }
    run_entry(*entry);
  }
}

void Stream::run_entry(Entry& entry) {
  if (!t_executor_prepared) {
    t_executor_prepared = true;
    if (const ExecutorThreadHook hook = g_executor_thread_hook.load()) hook(t_is_stream_worker);
  }
  // Runs without the lock: tasks may enqueue onto this stream or free memory.
  bool failed = false;
  std::string message;
  try {
    entry.task();
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  } catch (...) {
    failed = true;
    message = "unknown exception (not derived from std::exception)";
  }
  if (failed) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The first failure is the root cause; later ones are usually its consequences.
    if (!pending_error_) {
      pending_error_.emplace(entry.op_name != nullptr ? entry.op_name : "<unnamed>", message);
    }
  }
  // Destroy the task's captures (which may free chip memory) before the task counts as done,
  // so a host that synchronized sees that memory released.
  entry.task = nullptr;

  completed_.fetch_add(1);
}

}  // namespace torch_tpu::runtime
