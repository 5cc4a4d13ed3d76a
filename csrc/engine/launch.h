// Where ops go: each host thread has a current chip and, per chip, a current stream. launch()
// queues a task there (Strict) or queues it and waits (Debug). All runtime errors leave this
// layer as PyTorch errors (torch.OutOfMemoryError, RuntimeError).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include <c10/util/Exception.h>

#include "runtime/chip.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace torch_tpu::engine {

// Runs `fn`, rethrowing runtime errors as the matching c10 errors.
template <typename F>
decltype(auto) translate_errors(F&& fn) {
  try {
    return std::forward<F>(fn)();
  } catch (const runtime::OutOfMemoryError& e) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  } catch (const runtime::AsyncOpError& e) {
    TORCH_CHECK_WITH(OutOfMemoryError, !e.out_of_memory(), e.what());
    TORCH_CHECK(false, e.what());
  } catch (const runtime::RuntimeError& e) {
    TORCH_CHECK(false, e.what());
  }
}

// The chip of `index`, throwing a RuntimeError that names the valid range.
runtime::Chip& chip(int index);

// The calling thread's current chip index (0 unless set).
int current_device();
void set_current_device(int index);

// The calling thread's current stream of chip `device`.
int64_t current_stream_id(int device);
void set_current_stream_id(int device, int64_t stream_id);
runtime::Stream& current_stream(int device);

// Queues `task` on the current stream of `device`. In Debug mode waits for it and raises its
// error (named after `op_name`, an interned string that outlives the task).
void launch(int device, const char* op_name, runtime::Task task);

// How the host blocks on the chip. The Python module installs a wrapper that releases the GIL
// while waiting: a finishing task may drop the last reference to an object with a Python
// wrapper, and freeing that needs the GIL, so a host waiting with the GIL held would deadlock.
using BlockingWaitWrapper = void (*)(const std::function<void()>& wait);
void set_blocking_wait_wrapper(BlockingWaitWrapper wrapper);
// Runs `wait` (which blocks on chip work) through the installed wrapper, with the main thread's
// OpenMP team sized for the wait (engine/host_team.h).
void blocking_wait(const std::function<void()>& wait);

// Host waits, counted by reason in metrics. Each raises the first kept async error.
void sync_stream(runtime::Stream& stream, const char* reason);
// The current stream of `device`, its pending ops (fused mode) flushed first, saying `reason`:
// for work an executor queues on it directly (copies), which must follow them.
runtime::Stream& current_stream_flushed(int device, const char* reason);
void sync_current_stream(int device, const char* reason);
void sync_device(int device, const char* reason);

}  // namespace torch_tpu::engine
