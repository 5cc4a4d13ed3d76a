// An execution queue (a "stream"): tasks run one after another, in enqueue order. A worker
// thread runs them while the host is busy; a host that blocks in synchronize() runs the rest
// itself instead of sleeping (one executor at a time, so order holds). That keeps intra-op
// parallelism on the host thread's own OpenMP team: a second team on the worker would make
// libgomp throttle every team's spinning, halving the speed of all parallel kernels.
// Streams order against each other only through events.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/status.h"

namespace torch_tpu::runtime {

using Task = std::function<void()>;

// The name of the tasks that give back buffers the host dropped (after_issued_work).
inline constexpr const char* kReleaseTaskName = "tpu::release_buffer";

// A task's failure, kept until a sync point raises it. Events hand the same record to the
// streams and hosts that wait for them (runtime/event.h); whichever sync point reaches it first
// raises it, and every other holder then drops it, so one failure is reported once.
struct KeptError {
  explicit KeptError(AsyncOpError error) : error(std::move(error)) {}
  AsyncOpError error;
  std::atomic<bool> raised{false};
  // True for the one caller that gets to raise it.
  bool claim() { return !raised.exchange(true); }
};
using KeptErrorPtr = std::shared_ptr<KeptError>;

// Thrown by a task that hands on another stream's kept error (an event wait).
class ForwardedError : public std::exception {
 public:
  explicit ForwardedError(KeptErrorPtr record) : record_(std::move(record)) {}
  const char* what() const noexcept override { return record_->error.what(); }
  const KeptErrorPtr& record() const { return record_; }

 private:
  KeptErrorPtr record_;
};

// Called once on each thread the first time it runs a task, told whether it is a stream
// worker (else a host thread running the queue in synchronize()). The PyTorch layer sizes the
// thread's intra-op parallelism there. Set once, before any stream starts.
using ExecutorThreadHook = void (*)(bool is_stream_worker);
void set_executor_thread_hook(ExecutorThreadHook hook);

// Called on a host thread each time it has run the queue itself in synchronize(), told how
// long it ran tasks. The PyTorch layer decides there whether the host's thread team should
// stop spinning for more work (engine/launch.cpp). Must not throw.
using HostTakeoverHook = void (*)(std::chrono::steady_clock::duration ran_for);
void set_host_takeover_hook(HostTakeoverHook hook);

// Called on a host thread after each task it runs while taking over in synchronize(). A long
// wait (a whole program) is where a crowded thread team loses most, so the PyTorch layer may
// resize the thread's team there instead of only after the wait. Must be cheap (it runs per
// task) and must not throw.
using HostBetweenTasksHook = void (*)();
void set_host_between_tasks_hook(HostBetweenTasksHook hook);

class Stream {
 public:
  Stream(int chip_index, int64_t id, int priority);
  // Drains the queue and joins the worker.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `task` after everything queued before it and returns at once (thread-safe).
  // `op_name` must outlive the task (use an interned name); it names the op if the task throws,
  // with `issued_at` (interned too; null when not known): where the host issued it.
  // The worker keeps the first exception a task throws and keeps running later tasks. A task
  // that throws AsyncOpError names its op itself (a node of a program).
  // `free_finished`: also delete the records of tasks that have run, whose captures may free
  // buffers. A caller holding a lock that a buffer release takes passes false.
  void enqueue(const char* op_name, Task task, const char* issued_at = nullptr,
               bool free_finished = true);
  // Runs `action` once every task queued on this stream so far has run: now if the stream is
  // idle, else as a task of its own. For giving back memory the host dropped. `action` must
  // not throw.
  void after_issued_work(Task action);

  // Returns once every task queued so far has run (running queued tasks on the calling thread
  // while the worker is not), then raises (and clears) the first error a task threw since the
  // last sync, as AsyncOpError. `queue_first`, if given, is called first, after the host has
  // claimed the executor: what it queues (a program the host is about to wait for) runs on the
  // host with its whole thread team, not on the worker's one thread while the host waits.
  void synchronize(const std::function<void()>& queue_first = nullptr);
  // Raises (and clears) a kept error without waiting.
  void raise_pending_error();
  // True when every task queued so far has run.
  bool query() const;
  // How many tasks were queued so far. Two equal readings
  // mean nothing was queued in between.
  uint64_t queued_count() const { return enqueued_.load(std::memory_order_acquire); }
  // The kept error (the first a task threw since the last sync that raised), or null.
  // Events recorded on this stream carry it to the streams and hosts that wait for them.
  KeptErrorPtr kept_error() const;

  int chip_index() const { return chip_index_; }
  int64_t id() const { return id_; }
  int priority() const { return priority_; }

 private:
  // A queued task. Nodes form a lock-free multi-producer queue (Vyukov's): producers link
  // new nodes at the tail; the executor pops at the head. A run node stays as the queue's
  // head until the next pop, then is retired: the host deletes retired nodes (and so the
  // tasks' captures) on its own thread, so allocation and freeing of tasks both happen there.
  struct Node {
    std::atomic<Node*> next{nullptr};
    Node* next_retired = nullptr;
    const char* op_name = nullptr;
    const char* issued_at = nullptr;
    Task task;
  };
  // After a host stops taking over: wakes a sleeping worker if tasks are left.
  void wake_worker_for_leftover_work();
  void wake_worker();
  void run_worker();
  // Sleeps until work arrives (or stopping); returns false when the worker should exit.
  bool wait_for_work();
  // The next queued node, or nullptr. Caller holds executor_.
  Node* pop();
  // Runs a popped node's task, keeping its error, then counts it done. Caller holds executor_.
  void run(Node& node);
  // Frees retired nodes and the captures of the last task run (host side).
  void release_finished_tasks();
  void delete_retired();
  void start_worker();

  const int chip_index_;
  const int64_t id_;
  const int priority_;

  std::mutex executor_;  // held by whichever thread is running tasks (worker or waiting host)
  Node* head_;           // the last node taken (a run task, or the initial stub); executor side
  // Producers and the executor touch these on every op: separate cache lines, or the two
  // cores ping-pong one line and tiny ops get slower.
  alignas(64) std::atomic<Node*> tail_;
  alignas(64) std::atomic<uint64_t> enqueued_{0};
  alignas(64) std::atomic<uint64_t> completed_{0};
  alignas(64) std::atomic<Node*> retired_{nullptr};
  alignas(64) std::atomic<int> host_wants_executor_{0};  // hosts in synchronize(); the worker stands aside
  std::atomic<bool> worker_sleeping_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> worker_started_{false};

  mutable std::mutex mutex_;  // guards sleeping/waking, starting the worker, pending_error_
  std::condition_variable work_ready_;
  KeptErrorPtr pending_error_;
  std::thread worker_;
};

}  // namespace torch_tpu::runtime
