// How a tpu collective runs, in the order NCCL gives a CUDA collective:
//  1. a mark on the caller's current stream says where the inputs are ready;
//  2. the group's communication stream waits for that mark, checks that the other ranks issued
//     the same call (call_signature.h), then runs it through the transport on CPU views of the
//     tensors (transport_views.h: zero-copy on the host runtime, host copies of PJRT buffers).
//     This blocks that stream, never the host or the caller's stream.
//     The ranks exchange call signatures over a second transport group, from the host at issue
//     time and batched when calls are issued faster than they run (signature_agreement.h): by
//     the time the inputs are ready the check is usually done, so it adds no latency, and it
//     cannot interleave with the data collectives' own ordering;
//  3. a mark after it completes the Work: wait() makes the caller's stream wait for that mark.
// Point-to-point ops are posted in the caller's stream order and complete on the communication
// stream, so a ring of isend/irecv cannot deadlock behind one another on a serialized stream.
// A failure (peer gone, timeout, disagreement) is an error of the op on the communication
// stream; events hand it to every stream and host that waits for the Work.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/call_signature.h"
#include "distributed/caller_coverage.h"
#include "distributed/signature_agreement.h"
#include "runtime/stream.h"

namespace torch_tpu::distributed {

struct Collective {
  c10d::OpType op = c10d::OpType::UNKNOWN;
  const char* name = nullptr;       // interned, e.g. "tpu_dist::all_reduce"; names errors
  CallSignature signature;          // the launcher sets its sequence number
  std::vector<at::Tensor> inputs;   // tpu tensors the call reads
  std::vector<at::Tensor> outputs;  // tpu tensors it writes (may alias inputs): the result
  // Runs the call on CPU views of `inputs` and `outputs` (same order) and waits for it.
  std::function<void(c10d::Backend& transport, std::vector<at::Tensor>& inputs,
                     std::vector<at::Tensor>& outputs)>
      run;
};

struct PointToPoint {
  c10d::OpType op = c10d::OpType::UNKNOWN;
  const char* name = nullptr;
  at::Tensor tensor;  // sent or received into
  // Posts the op on a CPU view of `tensor` and returns the transport's Work, not waited for.
  std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend& transport, at::Tensor& view)> post;
};

class CollectiveLauncher {
 public:
  // `agreement` is a second transport group over the same ranks, used only for call signatures.
  CollectiveLauncher(c10::intrusive_ptr<c10d::Backend> transport,
                     c10::intrusive_ptr<c10d::Backend> agreement, int rank, int size);

  // Queues the call as described above and returns its Work at once (Debug mode: after it ran).
  // Thread-safe; collectives are numbered in the order they are launched.
  c10::intrusive_ptr<c10d::Work> launch(Collective collective);
  c10::intrusive_ptr<c10d::Work> launch(PointToPoint op);

  uint64_t collectives_launched() const;
  uint64_t signature_exchanges() const { return agreement_->exchanges(); }

  // c10d's coalescing (_coalescing_manager with a device): ops issued in between run as usual
  // (in order on the communication stream); end_coalescing returns a Work that completes when
  // the last of them has, and so all of them. A real batch would be an optimization only.
  void start_coalescing();
  c10::intrusive_ptr<c10d::Work> end_coalescing();

  // Waits for every communication stream this launcher used and frees what finished tasks hold
  // (their tensors and transports). Errors are dropped: they were reported where waited for,
  // or nobody waits any more. Blocks at most the process group's timeout.
  void drain();

 private:
  // The communication stream of chip `device`: a high-priority stream, as ProcessGroupNCCL
  // keeps one per device.
  runtime::Stream& communication_stream(int device);

  c10::intrusive_ptr<c10d::Backend> transport_;
  // Shared with queued tasks, which check their call's signature.
  const std::shared_ptr<SignatureAgreement> agreement_;
  const int rank_;
  const int size_;
  // Shared with the Works, whose wait() extends it.
  const std::shared_ptr<CallerCoverage> coverage_;
  mutable std::mutex mutex_;
  uint64_t sequence_ = 0;
  std::map<int, int64_t> communication_stream_ids_;
  bool coalescing_ = false;
  c10::intrusive_ptr<c10d::Work> last_coalesced_;
  // Remembers `work` if coalescing; returns it.
  c10::intrusive_ptr<c10d::Work> issued(c10::intrusive_ptr<c10d::Work> work);
};

}  // namespace torch_tpu::distributed
