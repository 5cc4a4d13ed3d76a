#include "distributed/collective_launcher.h"

#include <condition_variable>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <ATen/core/jit_type.h>

#include <ATen/ops/empty_like.h>
#include <c10/util/Exception.h>

#include "distributed/tpu_dist_work.h"
#include "distributed/transport_views.h"
#include "engine/deferral.h"
#include "engine/launch.h"
#include "engine/mode.h"
#include "runtime/event.h"
#include "runtime/status.h"

namespace torch_tpu::distributed {
namespace {

// Runs `body` inside a queued task: c10 errors (the transport's) become runtime errors whose
// message has no C++ backtrace, prefixed with what the call was.
template <typename Body>
void run_reporting(const std::string& what, Body&& body) {
  try {
    body();
  } catch (const c10::Error& error) {
    throw runtime::RuntimeError(what + " failed: " + error.what_without_backtrace());
  } catch (const runtime::RuntimeError&) {
    throw;
  } catch (const std::exception& error) {
    throw runtime::RuntimeError(what + " failed: " + error.what());
  }
}

c10::Stream c10_stream(int device, const runtime::Stream& stream) {
  return c10::Stream(c10::Stream::UNSAFE,
                     c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)),
                     stream.id());
}

// A point-to-point op's handoff from the task that posts it to the one that waits for it.
class Posting {
 public:
  void posted(c10::intrusive_ptr<c10d::Work> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      work_ = std::move(work);
      settled_ = true;
    }
    settled_cv_.notify_all();
  }
  void failed(std::string message) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::move(message);
      settled_ = true;
    }
    settled_cv_.notify_all();
  }
  // Blocks until the op was posted; throws if posting failed.
  c10::intrusive_ptr<c10d::Work> wait_posted() {
    std::unique_lock<std::mutex> lock(mutex_);
    settled_cv_.wait(lock, [&] { return settled_; });
    if (error_) throw runtime::RuntimeError(*error_);
    return work_;
  }
  int source_rank() {
    std::lock_guard<std::mutex> lock(mutex_);
    return work_ ? work_->sourceRank() : -1;
  }

 private:
  std::mutex mutex_;
  std::condition_variable settled_cv_;
  bool settled_ = false;
  c10::intrusive_ptr<c10d::Work> work_;
  std::optional<std::string> error_;
};

}  // namespace

CollectiveLauncher::CollectiveLauncher(c10::intrusive_ptr<c10d::Backend> transport,
                                       c10::intrusive_ptr<c10d::Backend> agreement, int rank,
                                       int size)
    : transport_(std::move(transport)),
      agreement_(std::make_shared<SignatureAgreement>(std::move(agreement), rank, size)),
      rank_(rank),
      size_(size),
      coverage_(std::make_shared<CallerCoverage>()) {}

uint64_t CollectiveLauncher::collectives_launched() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sequence_;
}

void CollectiveLauncher::start_coalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!coalescing_, "tpu_dist: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  last_coalesced_.reset();
}

c10::intrusive_ptr<c10d::Work> CollectiveLauncher::end_coalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(coalescing_, "tpu_dist: endCoalescing called without startCoalescing");
  coalescing_ = false;
  if (last_coalesced_) return std::exchange(last_coalesced_, nullptr);
  // Nothing was issued: a Work that is already complete.
  auto done = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  done->markCompleted(c10::IValue(std::vector<at::Tensor>{}));
  return c10d::Work::create_from_future(done);
}

c10::intrusive_ptr<c10d::Work> CollectiveLauncher::issued(c10::intrusive_ptr<c10d::Work> work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (coalescing_) last_coalesced_ = work;
  return work;
}

void CollectiveLauncher::drain() {
  std::map<int, int64_t> streams;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams = communication_stream_ids_;
  }
  for (const auto& [device, id] : streams) {
    try {
      runtime::Stream& stream = engine::chip(device).stream(id);
      engine::blocking_wait([&] { stream.synchronize(); });
    } catch (const std::exception&) {
      // Already reported at a sync point, or nobody is left to report it to.
    }
  }
}

runtime::Stream& CollectiveLauncher::communication_stream(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = communication_stream_ids_.find(device);
  if (found == communication_stream_ids_.end()) {
    // Always the first high-priority stream (not the next in the pool): process groups made
    // one after another then share one worker thread instead of starting a new one each.
    found = communication_stream_ids_.emplace(device, runtime::kFirstHighPriorityStreamId).first;
  }
  return engine::translate_errors(
      [&]() -> runtime::Stream& { return engine::chip(device).stream(found->second); });
}

