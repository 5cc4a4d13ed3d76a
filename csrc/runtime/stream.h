// An execution queue (a "stream"): tasks run one after another, in enqueue order, on the
// stream's own worker thread. Streams order against each other only through events.
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

// Called on the worker thread before each task, told whether a host thread is blocked waiting
// for this stream (the PyTorch layer sizes the task's intra-op parallelism from it: a busy
// host needs a core). Set once, before any stream starts.
using TaskStartHook = void (*)(bool host_waiting);
void set_task_start_hook(TaskStartHook hook);

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

  // Blocks until every task queued so far has run, then raises (and clears) the first error a
  // task threw since the last sync, as AsyncOpError.
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
  // Runs one task, keeping its error, then counts it done.
  void run_entry(Entry& entry);
  void start_worker_locked();

  const int chip_index_;
  const int64_t id_;
  const int priority_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<Entry> queue_;
  std::atomic<uint64_t> enqueued_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<int> host_waiters_{0};  // hosts blocked on work_done_; the worker notifies only then
  bool worker_sleeping_ = false;
  bool stopping_ = false;
  std::optional<AsyncOpError> pending_error_;
  std::thread worker_;
};

}  // namespace torch_tpu::runtime
