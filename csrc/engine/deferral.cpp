#include "engine/deferral.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include "runtime/chip.h"
#include "runtime/status.h"

namespace torch_tpu::engine {
namespace {

constexpr int kStreamsPerChip = 1 + 2 * runtime::kStreamsPerPool;
constexpr int kMaxChips = 64;


struct PendingList {
  explicit PendingList(runtime::Stream& stream) : stream(stream) {}
  runtime::Stream& stream;
  std::mutex mutex;  // guards ops and after_flush; held while a flush plans and queues
  std::vector<PendingOp> ops;
  std::vector<runtime::Task> after_flush;  // after_issued_work() calls made while this thread flushed
  std::atomic<bool> has_pending{false};
};

// One list per stream, made on the stream's first deferred op and kept for the process's life
// (streams live as long). Indexed by chip and stream id: looked up on every op, without a lock.
std::array<std::atomic<PendingList*>, kMaxChips * kStreamsPerChip> g_lists{};
std::mutex g_lists_mutex;  // serializes making lists
std::atomic<ProgramRunner*> g_runner{nullptr};

// The list whose flush this thread is running (it holds that list's lock).
thread_local const PendingList* t_flushing = nullptr;

size_t slot_of(const runtime::Stream& stream) {
  if (stream.chip_index() < 0 || stream.chip_index() >= kMaxChips || stream.id() < 0 ||
      stream.id() >= kStreamsPerChip) {
    throw runtime::RuntimeError("deferral: stream " + std::to_string(stream.id()) + " of chip " +
                                std::to_string(stream.chip_index()) + " is out of range");
  }
  return static_cast<size_t>(stream.chip_index() * kStreamsPerChip + stream.id());
}

PendingList* find(const runtime::Stream& stream) {
  return g_lists[slot_of(stream)].load(std::memory_order_acquire);
}

PendingList& find_or_make(runtime::Stream& stream) {
  std::atomic<PendingList*>& slot = g_lists[slot_of(stream)];
  if (PendingList* list = slot.load(std::memory_order_acquire)) return *list;
  std::lock_guard<std::mutex> lock(g_lists_mutex);
  if (PendingList* list = slot.load(std::memory_order_relaxed)) return *list;
  auto* list = new PendingList(stream);  // lives as long as the process, as the stream does
  slot.store(list, std::memory_order_release);
  return *list;
}

// Marks the calling thread as flushing `list` until it goes out of scope.
class FlushingScope {
 public:
  explicit FlushingScope(const PendingList& list) { t_flushing = &list; }
  ~FlushingScope() { t_flushing = nullptr; }
  FlushingScope(const FlushingScope&) = delete;
  FlushingScope& operator=(const FlushingScope&) = delete;
};

void flush_list(PendingList& list, const char* reason) {
  if (!list.has_pending.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(list.mutex);
  if (list.ops.empty()) return;
  std::vector<PendingOp> pending;
  pending.swap(list.ops);
  // The next program is likely as long: growing the list from empty by doubling moved every
  // pending op ~8 times per program.
  list.ops.reserve(pending.size());
  list.has_pending.store(false, std::memory_order_release);
  const FlushingScope flushing(list);
  runtime::Stream& stream = list.stream;
  // Queued under the lock, so a concurrent flush cannot overtake this one; without freeing
  // finished tasks, whose captures may release buffers into this very list.
  const auto queue = [&](const char* op_name, runtime::Task task, const char* issued_at) {
    stream.enqueue(op_name, std::move(task), issued_at, /*free_finished=*/false);
  };
  if (ProgramRunner* runner = g_runner.load()) {
    for (PlannedTask& planned : runner->plan(stream, std::move(pending), reason)) {
      queue(planned.op_name, std::move(planned.task), planned.issued_at);
    }
  } else {
    for (PendingOp& op : pending) {
      queue(op.op_name, std::move(op.task), op.issued_at);
      for (runtime::Task& then : op.then) {
        queue(runtime::kReleaseTaskName, std::move(then), nullptr);
      }
    }
  }
  for (runtime::Task& action : list.after_flush) {
    queue(runtime::kReleaseTaskName, std::move(action), nullptr);
  }
  list.after_flush.clear();
}

}  // namespace

void set_program_runner(ProgramRunner* runner) { g_runner.store(runner); }

void defer(runtime::Stream& stream, PendingOp op, bool program_boundary, bool size_bounded) {
  PendingList& list = find_or_make(stream);
  bool full = false;
  {
    std::lock_guard<std::mutex> lock(list.mutex);
    list.ops.push_back(std::move(op));
    list.has_pending.store(true, std::memory_order_release);
    full = size_bounded && (list.ops.size() >= kMaxPendingOps ||
                            (program_boundary && list.ops.size() >= kSoftPendingOps));
  }
  if (full) flush_list(list, "size_bound");
}

void enqueue_after_pending(runtime::Stream& stream, const char* op_name, runtime::Task task) {
  if (PendingList* list = find(stream); list != nullptr && list->has_pending.load()) {
    std::lock_guard<std::mutex> lock(list->mutex);
    // Re-checked under the lock: a flush on another thread may have queued them meanwhile.
    if (!list->ops.empty()) {
      list->ops.push_back(PendingOp{op_name, nullptr, std::move(task), nullptr, {}});
      return;
    }
  }
  stream.enqueue(op_name, std::move(task));
}

void flush(runtime::Stream& stream, const char* reason) {
  if (PendingList* list = find(stream)) flush_list(*list, reason);
}

void flush_chip(int chip, const char* reason) {
  if (chip < 0 || chip >= kMaxChips) return;
  for (int id = 0; id < kStreamsPerChip; ++id) {
    PendingList* list = g_lists[static_cast<size_t>(chip * kStreamsPerChip + id)].load();
    if (list != nullptr) flush_list(*list, reason);
  }
}

bool has_pending(const runtime::Stream& stream) {
  const PendingList* list = find(stream);
  return list != nullptr && list->has_pending.load(std::memory_order_acquire);
}

void after_issued_work(runtime::Stream& stream, runtime::Task action) {
  if (PendingList* list = find(stream)) {
    if (t_flushing == list) {  // planning dropped a buffer: after the program being queued
      list->after_flush.push_back(std::move(action));
      return;
    }
    // Under the lock: a flush on another thread has either queued its program (then the
    // stream is not idle) or not taken the pending ops yet.
    std::lock_guard<std::mutex> lock(list->mutex);
    if (!list->ops.empty()) {
      list->ops.back().then.push_back(std::move(action));
    } else {
      stream.after_issued_work(std::move(action));
    }
    return;
  }
  stream.after_issued_work(std::move(action));
}

void record_mark(runtime::Event& mark, runtime::Stream& stream) {
  enqueue_after_pending(stream, "tpu::event_record", mark.arm(stream));
}

void flush_recording_stream(const runtime::Event& event, const char* reason) {
  if (runtime::Stream* recording = event.recording_stream()) flush(*recording, reason);
}

void block_on_event(const runtime::Event& event, runtime::Stream& stream) {
  runtime::Stream* recording = event.recording_stream();
  if (recording != nullptr && recording != &stream) flush(*recording, "cross_stream_wait");
  if (runtime::Task wait = event.wait_task()) {
    enqueue_after_pending(stream, "tpu::event_wait", std::move(wait));
  }
}

void synchronize_stream(runtime::Stream& stream, const char* reason) {
  if (has_pending(stream)) {
    stream.synchronize([&] { flush(stream, reason); });
  } else {
    stream.synchronize();
  }
}

}  // namespace torch_tpu::engine
