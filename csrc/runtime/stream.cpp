#include "runtime/stream.h"

#include <pthread.h>

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
std::atomic<HostTakeoverHook> g_host_takeover_hook{nullptr};
std::atomic<HostBetweenTasksHook> g_host_between_tasks_hook{nullptr};
thread_local bool t_is_stream_worker = false;
thread_local bool t_executor_prepared = false;


}  // namespace

void set_executor_thread_hook(ExecutorThreadHook hook) { g_executor_thread_hook.store(hook); }
void set_host_takeover_hook(HostTakeoverHook hook) { g_host_takeover_hook.store(hook); }
void set_host_between_tasks_hook(HostBetweenTasksHook hook) {
  g_host_between_tasks_hook.store(hook);
}

Stream::Stream(int chip_index, int64_t id, int priority)
    : chip_index_(chip_index), id_(id), priority_(priority), head_(new Node), tail_(head_) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
  }
  work_ready_.notify_one();
  // The worker drains the queue before it sees stopping_, so queued work still runs.
  if (worker_.joinable()) worker_.join();
  delete_retired();
  delete head_;
}

void Stream::after_issued_work(Task action) {
  if (query()) {
    action();
  } else {
    enqueue(kReleaseTaskName, std::move(action), nullptr, /*free_finished=*/false);
  }
}

void Stream::enqueue(const char* op_name, Task task, const char* issued_at, bool free_finished) {
  if (!worker_started_.load(std::memory_order_acquire)) start_worker();
  auto* node = new Node;
  node->op_name = op_name;
  node->issued_at = issued_at;
  node->task = std::move(task);
  // Link at the tail: the exchange orders producers; until `previous->next` is set the
  // executor sees the queue end at `previous` and simply looks again.
  Node* previous = tail_.exchange(node, std::memory_order_acq_rel);
  previous->next.store(node, std::memory_order_release);
  // seq_cst pairs with wait_for_work(): either the worker sees this count, or this thread
  // sees the worker asleep and wakes it.
  enqueued_.fetch_add(1, std::memory_order_seq_cst);
  // A host taking over runs the task itself: waking the worker then only cost a futex round
  // trip and a core that the host's thread team needed. The host wakes the worker for what is
  // left when it stops (wake_worker_for_leftover_work).
  if (worker_sleeping_.load(std::memory_order_seq_cst) &&
      host_wants_executor_.load(std::memory_order_seq_cst) == 0) {
    wake_worker();
  }
  if (free_finished && retired_.load(std::memory_order_relaxed) != nullptr) delete_retired();
}

void Stream::start_worker() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (worker_started_.load(std::memory_order_relaxed)) return;
  worker_ = std::thread([this] { run_worker(); });
  worker_started_.store(true, std::memory_order_release);
}

void Stream::synchronize(const std::function<void()>& queue_first) {
  const bool claiming = queue_first != nullptr;
  if (claiming) {
    host_wants_executor_.fetch_add(1);
    try {
      queue_first();
    } catch (...) {
      host_wants_executor_.fetch_sub(1, std::memory_order_seq_cst);
      wake_worker_for_leftover_work();
      throw;
    }
  }
  const uint64_t target = enqueued_.load(std::memory_order_acquire);
  const auto done = [&] { return completed_.load(std::memory_order_acquire) >= target; };
  // A running worker finishes tiny ops faster than a futex round trip: spin a little before
  // taking over. A sleeping worker would not start soon; take over at once (Debug mode waits
  // after every op, so this is its common case).
  bool taking_over = claiming;
  if (!taking_over && !done() &&
      (worker_sleeping_.load(std::memory_order_relaxed) || !spin_until(done, kHostSpin))) {
    host_wants_executor_.fetch_add(1);
    taking_over = true;
  }
  if (taking_over) {
    // The worker gives up the executor after the task it is running.
    const auto started = std::chrono::steady_clock::now();
    while (!done()) {
      std::lock_guard<std::mutex> executor(executor_);
      const HostBetweenTasksHook between = g_host_between_tasks_hook.load(std::memory_order_relaxed);
      while (Node* node = pop()) {
        run(*node);
        if (between != nullptr) between();
      }
    }
    host_wants_executor_.fetch_sub(1, std::memory_order_seq_cst);
    wake_worker_for_leftover_work();
    if (const HostTakeoverHook hook = g_host_takeover_hook.load()) {
      hook(std::chrono::steady_clock::now() - started);
    }
  }
  release_finished_tasks();
  raise_pending_error();
}

void Stream::wake_worker_for_leftover_work() {
  // seq_cst pairs with queue(): a producer that saw this host still taking over (and did not
  // wake the worker) queued before the decrement above, so its task shows in `enqueued_` here.
  if (enqueued_.load(std::memory_order_seq_cst) != completed_.load(std::memory_order_seq_cst) &&
      worker_sleeping_.load(std::memory_order_seq_cst)) {
    wake_worker();
  }
}

void Stream::wake_worker() {
  // Under the lock: the worker checks for work and starts waiting while holding it, so the
  // notification cannot fall between the two.
  std::lock_guard<std::mutex> lock(mutex_);
  work_ready_.notify_one();
}

