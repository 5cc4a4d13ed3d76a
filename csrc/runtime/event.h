// Events mark a point in a stream's queue: other streams can wait for it, the host can query
// or wait for it, and two timed events give the elapsed time between them.
// A mark reached after a task on its stream failed carries that error: a stream that waits for
// the mark fails with it (raised at that stream's next sync), and so does a host that waits for
// it. Work handed from stream to stream (e.g. a collective's result) never hides a failure, and
// the first sync point that raises it reports it for all (runtime/stream.h, KeptError).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "runtime/status.h"
#include "runtime/stream.h"

namespace torch_tpu::runtime {

class Event {
 public:
  explicit Event(bool enable_timing = false) : enable_timing_(enable_timing) {}

  // Marks the current end of `stream`'s queue. Re-recording replaces the previous mark.
  void record(Stream& stream);
  // Starts a new mark on `stream` and returns the task that reaches it, for a caller that
  // queues it itself, after work it held back (record() queues it at once).
  Task arm(Stream& stream);
  // Makes `stream` wait (without blocking the host) until the recorded mark has run; if the
  // mark carries an error, `stream` keeps it as its own. No-op if never recorded.
  void block(Stream& stream) const;
  // The task block() queues, or null when there is nothing to wait for or hand on.
  Task wait_task() const;
  // True once the recorded mark has run (or if never recorded).
  bool query() const;
  // Blocks the host until the recorded mark has run, and throws the error it carries
  // (AsyncOpError) unless already reported.
  void synchronize() const;
  // The stream of the last record, or null.
  Stream* recording_stream() const { return state_ ? state_->stream : nullptr; }
  // Milliseconds from this event's mark to `end`'s; both must be recorded, completed and timed.
  double elapsed_ms(const Event& end) const;

  // The error the mark carries once reached (without reporting it), or null.
  KeptErrorPtr error() const;

  bool was_recorded() const { return state_ != nullptr; }
  bool timing_enabled() const { return enable_timing_; }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::chrono::steady_clock::time_point time;
    KeptErrorPtr error;  // the recording stream's kept error at the mark, or null
    Stream* stream = nullptr;  // the recording stream (streams outlive events' use of them)
  };
  bool enable_timing_;
  std::shared_ptr<State> state_;
};

}  // namespace torch_tpu::runtime
