#include "distributed/caller_coverage.h"

namespace torch_tpu::distributed {

bool CallerCoverage::covers(const runtime::Stream& caller, uint64_t queued) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = covered_.find(&caller);
  return found != covered_.end() && found->second == queued;
}

void CallerCoverage::launched(const runtime::Stream& caller, uint64_t before, uint64_t after,
                              bool marked) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Anything another thread queued on `caller` meanwhile may come after the mark: not covered.
  if (after == before + (marked ? 1 : 0)) {
    covered_[&caller] = after;
  } else {
    covered_.erase(&caller);
  }
}

void CallerCoverage::waited(const runtime::Stream& caller, uint64_t before, uint64_t after) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = covered_.find(&caller);
  if (found == covered_.end() || found->second != before) return;
  // The one task queued is the wait for this stream's collective; more means another thread.
  if (after <= before + 1) {
    found->second = after;
  } else {
    covered_.erase(found);
  }
}

}  // namespace torch_tpu::distributed
