// Cross-rank agreement on call signatures (call_signature.h), exchanged in batches over the
// group's agreement transport.
//
// Every collective must be checked before its bytes move (Gloo aborts the process on a size
// mismatch), but one exchange per collective costs as much CPU as a 1 MiB collective itself on
// loopback (Gloo's messages are syscall-bound). So exchanges carry every call a rank has issued
// and not yet announced, up to kMaxBatch. A call is verified once every rank has announced it;
// the verified count is known to all ranks alike after each exchange, so they all follow the
// same rule for the next one and post the same exchanges in the same order:
//   post exchange j+1 once exchange j is done and this rank has issued a call beyond what
//   exchange j verified.
// A rank that issues one collective at a time (issue, wait, compute) still sends one exchange
// per call, posted at issue so it overlaps the work that produces the inputs; a rank that
// issues collectives back to back (a benchmark loop, DDP's buckets) sends one per batch.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/call_signature.h"

namespace torch_tpu::distributed {

class SignatureAgreement {
 public:
  // Calls announced per exchange at most: an exchange's size is fixed (every rank's the same).
  static constexpr size_t kMaxBatch = 64;

  SignatureAgreement(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size);

  // The host issued this call (signatures arrive in sequence order): announces it with the next
  // exchange, posting that exchange now if the previous one is done.
  void issued(const CallSignature& signature);

  // Before the call runs (communication stream): blocks until every rank has announced call
  // `mine.sequence`, then throws c10::DistBackendError if any rank's differs, naming both
  // calls. A failed or timed-out exchange throws the transport's error.
  void check(const CallSignature& mine);

  // Exchanges posted so far (for tests and metrics).
  uint64_t exchanges() const;

 private:
  struct Exchange {
    std::vector<at::Tensor> input;                // this rank's announcement
    std::vector<std::vector<at::Tensor>> gathered;  // every rank's
    c10::intrusive_ptr<c10d::Work> work;
  };
  // Caller holds mutex_.
  void post_locked();
  void absorb_locked(const Exchange& exchange);
  // Takes in the finished exchange and posts the next if one is due. Caller holds mutex_.
  void advance_locked();

  const c10::intrusive_ptr<c10d::Backend> transport_;
  const int rank_;
  const int size_;
  mutable std::mutex mutex_;
  std::deque<CallSignature> unannounced_;  // issued here, not yet sent
  uint64_t issued_through_ = 0;
  std::vector<uint64_t> announced_through_;  // per rank: calls announced so far
  uint64_t verified_through_ = 0;            // announced by every rank
  std::map<uint64_t, std::vector<at::Tensor>> received_;  // call -> every rank's signature
  std::shared_ptr<Exchange> in_flight_;
  uint64_t exchanges_ = 0;
};

}  // namespace torch_tpu::distributed
