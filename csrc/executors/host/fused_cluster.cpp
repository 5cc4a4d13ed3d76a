#include "executors/host/fused_cluster.h"

#include <algorithm>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>

#include "executors/host/pointwise_codegen.h"
#include "executors/host/pointwise_loop.h"

namespace torch_tpu::executors::host {
namespace {

// Elements per chunk: a few operands of this size stay in a core's L2 cache. A small iteration
// takes one chunk per thread, up to the larger bound (see run_cluster).
constexpr int64_t kChunkElements = 16384;
constexpr int64_t kMaxChunkElements = 65536;
// Chunks of rows are at least this big: their views are n-dimensional and their reductions
// set up a reduction per call, ~4.5 us for a [2, 64, 128] mean against ~20 us for all 32 rows
// at once, so 16K-element chunks ran RMSNorm's first cluster at twice Strict's time.
constexpr int64_t kMinRowChunkElements = 65536;

bool is_row_major(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// Whether `sizes` broadcasts into `shape` without spanning its dim 0 (so every chunk of rows
// reads all of it).
bool broadcasts_without_rows(c10::IntArrayRef sizes, c10::IntArrayRef shape) {
  if (sizes.size() > shape.size()) return false;
  const size_t lead = shape.size() - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t target = shape[lead + i];
    if (sizes[i] != 1 && sizes[i] != target) return false;
    if (lead + i == 0 && sizes[i] != 1) return false;  // would span the rows
  }
  return true;
}

// Whether `sizes` is sliced along the rows of `shape` without being `shape`: dim 0 is the rows,
// the other dims are `shape`'s or 1 (a keepdim reduction's result), or — for the reduction
// that writes it — any shape starting with the rows.
bool row_shaped(c10::IntArrayRef sizes, c10::IntArrayRef shape, bool written_by_reduction) {
  if (sizes.empty() || shape.size() < 2 || sizes[0] != shape[0]) return false;
  if (written_by_reduction) return true;
  if (sizes.size() != shape.size()) return false;
  for (size_t d = 1; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && sizes[d] != shape[d]) return false;
  }
  return true;
}

int64_t numel_of(c10::IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t size : sizes) n *= size;
  return n;
}

// Chunk-shaped scratch tensors of `dtypes` in this thread's arena, which lives as long as the
// thread: a fresh allocation per run took glibc to mmap for chunk-sized buffers (256 KB), whose
// pages then faulted in on every run (an add, pow and mean cluster over [32, 64, 128] ran
// 143-196 us that way, 79-86 us with glibc's mmap threshold raised).
std::vector<at::Tensor> thread_scratch(const std::vector<c10::ScalarType>& dtypes,
                                       c10::IntArrayRef chunk_shape) {
  constexpr int64_t kAlign = 64;
  const int64_t elements = numel_of(chunk_shape);
  std::vector<int64_t> offsets;
  int64_t bytes = 0;
  for (const c10::ScalarType dtype : dtypes) {
    offsets.push_back(bytes);
    bytes += (elements * static_cast<int64_t>(c10::elementSize(dtype)) + kAlign - 1) / kAlign * kAlign;
  }
  thread_local at::Tensor arena;
  if (!arena.defined() || arena.numel() < bytes) arena = at::empty({bytes}, at::TensorOptions().dtype(at::kByte));
  std::vector<at::Tensor> scratch;
  for (size_t k = 0; k < dtypes.size(); ++k) {
    scratch.push_back(at::from_blob(static_cast<char*>(arena.data_ptr()) + offsets[k], chunk_shape,
                                    at::TensorOptions().dtype(dtypes[k])));
  }
  return scratch;
}

}  // namespace

bool ClusterBuilder::try_add(const FusibleOp& op) {
  const c10::IntArrayRef shape = op.iteration_shape();
  if (ops_.empty()) {
    shape_.assign(shape.begin(), shape.end());
  } else if (shape != c10::IntArrayRef(shape_)) {
    return false;
  }
  // Check every access first; commit only if the op joins.
  std::map<const c10::StorageImpl*, std::vector<Geometry>> accesses = accesses_;
  std::map<const c10::StorageImpl*, bool> written = written_;
  for (const FusedTensor& tensor : op.tensors()) {
    const TensorSnapshot& snapshot = *tensor.snapshot;
    const bool rows = snapshot.sizes() == c10::IntArrayRef(shape_);
    const bool by_rows =
        !rows && row_shaped(snapshot.sizes(), shape_, tensor.written && op.reduces_rows());
    const bool whole = !rows && !by_rows;
    if (whole && (tensor.written || !broadcasts_without_rows(snapshot.sizes(), shape_))) return false;
    accesses[tensor.storage].push_back(Geometry{snapshot.device_data(), snapshot.strides().vec(),
                                                snapshot.dtype(), whole, by_rows,
                                                numel_of(snapshot.sizes())});
    if (tensor.written) written[tensor.storage] = true;
  }
  // A storage the cluster writes must be seen through one geometry, sliced along the rows.
  for (const auto& [storage, is_written] : written) {
    const std::vector<Geometry>& seen = accesses[storage];
    for (const Geometry& geometry : seen) {
      if (geometry.whole || geometry.data != seen.front().data ||
          geometry.strides != seen.front().strides || geometry.dtype != seen.front().dtype) {
        return false;
      }
    }
  }
  for (const FusedTensor& tensor : op.tensors()) {
    if (tensor.read && !written_.count(tensor.storage)) read_before_written_.insert(tensor.storage);
  }
  for (const FusedTensor& tensor : op.tensors()) {
    if (tensor.written && !written_.count(tensor.storage)) written_order_.push_back(tensor.storage);
  }
  accesses_ = std::move(accesses);
  written_ = std::move(written);
  ops_.push_back(&op);
  return true;
}