c10::intrusive_ptr<c10d::Work> CollectiveLauncher::launch(Collective collective) {
  TORCH_INTERNAL_ASSERT(!collective.outputs.empty() || !collective.inputs.empty());
  const at::Tensor& first =
      collective.inputs.empty() ? collective.outputs.front() : collective.inputs.front();
  const int device = first.device().index();
  {
    // Numbering and announcing under one lock: concurrent callers announce in order.
    std::lock_guard<std::mutex> lock(mutex_);
    collective.signature.sequence = ++sequence_;
    agreement_->issued(collective.signature);
  }
  runtime::Stream& caller = engine::current_stream(device);
  runtime::Stream& communication = communication_stream(device);
  // Fused mode: the ops that produce the inputs run now, as a program (DESIGN §4).
  engine::flush(caller, "collective");
  // A caller stream with nothing queued has produced the inputs already, and one whose work
  // the communication stream's order covers (caller_coverage.h) will have: no mark to wait for
  // (saves two hand-offs between threads per collective). A failure it kept still travels:
  // query() says done only once every task ran, and their errors are reported at its syncs.
  const uint64_t queued_before = caller.queued_count();
  const bool marked = &caller != &communication && !caller.query() &&
                      !coverage_->covers(caller, queued_before);
  if (marked) {
    runtime::Event inputs_ready;
    inputs_ready.record(caller);
    inputs_ready.block(communication);
  }
  coverage_->launched(caller, queued_before, caller.queued_count(), marked);

  auto views = std::make_shared<TransportViews>(collective.inputs, collective.outputs);
  const CallSignature signature = collective.signature;
  const std::string what = "tpu_dist " + describe(signature) + " on rank " + std::to_string(rank_);
  communication.enqueue(
      collective.name,
      // The task owns the tensors (so their memory outlives the transport's use of it) and the
      // transport (so a destroyed group's last calls still finish).
      [transport = transport_, agreement = agreement_, what, signature, views,
       run = std::move(collective.run), keep_inputs = collective.inputs,
       keep_outputs = collective.outputs] {
        run_reporting(what, [&] {
          agreement->check(signature);
          views->open();
          run(*transport, views->read(), views->written());
          views->close();
        });
      });
  runtime::Event done;
  done.record(communication);
  auto work = c10::make_intrusive<TpuDistWork>(rank_, collective.op, collective.name, device,
                                               std::move(done), collective.outputs,
                                               c10_stream(device, communication), signature.sequence,
                                               coverage_);
  if (engine::current_policy().waits_for_each_op()) {
    engine::sync_stream(communication, "debug_mode");
  }
  return issued(std::move(work));
}

c10::intrusive_ptr<c10d::Work> CollectiveLauncher::launch(PointToPoint op) {
  const int device = op.tensor.device().index();
  runtime::Stream& caller = engine::current_stream(device);
  runtime::Stream& communication = communication_stream(device);
  // Fused mode: the ops before it run now, as a program; a point-to-point op is never
  // deferred, for the peer is waiting.
  engine::flush(caller, "collective");
  auto posting = std::make_shared<Posting>();
  const std::string what = std::string(op.name) + " on rank " + std::to_string(rank_);
  // A send reads its tensor; a receive writes it once the transport has finished.
  const bool sends = op.op == c10d::OpType::SEND;
  auto views = std::make_shared<TransportViews>(
      sends ? std::vector<at::Tensor>{op.tensor} : std::vector<at::Tensor>{},
      sends ? std::vector<at::Tensor>{} : std::vector<at::Tensor>{op.tensor});
  caller.enqueue(op.name, [posting, what, views, sends, transport = transport_,
                           post = std::move(op.post)] {
    try {
      run_reporting(what, [&] {
        views->open();
        at::Tensor& view = sends ? views->read().front() : views->written().front();
        posting->posted(post(*transport, view));
      });
    } catch (const std::exception& error) {
      posting->failed(error.what());
      throw;
    }
  });
  communication.enqueue(op.name, [posting, what, views, keep = op.tensor] {
    run_reporting(what, [&] {
      posting->wait_posted()->wait();
      views->close();
    });
  });
  runtime::Event done;
  done.record(communication);
  auto work = c10::make_intrusive<TpuDistWork>(
      rank_, op.op, op.name, device, std::move(done), std::vector<at::Tensor>{op.tensor},
      c10_stream(device, communication), /*sequence=*/0, coverage_);
  work->set_source_rank([posting] { return posting->source_rank(); });
  if (engine::current_policy().waits_for_each_op()) {
    engine::sync_stream(communication, "debug_mode");
  }
  return issued(std::move(work));
}

}  // namespace torch_tpu::distributed
