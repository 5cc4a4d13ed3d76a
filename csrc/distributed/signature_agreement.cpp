#include "distributed/signature_agreement.h"

#include <algorithm>
#include <cstring>

#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

namespace torch_tpu::distributed {
namespace {

// An exchange: [count, count signatures, padding up to kMaxBatch].
constexpr int64_t kExchangeWords =
    1 + static_cast<int64_t>(SignatureAgreement::kMaxBatch) * kEncodedSignatureWords;

}  // namespace

SignatureAgreement::SignatureAgreement(c10::intrusive_ptr<c10d::Backend> transport, int rank,
                                       int size)
    : transport_(std::move(transport)),
      rank_(rank),
      size_(size),
      announced_through_(static_cast<size_t>(size), 0) {}

uint64_t SignatureAgreement::exchanges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exchanges_;
}

void SignatureAgreement::issued(const CallSignature& signature) {
  std::lock_guard<std::mutex> lock(mutex_);
  unannounced_.push_back(signature);
  issued_through_ = signature.sequence;
  if (!in_flight_) {
    post_locked();
  } else if (in_flight_->work->isCompleted() && in_flight_->work->isSuccess()) {
    advance_locked();
  }
  // Otherwise the exchange in flight is still running: this call goes with the next, which
  // whoever sees that one finish posts (a later issue, or the check of a call it covers).
}

void SignatureAgreement::check(const CallSignature& mine) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (verified_through_ < mine.sequence) {
    if (!in_flight_) post_locked();  // due: this call was issued and is not verified yet
    std::shared_ptr<Exchange> exchange = in_flight_;
    lock.unlock();
    exchange->work->wait();  // throws if the exchange failed (a peer gone, the timeout)
    lock.lock();
    if (in_flight_ == exchange) advance_locked();
  }
  auto found = received_.find(mine.sequence);
  TORCH_INTERNAL_ASSERT(found != received_.end(), "tpu_dist: collective #", mine.sequence,
                        " was verified but its signatures are gone");
  std::vector<at::Tensor> all = std::move(found->second);
  received_.erase(found);
  lock.unlock();
  check_agreement(mine, rank_, all);
}

void SignatureAgreement::post_locked() {
  auto exchange = std::make_shared<Exchange>();
  at::Tensor announcement = at::zeros({kExchangeWords}, at::kLong);
  int64_t* words = announcement.data_ptr<int64_t>();
  int64_t count = 0;
  while (count < static_cast<int64_t>(kMaxBatch) && !unannounced_.empty()) {
    const at::Tensor encoded = encode(unannounced_.front());
    std::memcpy(words + 1 + count * kEncodedSignatureWords, encoded.data_ptr<int64_t>(),
                sizeof(int64_t) * kEncodedSignatureWords);
    unannounced_.pop_front();
    ++count;
  }
  words[0] = count;
  exchange->input = {announcement};
  exchange->gathered.resize(1);
  for (int rank = 0; rank < size_; ++rank) {
    exchange->gathered[0].push_back(at::empty_like(announcement));
  }
  exchange->work = transport_->allgather(exchange->gathered, exchange->input);
  in_flight_ = std::move(exchange);
  ++exchanges_;
}

void SignatureAgreement::absorb_locked(const Exchange& exchange) {
  for (int rank = 0; rank < size_; ++rank) {
    const at::Tensor& announcement = exchange.gathered[0][static_cast<size_t>(rank)];
    const int64_t count = announcement.data_ptr<int64_t>()[0];
    TORCH_CHECK_WITH(DistBackendError, count >= 0 && count <= static_cast<int64_t>(kMaxBatch),
                     "tpu_dist: rank ", rank, " sent an unrecognisable list of calls (", count,
                     " calls) to rank ", rank_);
    uint64_t& through = announced_through_[static_cast<size_t>(rank)];
    for (int64_t i = 0; i < count; ++i) {
      std::vector<at::Tensor>& signatures = received_[through + 1 + static_cast<uint64_t>(i)];
      if (signatures.empty()) signatures.resize(static_cast<size_t>(size_));
      signatures[static_cast<size_t>(rank)] =
          announcement.narrow(0, 1 + i * kEncodedSignatureWords, kEncodedSignatureWords);
    }
    through += static_cast<uint64_t>(count);
  }
  verified_through_ = *std::min_element(announced_through_.begin(), announced_through_.end());
}

void SignatureAgreement::advance_locked() {
  absorb_locked(*in_flight_);
  in_flight_.reset();
  if (issued_through_ > verified_through_) post_locked();
}

}  // namespace torch_tpu::distributed