ClusterPlan ClusterBuilder::finish(
    const std::function<bool(const c10::StorageImpl*)>& internal) const {
  ClusterPlan plan;
  plan.shape = shape_;
  std::map<const c10::StorageImpl*, int> scratch_slot;
  const auto iteration_shaped = [&](const c10::StorageImpl* storage) {
    for (const Geometry& geometry : accesses_.at(storage)) {
      if (geometry.row_shaped) return false;  // scratch is chunks of the iteration's shape
    }
    return true;
  };
  for (const c10::StorageImpl* storage : written_order_) {
    if (!read_before_written_.count(storage) && internal(storage) && iteration_shaped(storage)) {
      scratch_slot[storage] = static_cast<int>(plan.scratch_dtypes.size());
      plan.scratch_dtypes.push_back(accesses_.at(storage).front().dtype);
    }
  }
  const int64_t numel = numel_of(shape_);
  bool flat = true;
  for (const FusibleOp* op : ops_) {
    // A reduction's dims name the iteration's dims: it needs chunks of rows, never flat ones
    // (even when the dims it reduces have size 1 and its result has the iteration's shape).
    if (op->reduces_rows()) flat = false;
    std::vector<ClusterPlan::Access> accesses;
    for (const FusedTensor& tensor : op->tensors()) {
      const TensorSnapshot& snapshot = *tensor.snapshot;
      ClusterPlan::Access access;
      if (auto slot = scratch_slot.find(tensor.storage); slot != scratch_slot.end()) {
        access = {ChunkAccess::kScratch, slot->second};
      } else if (snapshot.sizes() == c10::IntArrayRef(shape_)) {
        access.kind = ChunkAccess::kRows;
        flat = flat && is_row_major(snapshot.sizes(), snapshot.strides());
      } else if (row_shaped(snapshot.sizes(), shape_, tensor.written && op->reduces_rows())) {
        access.kind = ChunkAccess::kRows;  // its own rows: chunks must be rows, not elements
        flat = false;
      } else {
        access.kind = ChunkAccess::kWhole;
        flat = flat && numel_of(snapshot.sizes()) == 1;
      }
      accesses.push_back(access);
    }
    plan.accesses.push_back(std::move(accesses));
  }
  plan.flat = flat || shape_.empty();
  plan.pointwise_kernel = std::make_shared<PointwiseKernelSlot>();
  const auto bytes_of = [&](const c10::StorageImpl* storage) {
    const Geometry& geometry = accesses_.at(storage).front();
    return geometry.numel * static_cast<int64_t>(c10::elementSize(geometry.dtype));
  };
  for (const c10::StorageImpl* storage : written_order_) {
    (scratch_slot.count(storage) ? plan.bytes_avoided : plan.bytes_written) += bytes_of(storage);
  }
  return plan;
}

