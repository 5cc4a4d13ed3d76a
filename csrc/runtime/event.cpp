#include "runtime/event.h"

#include "runtime/status.h"

namespace torch_tpu::runtime {

void Event::record(Stream& stream) { stream.enqueue("tpu::event_record", arm(stream)); }

Task Event::arm(Stream& stream) {
  // A fresh state per record: streams still waiting on the previous mark keep their own copy.
  auto state = std::make_shared<State>();
  state->stream = &stream;
  state_ = state;
  return [state, &stream] {
    KeptErrorPtr error = stream.kept_error();
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->time = std::chrono::steady_clock::now();
      state->error = std::move(error);
      state->done = true;
    }
    state->done_cv.notify_all();
  };
}

void Event::block(Stream& stream) const {
  if (Task wait = wait_task()) stream.enqueue("tpu::event_wait", std::move(wait));
}

Task Event::wait_task() const {
  if (!state_) return nullptr;
  {
    // Nothing to wait for or hand on: keep the stream's queue short.
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->done && (!state_->error || state_->error->raised)) return nullptr;
  }
  return [state = state_] {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->done_cv.wait(lock, [&] { return state->done; });
    if (state->error && !state->error->raised) throw ForwardedError(state->error);
  };
}

KeptErrorPtr Event::error() const {
  if (!state_) return nullptr;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done ? state_->error : nullptr;
}

bool Event::query() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

void Event::synchronize() const {
  if (!state_) return;
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  if (state_->error && state_->error->claim()) throw state_->error->error;
}

double Event::elapsed_ms(const Event& end) const {
  if (!enable_timing_ || !end.enable_timing_) {
    throw RuntimeError(
        "elapsed_ms: both events must be created with enable_timing=True");
  }
  if (!state_ || !end.state_) {
    throw RuntimeError("elapsed_ms: both events must be recorded before measuring elapsed time");
  }
  if (!query() || !end.query()) {
    throw RuntimeError(
        "elapsed_ms: both events must have completed (synchronize them first)");
  }
  std::chrono::steady_clock::time_point start_time;
  std::chrono::steady_clock::time_point end_time;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    start_time = state_->time;
  }
  {
    std::lock_guard<std::mutex> lock(end.state_->mutex);
    end_time = end.state_->time;
  }
  return std::chrono::duration<double, std::milli>(end_time - start_time).count();
}

}  // namespace torch_tpu::runtime
