// The tpu_dist c10d backend: what "nccl" is for cuda, for tpu tensors. The bytes move through a
// transport backend (c10d's Gloo over torchrun's TCPStore), never a home-made socket layer; this
// class adds what Gloo lacks for a device: stream order and stream-ordered completion (see
// collective_launcher.h), a cross-rank check of every call (call_signature.h), and clear errors.
// CPU tensors go to the transport unchanged, so object collectives and CPU barriers work too.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/collective_launcher.h"

namespace torch_tpu::distributed {

class TpuDistBackend : public c10d::Backend {
 public:
  // Three Gloo backends over the same ranks (made by the Python creator function), each used
  // from one place so its calls go out in the same order on every rank: `transport` moves tpu
  // data (from the communication stream), `agreement` the call signatures (posted at issue),
  // `host_transport` CPU tensors and barriers (from the host, as Gloo itself would).
  TpuDistBackend(c10::intrusive_ptr<c10d::Backend> transport,
                 c10::intrusive_ptr<c10d::Backend> agreement,
                 c10::intrusive_ptr<c10d::Backend> host_transport, int rank, int size,
                 std::chrono::milliseconds timeout);
  // Finishes queued collectives (see shutdown()).
  ~TpuDistBackend() override;

  const std::string getBackendName() const override { return "tpu_dist"; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  void setTimeout(std::chrono::milliseconds timeout) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  // Host-blocking on wait(), as NCCL's barrier is; ordered after nothing on the chip.
  // Barriers and CPU tensors use the host transport.
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;

  void startCoalescing() override { launcher_.start_coalescing(); }
  c10::intrusive_ptr<c10d::Work> endCoalescing() override { return launcher_.end_coalescing(); }

  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;
  void abort() override;
  void shutdown() override;

  c10::intrusive_ptr<c10d::Backend> transport() const { return transport_; }
  // Collectives issued on the chip so far, and the signature exchanges that checked them
  // (fewer when calls are issued back to back: signature_agreement.h).
  uint64_t collectives_launched() const { return launcher_.collectives_launched(); }
  uint64_t signature_exchanges() const { return launcher_.signature_exchanges(); }

 private:
  c10::intrusive_ptr<c10d::Backend> transport_;
  c10::intrusive_ptr<c10d::Backend> agreement_;
  c10::intrusive_ptr<c10d::Backend> host_transport_;
  CollectiveLauncher launcher_;
};

}  // namespace torch_tpu::distributed