void Stream::raise_pending_error() {
  std::unique_lock<std::mutex> lock(mutex_);
  KeptErrorPtr record = std::move(pending_error_);
  pending_error_.reset();
  lock.unlock();
  // Already raised where another stream or host waited for it: reported once is enough.
  if (record && record->claim()) throw record->error;
}

KeptErrorPtr Stream::kept_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_error_ && !pending_error_->raised ? pending_error_ : nullptr;
}

bool Stream::query() const {
  return completed_.load(std::memory_order_acquire) >=
         enqueued_.load(std::memory_order_acquire);
}

Stream::Node* Stream::pop() {
  Node* next = head_->next.load(std::memory_order_acquire);
  if (next == nullptr) return nullptr;
  // The old head's task has run: retire it for the host to delete.
  Node* retired = head_;
  head_ = next;
  retired->next_retired = retired_.load(std::memory_order_relaxed);
  while (!retired_.compare_exchange_weak(retired->next_retired, retired,
                                         std::memory_order_release, std::memory_order_relaxed)) {
  }
  return next;
}

void Stream::release_finished_tasks() {
  {
    // The head's task has run (it stays queued as the head until the next pop): free its
    // captures now, so a host that synchronized sees everything the tasks held released.
    std::lock_guard<std::mutex> executor(executor_);
    head_->task = nullptr;
  }
  delete_retired();
}

void Stream::delete_retired() {
  Node* node = retired_.exchange(nullptr, std::memory_order_acquire);
  while (node != nullptr) {
    Node* next = node->next_retired;
    delete node;
    node = next;
  }
}

bool Stream::wait_for_work() {
  const auto idle = [&] {
    return enqueued_.load(std::memory_order_seq_cst) == completed_.load() ||
           host_wants_executor_.load() > 0;
  };
  std::unique_lock<std::mutex> lock(mutex_);
  worker_sleeping_.store(true, std::memory_order_seq_cst);
  while (idle() && !stopping_.load()) {
    if (host_wants_executor_.load() > 0) {
      // Each host that stops taking over wakes us if work is left
      // (wake_worker_for_leftover_work); the timeout is only a backstop.
      work_ready_.wait_for(lock, std::chrono::milliseconds(1));
    } else {
      // Producers wake a sleeping worker (queue()), and so does the destructor. No timeout:
      // an idle worker that woke every millisecond took the CPU from whatever ran on the other
      // core (on a 2-core machine, the other rank's collective).
      work_ready_.wait(lock);
    }
  }
  worker_sleeping_.store(false);
  return !(stopping_.load() && enqueued_.load() == completed_.load());
}

void Stream::run_worker() {
  t_is_stream_worker = true;
  // Named so profilers and debuggers tell the executor apart from the host and OpenMP threads.
  const std::string name = "tpu" + std::to_string(chip_index_) + "_stream" + std::to_string(id_);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  for (;;) {
    // Counters are read without any lock so the spin does not contend with producers.
    const bool has_work = spin_until(
        [&] {
          return enqueued_.load(std::memory_order_acquire) !=
                     completed_.load(std::memory_order_acquire) &&
                 host_wants_executor_.load(std::memory_order_relaxed) == 0;
        },
        kWorkerSpin);
    if (!has_work) {
      if (!wait_for_work()) return;
      continue;
    }
    // One task per turn, so a host that starts waiting takes over after the current task.
    std::lock_guard<std::mutex> executor(executor_);
    if (Node* node = pop()) run(*node);
  }
}

void Stream::run(Node& node) {
  if (!t_executor_prepared) {
    t_executor_prepared = true;
    if (const ExecutorThreadHook hook = g_executor_thread_hook.load()) hook(t_is_stream_worker);
  }
  // Runs without the lock: tasks may enqueue onto this stream or free memory.
  bool failed = false;
  std::string message;
  bool out_of_memory = false;
  KeptErrorPtr forwarded;
  try {
    node.task();
  } catch (const ForwardedError& e) {
    // Another stream's failure, handed on through an event: keep naming the op that failed.
    failed = true;
    forwarded = e.record();
  } catch (const AsyncOpError& e) {
    // Named by the task itself (a node of a program).
    failed = true;
    forwarded = std::make_shared<KeptError>(e);
  } catch (const OutOfMemoryError& e) {  // a lazy buffer found no memory (runtime/lazy_buffers.h)
    failed = true;
    out_of_memory = true;
    message = e.what();
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  } catch (...) {
    failed = true;
    message = "unknown exception (not derived from std::exception)";
  }
  if (failed) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The first failure is the root cause; later ones are usually its consequences. One
    // already raised elsewhere (through an event) is done with: a new failure is news.
    if (!pending_error_ || pending_error_->raised) {
      if (forwarded) {
        pending_error_ = std::move(forwarded);
      } else {
        pending_error_ = std::make_shared<KeptError>(
            AsyncOpError(node.op_name != nullptr ? node.op_name : "<unnamed>", message,
                         out_of_memory, node.issued_at));
      }
    }
  }
  completed_.fetch_add(1, std::memory_order_release);
}

}  // namespace torch_tpu::runtime
