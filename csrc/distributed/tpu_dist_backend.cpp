#include "distributed/tpu_dist_backend.h"

#include <utility>

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include "distributed/c10d_names.h"
#include "distributed/tensor_rules.h"

namespace torch_tpu::distributed {

using c10d::OpType;
using c10d::ReduceOp;

TpuDistBackend::TpuDistBackend(c10::intrusive_ptr<c10d::Backend> transport,
                               c10::intrusive_ptr<c10d::Backend> agreement,
                               c10::intrusive_ptr<c10d::Backend> host_transport, int rank,
                               int size, std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      transport_(std::move(transport)),
      agreement_(std::move(agreement)),
      host_transport_(std::move(host_transport)),
      launcher_(transport_, agreement_, rank, size) {
  TORCH_CHECK(transport_ && agreement_ && host_transport_,
              "tpu_dist: transport backends are required");
  setTimeout(timeout);
}

TpuDistBackend::~TpuDistBackend() { launcher_.drain(); }

c10::intrusive_ptr<c10d::Backend::Options> TpuDistBackend::getBackendOptions() {
  auto options = c10::make_intrusive<Options>("tpu_dist");
  try {
    options->timeout = transport_->getBackendOptions()->timeout;
  } catch (const c10::Error&) {
    // The transport does not report options: the default timeout stands.
  }
  return options;
}

void TpuDistBackend::setTimeout(std::chrono::milliseconds timeout) {
  for (const auto& backend : {transport_, agreement_, host_transport_}) backend->setTimeout(timeout);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::broadcast(TensorList& tensors,
                                                         const c10d::BroadcastOptions& opts) {
  if (!check_call("broadcast", {&tensors})) return host_transport_->broadcast(tensors, opts);
  check_count("broadcast", tensors.size(), 1, "tensor");
  Collective call{OpType::BROADCAST, "tpu_dist::broadcast",
                  signature_of(OpType::BROADCAST, tensors[0], -1, opts.rootRank), {}, tensors, {}};
  call.run = [opts](c10d::Backend& transport, TensorList&, TensorList& outputs) {
    TensorList moved = movable(outputs);
    transport.broadcast(moved, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allreduce(TensorList& tensors,
                                                         const c10d::AllreduceOptions& opts) {
  if (!check_call("all_reduce", {&tensors})) return host_transport_->allreduce(tensors, opts);
  check_count("all_reduce", tensors.size(), 1, "tensor");
  check_reducible("all_reduce", tensors[0], opts.reduceOp);
  const Reduction reduction = reduction_of(opts.reduceOp);
  Collective call{OpType::ALLREDUCE, "tpu_dist::all_reduce",
                  signature_of(OpType::ALLREDUCE, tensors[0], opts.reduceOp.op_), {}, tensors, {}};
  if (reduction.factor_tensor) call.inputs.push_back(*reduction.factor_tensor);
  call.run = [opts, reduction](c10d::Backend& transport, TensorList& inputs, TensorList& outputs) {
    premultiply(reduction, outputs[0], inputs.empty() ? nullptr : &inputs[0]);
    TensorList reduced = reducible(outputs);
    c10d::AllreduceOptions transport_opts = opts;
    transport_opts.reduceOp = reduction.op;
    transport.allreduce(reduced, transport_opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allreduce_coalesced(
    TensorList& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  if (!check_call("all_reduce_coalesced", {&tensors})) {
    return host_transport_->allreduce_coalesced(tensors, opts);
  }
  for (const at::Tensor& tensor : tensors) check_reducible("all_reduce_coalesced", tensor, opts.reduceOp);
  TORCH_CHECK(opts.reduceOp.op_ != ReduceOp::PREMUL_SUM,
              "tpu_dist: all_reduce_coalesced does not support PREMUL_SUM yet");
  Collective call{OpType::ALLREDUCE_COALESCED, "tpu_dist::all_reduce_coalesced",
                  signature_of_many(OpType::ALLREDUCE_COALESCED, tensors, opts.reduceOp.op_), {},
                  tensors, {}};
  call.run = [opts](c10d::Backend& transport, TensorList&, TensorList& outputs) {
    TensorList reduced = reducible(outputs);
    transport.allreduce_coalesced(reduced, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::reduce(TensorList& tensors,
                                                      const c10d::ReduceOptions& opts) {
  if (!check_call("reduce", {&tensors})) return host_transport_->reduce(tensors, opts);
  check_count("reduce", tensors.size(), 1, "tensor");
  check_reducible("reduce", tensors[0], opts.reduceOp);
  const Reduction reduction = reduction_of(opts.reduceOp);
  Collective call{OpType::REDUCE, "tpu_dist::reduce",
                  signature_of(OpType::REDUCE, tensors[0], opts.reduceOp.op_, opts.rootRank), {},
                  tensors, {}};
  if (reduction.factor_tensor) call.inputs.push_back(*reduction.factor_tensor);
  call.run = [opts, reduction](c10d::Backend& transport, TensorList& inputs, TensorList& outputs) {
    premultiply(reduction, outputs[0], inputs.empty() ? nullptr : &inputs[0]);
    TensorList reduced = reducible(outputs);
    c10d::ReduceOptions transport_opts = opts;
    transport_opts.reduceOp = reduction.op;
    transport.reduce(reduced, transport_opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allgather(std::vector<TensorList>& outputs,
                                                         TensorList& inputs,
                                                         const c10d::AllgatherOptions& opts) {
  TensorList flat_outputs = flatten(outputs);
  if (!check_call("all_gather", {&inputs, &flat_outputs})) {
    return host_transport_->allgather(outputs, inputs, opts);
  }
  check_count("all_gather", inputs.size(), 1, "input tensor");
  check_count("all_gather", outputs.size(), 1, "output list");
  check_count("all_gather", outputs[0].size(), static_cast<size_t>(getSize()), "output tensors");
  TORCH_CHECK(outputs[0][getRank()].sizes() == inputs[0].sizes(), "tpu_dist: all_gather: ",
              "this rank's output tensor must have the input's sizes ", inputs[0].sizes(),
              ", got ", outputs[0][getRank()].sizes());
  bool even = true;
  for (const at::Tensor& output : outputs[0]) even = even && output.sizes() == inputs[0].sizes();
  Collective call{OpType::ALLGATHER, "tpu_dist::all_gather",
                  signature_of(OpType::ALLGATHER, inputs[0], -1, -1, /*shape_checked=*/even),
                  inputs, flat_outputs, {}};
  if (even) {
    call.run = [opts](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
      TensorList moved_inputs = movable(ins);
      std::vector<TensorList> moved_outputs{movable(outs)};
      transport.allgather(moved_outputs, moved_inputs, opts)->wait();
    };
  } else {
    // Ranks contribute different sizes (as NCCL allows): each rank's part is a broadcast.
    call.run = [rank = getRank()](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
      outs[static_cast<size_t>(rank)].copy_(ins[0]);
      for (size_t root = 0; root < outs.size(); ++root) {
        TensorList part{movable(outs[root])};
        c10d::BroadcastOptions broadcast;
        broadcast.rootRank = static_cast<int64_t>(root);
        transport.broadcast(part, broadcast)->wait();
      }
    };
  }
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::_allgather_base(at::Tensor& output,
                                                               at::Tensor& input,
                                                               const c10d::AllgatherOptions& opts) {
  TensorList inputs{input};
  TensorList outputs{output};
  if (!check_call("all_gather_into_tensor", {&inputs, &outputs})) {
    return host_transport_->_allgather_base(output, input, opts);
  }
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "tpu_dist: all_gather_into_tensor: ",
              "the output must hold world_size (", getSize(), ") times the input's ",
              input.numel(), " elements, got ", output.numel());
  Collective call{OpType::_ALLGATHER_BASE, "tpu_dist::all_gather_into_tensor",
                  signature_of(OpType::_ALLGATHER_BASE, input), inputs, outputs, {}};
  call.run = [opts](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    at::Tensor moved_output = flat(movable(outs[0]));  // Gloo takes flat buffers
    at::Tensor moved_input = flat(movable(ins[0]));
    transport._allgather_base(moved_output, moved_input, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allgather_coalesced(
    std::vector<TensorList>& outputs, TensorList& inputs, const c10d::AllgatherOptions& opts) {
  TensorList flat_outputs = flatten(outputs);
  if (!check_call("all_gather_coalesced", {&inputs, &flat_outputs})) {
    return host_transport_->allgather_coalesced(outputs, inputs, opts);
  }
  check_count("all_gather_coalesced", outputs.size(), static_cast<size_t>(getSize()), "output lists");
  for (const TensorList& list : outputs) {
    check_count("all_gather_coalesced", list.size(), inputs.size(), "tensors per output list");
  }
  const size_t per_rank = inputs.size();
  Collective call{OpType::ALLGATHER_COALESCED, "tpu_dist::all_gather_coalesced",
                  signature_of_many(OpType::ALLGATHER_COALESCED, inputs), inputs, flat_outputs, {}};
  call.run = [opts, per_rank](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    std::vector<TensorList> lists;
    for (size_t start = 0; start < outs.size(); start += per_rank) {
      lists.emplace_back(outs.begin() + start, outs.begin() + start + per_rank);
    }
    transport.allgather_coalesced(lists, ins, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allgather_into_tensor_coalesced(
    TensorList& outputs, TensorList& inputs, const c10d::AllgatherOptions& opts) {
  if (!check_call("all_gather_into_tensor_coalesced", {&inputs, &outputs})) {
    return host_transport_->allgather_into_tensor_coalesced(outputs, inputs, opts);
  }
  check_count("all_gather_into_tensor_coalesced", outputs.size(), inputs.size(), "outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * getSize(),
                "tpu_dist: all_gather_into_tensor_coalesced: output ", i, " must hold world_size ",
                "times input ", i, "'s elements");
  }
  Collective call{OpType::COALESCED, "tpu_dist::all_gather_into_tensor_coalesced",
                  signature_of_many(OpType::COALESCED, inputs), inputs, outputs, {}};
  call.run = [opts](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    for (size_t i = 0; i < ins.size(); ++i) {
      at::Tensor moved_output = flat(movable(outs[i]));
      at::Tensor moved_input = flat(movable(ins[i]));
      transport._allgather_base(moved_output, moved_input, opts)->wait();
    }
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::gather(std::vector<TensorList>& outputs,
                                                      TensorList& inputs,
                                                      const c10d::GatherOptions& opts) {
  TensorList flat_outputs = flatten(outputs);
  if (!check_call("gather", {&inputs, &flat_outputs})) return host_transport_->gather(outputs, inputs, opts);
  check_count("gather", inputs.size(), 1, "input tensor");
  if (getRank() == opts.rootRank) {
    check_count("gather", outputs.size(), 1, "output list on the root");
    check_count("gather", outputs[0].size(), static_cast<size_t>(getSize()), "output tensors on the root");
    check_same_sizes("gather", outputs[0], inputs[0].sizes(), "output tensor");
  } else {
    check_count("gather", flat_outputs.size(), 0, "output tensors off the root");
  }
  const bool is_root = getRank() == opts.rootRank;
  Collective call{OpType::GATHER, "tpu_dist::gather",
                  signature_of(OpType::GATHER, inputs[0], -1, opts.rootRank), inputs, flat_outputs,
                  {}};
  call.run = [opts, is_root](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    TensorList moved_inputs = movable(ins);
    std::vector<TensorList> moved_outputs;
    if (is_root) moved_outputs.push_back(movable(outs));
    transport.gather(moved_outputs, moved_inputs, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::scatter(TensorList& outputs,
                                                       std::vector<TensorList>& inputs,
                                                       const c10d::ScatterOptions& opts) {
  TensorList flat_inputs = flatten(inputs);
  if (!check_call("scatter", {&outputs, &flat_inputs})) return host_transport_->scatter(outputs, inputs, opts);
  check_count("scatter", outputs.size(), 1, "output tensor");
  const bool is_root = getRank() == opts.rootRank;
  if (is_root) {
    check_count("scatter", inputs.size(), 1, "input list on the root");
    check_count("scatter", inputs[0].size(), static_cast<size_t>(getSize()), "input tensors on the root");
    check_same_sizes("scatter", inputs[0], outputs[0].sizes(), "input tensor");
  } else {
    check_count("scatter", flat_inputs.size(), 0, "input tensors off the root");
  }
  Collective call{OpType::SCATTER, "tpu_dist::scatter",
                  signature_of(OpType::SCATTER, outputs[0], -1, opts.rootRank), flat_inputs,
                  outputs, {}};
  call.run = [opts, is_root](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    TensorList moved_outputs = movable(outs);
    std::vector<TensorList> moved_inputs;
    if (is_root) moved_inputs.push_back(movable(ins));
    transport.scatter(moved_outputs, moved_inputs, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                              std::vector<TensorList>& inputs,
                                                              const c10d::ReduceScatterOptions& opts) {
  TensorList flat_inputs = flatten(inputs);
  if (!check_call("reduce_scatter", {&outputs, &flat_inputs})) {
    return host_transport_->reduce_scatter(outputs, inputs, opts);
  }
  check_count("reduce_scatter", outputs.size(), 1, "output tensor");
  check_count("reduce_scatter", inputs.size(), 1, "input list");
  check_count("reduce_scatter", inputs[0].size(), static_cast<size_t>(getSize()), "input tensors");
  check_same_sizes("reduce_scatter", inputs[0], outputs[0].sizes(), "input tensor");
  check_reducible("reduce_scatter", outputs[0], opts.reduceOp);
  TORCH_CHECK(opts.reduceOp.op_ != ReduceOp::PREMUL_SUM,
              "tpu_dist: reduce_scatter (list form) does not support PREMUL_SUM yet; use "
              "reduce_scatter_tensor");
  Collective call{OpType::REDUCE_SCATTER, "tpu_dist::reduce_scatter",
                  signature_of(OpType::REDUCE_SCATTER, outputs[0], opts.reduceOp.op_), flat_inputs,
                  outputs, {}};
  call.run = [opts](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    TensorList reduced_outputs = reducible(outs);
    std::vector<TensorList> reduced_inputs{reducible(ins)};
    transport.reduce_scatter(reduced_outputs, reduced_inputs, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  TensorList inputs{input};
  TensorList outputs{output};
  if (!check_call("reduce_scatter_tensor", {&inputs, &outputs})) {
    return host_transport_->_reduce_scatter_base(output, input, opts);
  }
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "tpu_dist: reduce_scatter_tensor: ",
              "the input must hold world_size (", getSize(), ") times the output's ",
              output.numel(), " elements, got ", input.numel());
  check_reducible("reduce_scatter_tensor", output, opts.reduceOp);
  const Reduction reduction = reduction_of(opts.reduceOp);
  Collective call{OpType::_REDUCE_SCATTER_BASE, "tpu_dist::reduce_scatter_tensor",
                  signature_of(OpType::_REDUCE_SCATTER_BASE, input, opts.reduceOp.op_), inputs,
                  outputs, {}};
  if (reduction.factor_tensor) call.inputs.push_back(*reduction.factor_tensor);
  call.run = [opts, reduction](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    at::Tensor source = ins[0];
    if (reduction.factor || reduction.factor_tensor) {
      source = ins[0].clone();  // the caller's input must stay unscaled
      premultiply(reduction, source, ins.size() > 1 ? &ins[1] : nullptr);
    }
    at::Tensor reduced_output = flat(reducible(outs[0]));  // Gloo takes flat buffers
    at::Tensor reduced_input = flat(reducible(source));
    c10d::ReduceScatterOptions transport_opts = opts;
    transport_opts.reduceOp = reduction.op;
    transport._reduce_scatter_base(reduced_output, reduced_input, transport_opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::reduce_scatter_tensor_coalesced(
    TensorList& outputs, TensorList& inputs, const c10d::ReduceScatterOptions& opts) {
  if (!check_call("reduce_scatter_tensor_coalesced", {&inputs, &outputs})) {
    return host_transport_->reduce_scatter_tensor_coalesced(outputs, inputs, opts);
  }
  check_count("reduce_scatter_tensor_coalesced", outputs.size(), inputs.size(), "outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * getSize(),
                "tpu_dist: reduce_scatter_tensor_coalesced: input ", i, " must hold world_size ",
                "times output ", i, "'s elements");
    check_reducible("reduce_scatter_tensor_coalesced", outputs[i], opts.reduceOp);
  }
  TORCH_CHECK(opts.reduceOp.op_ != ReduceOp::PREMUL_SUM,
              "tpu_dist: reduce_scatter_tensor_coalesced does not support PREMUL_SUM yet");
  Collective call{kReduceScatterTensorCoalesced,
                  "tpu_dist::reduce_scatter_tensor_coalesced",
                  signature_of_many(kReduceScatterTensorCoalesced, inputs,
                                    opts.reduceOp.op_),
                  inputs, outputs, {}};
  call.run = [opts](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    for (size_t i = 0; i < ins.size(); ++i) {
      at::Tensor reduced_output = flat(reducible(outs[i]));
      at::Tensor reduced_input = flat(reducible(ins[i]));
      transport._reduce_scatter_base(reduced_output, reduced_input, opts)->wait();
    }
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                             std::vector<int64_t>& output_split_sizes,
                                                             std::vector<int64_t>& input_split_sizes,
                                                             const c10d::AllToAllOptions& opts) {
  TensorList inputs{input};
  TensorList outputs{output};
  if (!check_call("all_to_all_single", {&inputs, &outputs})) {
    return host_transport_->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
  }
  const auto check_splits = [&](const std::vector<int64_t>& splits, const at::Tensor& tensor,
                                const char* which) {
    if (splits.empty()) {
      TORCH_CHECK(tensor.dim() > 0 && tensor.size(0) % getSize() == 0, "tpu_dist: ",
                  "all_to_all_single without ", which, " split sizes needs dim 0 divisible by "
                  "world_size (", getSize(), "), got sizes ", tensor.sizes());
      return;
    }
    check_count("all_to_all_single", splits.size(), static_cast<size_t>(getSize()), which);
    int64_t rows = 0;
    for (int64_t split : splits) rows += split;
    TORCH_CHECK(tensor.dim() > 0 && rows == tensor.size(0), "tpu_dist: all_to_all_single: ",
                which, " split sizes add up to ", rows, " rows but the tensor has sizes ",
                tensor.sizes());
  };
  for (const at::Tensor* tensor : {&input, &output}) {
    TORCH_CHECK(tensor->is_contiguous(), "tpu_dist: all_to_all_single needs row-major contiguous ",
                "tensors (splits count rows), got strides ", tensor->strides());
  }
  check_splits(input_split_sizes, input, "input");
  check_splits(output_split_sizes, output, "output");
  const bool even = input_split_sizes.empty() && output_split_sizes.empty();
  Collective call{OpType::ALLTOALL_BASE, "tpu_dist::all_to_all_single",
                  signature_of(OpType::ALLTOALL_BASE, input, -1, -1, /*shape_checked=*/even),
                  inputs, outputs, {}};
  call.run = [opts, output_splits = output_split_sizes, input_splits = input_split_sizes](
                 c10d::Backend& transport, TensorList& ins, TensorList& outs) mutable {
    at::Tensor moved_output = movable(outs[0], /*keep_rows=*/true);
    at::Tensor moved_input = movable(ins[0], /*keep_rows=*/true);
    // Gloo takes the split vectors over (moves them): a task that runs once may hand its own.
    transport.alltoall_base(moved_output, moved_input, output_splits, input_splits, opts)->wait();
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::alltoall(TensorList& outputs, TensorList& inputs,
                                                        const c10d::AllToAllOptions& opts) {
  if (!check_call("all_to_all", {&inputs, &outputs})) return host_transport_->alltoall(outputs, inputs, opts);
  check_count("all_to_all", inputs.size(), static_cast<size_t>(getSize()), "input tensors");
  check_count("all_to_all", outputs.size(), static_cast<size_t>(getSize()), "output tensors");
  CallSignature signature = signature_of(OpType::ALLTOALL, inputs[0], -1, -1, /*shape_checked=*/false);
  Collective call{OpType::ALLTOALL, "tpu_dist::all_to_all", signature, inputs, outputs, {}};
  // Any sizes (as NCCL allows): the parts travel as bytes through one all_to_all_single.
  call.run = [opts](c10d::Backend& transport, TensorList& ins, TensorList& outs) {
    const auto bytes_of = [](const TensorList& views, std::vector<int64_t>& splits) {
      TensorList parts;
      for (const at::Tensor& view : views) {
        parts.push_back(flat(view).view(at::kByte));
        splits.push_back(parts.back().numel());
      }
      return parts;
    };
    std::vector<int64_t> input_splits;
    std::vector<int64_t> output_splits;
    at::Tensor sent = at::cat(bytes_of(ins, input_splits));
    const TensorList received_parts = bytes_of(outs, output_splits);
    int64_t received_bytes = 0;
    for (int64_t split : output_splits) received_bytes += split;
    at::Tensor received = at::empty({received_bytes}, at::TensorOptions().dtype(at::kByte));
    // Gloo takes the split vectors over (moves them): hand it copies.
    std::vector<int64_t> output_counts = output_splits;
    std::vector<int64_t> input_counts = input_splits;
    transport.alltoall_base(received, sent, output_counts, input_counts, opts)->wait();
    int64_t offset = 0;
    for (size_t i = 0; i < received_parts.size(); ++i) {
      received_parts[i].copy_(received.narrow(0, offset, output_splits[i]));
      offset += output_splits[i];
    }
  };
  return launcher_.launch(std::move(call));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::send(TensorList& tensors, int dst_rank, int tag) {
  if (!check_call("send", {&tensors})) return host_transport_->send(tensors, dst_rank, tag);
  check_count("send", tensors.size(), 1, "tensor");
  PointToPoint op{OpType::SEND, "tpu_dist::send", tensors[0], {}};
  op.post = [dst_rank, tag](c10d::Backend& transport, at::Tensor& view) {
    TensorList moved{movable(view)};
    return transport.send(moved, dst_rank, tag);
  };
  return launcher_.launch(std::move(op));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::recv(TensorList& tensors, int src_rank, int tag) {
  if (!check_call("recv", {&tensors})) return host_transport_->recv(tensors, src_rank, tag);
  check_count("recv", tensors.size(), 1, "tensor");
  PointToPoint op{OpType::RECV, "tpu_dist::recv", tensors[0], {}};
  op.post = [src_rank, tag](c10d::Backend& transport, at::Tensor& view) {
    TensorList moved{movable(view)};
    return transport.recv(moved, src_rank, tag);
  };
  return launcher_.launch(std::move(op));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::recvAnysource(TensorList& tensors, int tag) {
  if (!check_call("recv", {&tensors})) return host_transport_->recvAnysource(tensors, tag);
  check_count("recv", tensors.size(), 1, "tensor");
  PointToPoint op{OpType::RECVANYSOURCE, "tpu_dist::recv_any_source", tensors[0], {}};
  op.post = [tag](c10d::Backend& transport, at::Tensor& view) {
    TensorList moved{movable(view)};
    return transport.recvAnysource(moved, tag);
  };
  return launcher_.launch(std::move(op));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::barrier(const c10d::BarrierOptions& opts) {
  return host_transport_->barrier(opts);
}

void TpuDistBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  host_transport_->monitoredBarrier(opts, wait_all_ranks);
}

void TpuDistBackend::setSequenceNumberForGroup() { transport_->setSequenceNumberForGroup(); }

uint64_t TpuDistBackend::getSequenceNumberForGroup() {
  return host_transport_->getSequenceNumberForGroup();
}

void TpuDistBackend::abort() {
  transport_->abort();
  agreement_->abort();
}

void TpuDistBackend::shutdown() {
  transport_->shutdown();
  agreement_->shutdown();
}

}  // namespace torch_tpu::distributed
