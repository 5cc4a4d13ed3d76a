// An execution queue (a "stream"): tasks run one after another, in enqueue order. A worker
// thread runs them while the host is busy; a host that blocks in synchronize() runs the rest
// itself instead of sleeping (one executor at a time, so order holds). That keeps intra-op
// parallelism on the host thread's own OpenMP team: a second team on the worker would make
// libgomp throttle every team's spinning, halving the speed of all parallel kernels.
// Streams order against each other only through events.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runtime/status.h"

namespace torch_tpu::runtime {

using Task = std::function<void()>;

// Called once on each thread the first time it runs a task, told whether it is a stream
// worker (else a host thread running the queue in synchronize()). The PyTorch layer sizes the
// thread's intra-op parallelism there. Set once, before any stream starts.
using ExecutorThreadHook = void (*)(bool is_stream_worker);
void set_executor_thread_hook(ExecutorThreadHook hook);

class Stream {
 public:
  Stream(int chip_index, int64_t id, int priority);
  // Drains the queue and joins the worker.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `task` after everything queued before it and returns at once (thread-safe).
  // `op_name` must outlive the task (use an interned name); it names the op if the task throws.
  // The worker keeps the first exception a task throws and keeps running later tasks.
  void enqueue(const char* op_name, Task task);

  // Returns once every task queued so far has run (running queued tasks on the calling thread
  // while the worker is not), then raises (and clears) the first error a task threw since the
  // last sync, as AsyncOpError.
  void synchronize();
  // Raises (and clears) a kept error without waiting.
  void raise_pending_error();
  // True when every task queued so far has run.
  bool query() const;

  int chip_index() const { return chip_index_; }
  int64_t id() const { return id_; }
  int priority() const { return priority_; }

 private:
  struct Entry {
    const char* op_name;
    Task task;
  };
  void run_worker();
  // Takes every queued task (under mutex_); empty if none.
  std::deque<Entry> take_queued();
  // Runs one task, keeping its error, then counts it done. Caller holds executor_.
  void run_entry(Entry& entry);
  void start_worker_locked();

  const int chip_index_;
  const int64_t id_;
  const int priority_;

  mutable std::mutex mutex_;
  std::mutex executor_;  // held by whichever thread is running tasks (worker or waiting host)
  std::condition_variable work_ready_;
  std::deque<Entry> queue_;
  // Written by different threads (hosts / the executor) on every op: separate cache lines, or
  // the two cores ping-pong one line and tiny ops get ~2x slower.
  alignas(64) std::atomic<uint64_t> enqueued_{0};
  alignas(64) std::atomic<uint64_t> completed_{0};
  alignas(64) char after_counters_ = 0;  // keeps the next members off completed_'s line
  std::atomic<int> host_wants_executor_{0};  // hosts in synchronize(); the worker stands aside
  std::atomic<bool> worker_sleeping_{false};  // written under mutex_; read unlocked as a hint
  bool stopping_ = false;
  std::optional<AsyncOpError> pending_error_;
  std::thread worker_;
};

}  // namespace torch_tpu::runtime
