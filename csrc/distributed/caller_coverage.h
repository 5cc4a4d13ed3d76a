// Which caller-stream work the communication stream's own order already covers, so a
// collective can skip its inputs-ready mark (collective_launcher.h, step 1).
//
// A collective launched after `work.wait()` on the same caller stream, with nothing queued on
// that stream in between, needs no mark: the caller's tasks before the previous collective
// were waited for by it, and the caller's only task since — the wait itself — waits for the
// previous collective, which the communication stream has finished before it starts the next.
// Without this, a loop of collectives ping-pongs between the caller's worker and the
// communication stream's on every call: two thread hand-offs per collective.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "runtime/stream.h"

namespace torch_tpu::distributed {

class CallerCoverage {
 public:
  // True if every task `caller` has queued up to `queued` (its queued_count()) is known to run
  // before whatever is queued next on the communication stream.
  bool covers(const runtime::Stream& caller, uint64_t queued) const;
  // A collective was launched: `caller` had queued `before` tasks when it was decided, and
  // `after` once its inputs-ready mark (if any, `marked`) was queued.
  void launched(const runtime::Stream& caller, uint64_t before, uint64_t after, bool marked);
  // `caller` was made to wait for a collective of this communication stream: its queued count
  // went from `before` to `after`.
  void waited(const runtime::Stream& caller, uint64_t before, uint64_t after);

 private:
  mutable std::mutex mutex_;
  std::map<const runtime::Stream*, uint64_t> covered_;  // caller stream -> covered queued count
};

}  // namespace torch_tpu::distributed
