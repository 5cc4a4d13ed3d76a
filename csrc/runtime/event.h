// Events mark a point in a stream's queue: other streams can wait for it, the host can query
// or wait for it, and two timed events give the elapsed time between them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "runtime/stream.h"

namespace torch_tpu::runtime {

class Event {
 public:
  explicit Event(bool enable_timing = false) : enable_timing_(enable_timing) {}

  // Marks the current end of `stream`'s queue. Re-recording replaces the previous mark.
  void record(Stream& stream);
  // Makes `stream` wait (without blocking the host) until the recorded mark has run.
  // No-op if never recorded.
  void block(Stream& stream) const;
  // True once the recorded mark has run (or if never recorded).
  bool query() const;
  // Blocks the host until the recorded mark has run.
  void synchronize() const;
  // Milliseconds from this event's mark to `end`'s; both must be recorded, completed and timed.
  double elapsed_ms(const Event& end) const;

  bool was_recorded() const { return state_ != nullptr; }
  bool timing_enabled() const { return enable_timing_; }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::chrono::steady_clock::time_point time;
  };
  bool enable_timing_;
  std::shared_ptr<State> state_;
};

}  // namespace torch_tpu::runtime
