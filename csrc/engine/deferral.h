// Deferred execution (DeferAndFuse, DESIGN §4). While the mode defers ops, the engine holds the
// ops issued on each stream back, in a pending list per stream, instead of queueing them; a
// flush hands the list to the installed program runner (the active executor's planner), which
// returns the tasks to queue in its place (a program: fused, cached), and queues those. Work
// queued onto a stream while it has pending ops (event marks and waits, buffer releases) waits
// in the list behind them, so stream order holds. The runtime's streams know nothing of this.
// Torch-free.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/event.h"
#include "runtime/stream.h"

namespace torch_tpu::engine {

struct OpDescription;  // engine/program.h: what an executor may fuse

// An op held back in a stream's pending list.
struct PendingOp {
  const char* op_name = nullptr;  // interned
  // Where the host issued the op (e.g. "train.py:12 in step"), or null; interned too.
  const char* issued_at = nullptr;
  runtime::Task task;  // runs the op as it is (what a planner does with an op it cannot fuse)
  std::shared_ptr<const OpDescription> description;  // null: opaque
  // Run once this op has run (whatever it was planned into): releases of buffers the host
  // dropped after issuing it (after_issued_work). They must not throw.
  std::vector<runtime::Task> then;
};

// A task a program runner asks to queue in place of pending ops.
struct PlannedTask {
  const char* op_name = nullptr;
  runtime::Task task;
  const char* issued_at = nullptr;  // named with op_name if the task throws
};

// Turns a stream's pending ops (in issue order) into the tasks to queue. `reason` says what
// flushed them. Called on the flushing thread with the stream's pending list locked: it must
// not defer onto, flush or synchronize `stream`.
class ProgramRunner {
 public:
  virtual ~ProgramRunner() = default;
  virtual std::vector<PlannedTask> plan(runtime::Stream& stream, std::vector<PendingOp>&& pending,
                                        const char* reason) = 0;
};
// Installs the runner flushes use (the Python module installs the host executor's); null
// queues pending ops as they are.
void set_program_runner(ProgramRunner* runner);

// Past this many pending ops a stream flushes ("size_bound"): a program never grows without
// limit, and a long op stream starts running while the host records the rest. Flush points stay
// where the op stream puts them, so a repeating loop still repeats its programs (cache hits).
constexpr size_t kMaxPendingOps = 256;
// Past this many, an op that marks a good program boundary (the planner would not fuse across
// it) flushes too ("size_bound"): the chip starts working while the host records more.
constexpr size_t kSoftPendingOps = 32;

// Holds `op` back on `stream`, flushing at the size bounds unless `size_bounded` is false (a
// torch.compile graph's ops, which end one program at the graph's end whatever its size).
// Thread-safe.
void defer(runtime::Stream& stream, PendingOp op, bool program_boundary = false,
           bool size_bounded = true);
// Queues `task` on `stream` after the stream's pending ops: held back behind them if it has
// any (run by whatever the program runner plans), else queued at once.
void enqueue_after_pending(runtime::Stream& stream, const char* op_name, runtime::Task task);
// Plans and queues `stream`'s pending ops, if any, telling the runner `reason`.
void flush(runtime::Stream& stream, const char* reason);
// Flushes every stream of chip `chip` that has pending ops.
void flush_chip(int chip, const char* reason);
bool has_pending(const runtime::Stream& stream);

// Flushes the stream `event` was last recorded on (its pending ops include the mark), so a host
// that waits for the event gets to see it reached.
void flush_recording_stream(const runtime::Event& event, const char* reason);

// Runs `action` once every op issued on `stream` so far has run: now if the stream is idle
// and has nothing pending, else after them (after the last pending op's program step). For
// giving back memory the host dropped. `action` must not throw.
void after_issued_work(runtime::Stream& stream, runtime::Task action);
// Records `mark` on `stream` behind its pending ops (runtime::set_mark_recorder's form).
void record_mark(runtime::Event& mark, runtime::Stream& stream);
// Makes `stream` wait for `event`'s mark, after its own pending ops; flushes the recording
// stream first (its pending ops include the mark) unless that is `stream` itself.
void block_on_event(const runtime::Event& event, runtime::Stream& stream);
// Flushes `stream` (saying `reason`), then waits for everything queued on it: see
// runtime::Stream::synchronize. The host runs a program it flushed here with its whole team.
void synchronize_stream(runtime::Stream& stream, const char* reason);

}  // namespace torch_tpu::engine