void run_cluster(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops) {
  TORCH_INTERNAL_ASSERT(ops.size() == plan.accesses.size());
  if (pointwise_loop_supports(plan, ops)) {
    run_pointwise_loop(plan, ops);
    return;
  }
  const c10::IntArrayRef shape(plan.shape);
  const int64_t numel = numel_of(shape);
  if (numel == 0) {
    // Nothing to iterate, but a reduction over empty rows still writes its result (a sum of
    // nothing is 0): run each op once on whole, empty views.
    std::vector<at::Tensor> scratch;
    for (c10::ScalarType dtype : plan.scratch_dtypes) {
      scratch.push_back(at::empty(shape, at::TensorOptions().dtype(dtype)));
    }
    for (size_t o = 0; o < ops.size(); ++o) {
      const std::vector<FusedTensor>& tensors = ops[o]->tensors();
      const std::vector<ClusterPlan::Access>& accesses = plan.accesses[o];
      ops[o]->run([&](size_t i) -> at::Tensor {
        if (accesses[i].kind == ChunkAccess::kScratch) {
          return scratch[static_cast<size_t>(accesses[i].scratch_slot)];
        }
        return tensors[i].snapshot->cpu_view();
      });
    }
    return;
  }
  // A chunk is `step` units: elements (flat) or rows of dim 0. Each op runs its CPU kernel
  // once per chunk, at a few µs of fixed cost per call, so an iteration small enough to split
  // over the team in chunks of at most kMaxChunkElements runs one chunk per thread; larger
  // ones run in cache-sized chunks.
  const int64_t units = plan.flat ? numel : shape[0];
  const int64_t row_elements = plan.flat ? 1 : std::max<int64_t>(numel / shape[0], 1);
  const int64_t threads = std::max<int64_t>(at::get_num_threads(), 1);
  const int64_t per_thread = (numel + threads - 1) / threads;
  const int64_t chunk_elements =
      per_thread <= kMaxChunkElements ? std::max(per_thread, kChunkElements)
                                      : (plan.flat ? kChunkElements : kMinRowChunkElements);
  const int64_t step = std::max<int64_t>(chunk_elements / row_elements, 1);
  const int64_t chunks = (units + step - 1) / step;
  std::vector<int64_t> chunk_shape = plan.flat ? std::vector<int64_t>{step} : plan.shape;
  if (!plan.flat) chunk_shape[0] = step;
  // A 0-dim iteration keeps 0-dim views: some ops require a 0-dim operand (masked_fill_'s
  // value), and a [1] chunk is not one.
  const bool scalar = shape.empty();
  if (scalar) chunk_shape.clear();

  // Chip memory is resolved once per run, not per chunk: resolving a lazy buffer's first use
  // allocates it under a lock, which every thread's first chunk would contend for. Broadcast
  // operands are the same view in every chunk, so they are made once too.
  struct Resolved {
    char* rows = nullptr;  // kRows: host address of element 0
    at::Tensor whole;      // kWhole: the view every chunk reads
  };
  std::vector<std::vector<Resolved>> resolved(ops.size());
  for (size_t o = 0; o < ops.size(); ++o) {
    const std::vector<FusedTensor>& tensors = ops[o]->tensors();
    resolved[o].resize(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorSnapshot& snapshot = *tensors[i].snapshot;
      switch (plan.accesses[o][i].kind) {
        case ChunkAccess::kScratch:
          break;
        case ChunkAccess::kWhole:
          resolved[o][i].whole = plan.flat ? cpu_view_of(snapshot.device_data(), {}, {}, snapshot.dtype())
                                           : snapshot.cpu_view();
          break;
        case ChunkAccess::kRows:
          resolved[o][i].rows = static_cast<char*>(host_address(snapshot.device_data()));
          break;
      }
    }
  }

  at::parallel_for(0, chunks, 1, [&](int64_t first_chunk, int64_t end_chunk) {
    // Scratch per thread, reused by every chunk it runs.
    const std::vector<at::Tensor> scratch = thread_scratch(plan.scratch_dtypes, chunk_shape);
    for (int64_t chunk = first_chunk; chunk < end_chunk; ++chunk) {
      const int64_t begin = chunk * step;
      const int64_t length = std::min(step, units - begin);
      for (size_t o = 0; o < ops.size(); ++o) {
        const std::vector<FusedTensor>& tensors = ops[o]->tensors();
        const std::vector<ClusterPlan::Access>& accesses = plan.accesses[o];
        ops[o]->run([&](size_t i) -> at::Tensor {
          switch (accesses[i].kind) {
            case ChunkAccess::kScratch: {
              const at::Tensor& slot = scratch[static_cast<size_t>(accesses[i].scratch_slot)];
              return scalar ? slot : slot.narrow(0, 0, length);
            }
            case ChunkAccess::kWhole:
              return resolved[o][i].whole;
            case ChunkAccess::kRows:
              break;
          }
          const TensorSnapshot& snapshot = *tensors[i].snapshot;
          char* base = resolved[o][i].rows;
          const int64_t item = static_cast<int64_t>(c10::elementSize(snapshot.dtype()));
          if (scalar) return cpu_view_of_host(base, {}, {}, snapshot.dtype());
          if (plan.flat) return cpu_view_of_host(base + begin * item, {length}, {1}, snapshot.dtype());
          c10::SmallVector<int64_t, 8> sizes(snapshot.sizes().begin(), snapshot.sizes().end());
          sizes[0] = length;
          return cpu_view_of_host(base + begin * snapshot.strides()[0] * item, sizes,
                                  snapshot.strides(), snapshot.dtype());
        });
      }
    }
  });
}

}  // namespace torch_tpu::executors::host
