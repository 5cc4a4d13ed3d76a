// Pointwise chains in one pass over memory (DeferAndFuse, DESIGN §2). A cluster of fusible ops
// that iterate one shape runs chunk by chunk: every op on a cache-sized chunk before the next
// chunk, so each element makes one trip from chip memory and back. Intermediates that nothing
// outside the cluster reads live only in chunk-sized scratch and are never written to chip
// memory. Each op still runs PyTorch's own CPU kernel, on chunk views.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "executors/host/fusible_op.h"

namespace torch_tpu::executors::host {

// How one op's tensor is viewed in a chunk.
enum class ChunkAccess : uint8_t {
  kRows,     // shaped like the iteration: the chunk's slice of it
  kWhole,    // broadcast to the iteration (read only): all of it, in every chunk
  kScratch,  // an intermediate only the cluster reads: a chunk-sized scratch buffer
};

class PointwiseKernelSlot;  // executors/host/pointwise_codegen.h

struct ClusterPlan {
  std::vector<int64_t> shape;  // the iteration shape
  // Chunks of elements (every sliced tensor contiguous, broadcasts are single values), else
  // chunks of rows of dim 0.
  bool flat = false;
  struct Access {
    ChunkAccess kind = ChunkAccess::kRows;
    int scratch_slot = -1;
  };
  std::vector<std::vector<Access>> accesses;  // per op, per tensor
  std::vector<c10::ScalarType> scratch_dtypes;  // per scratch slot
  int64_t bytes_written = 0;  // chip memory the cluster writes
  int64_t bytes_avoided = 0;  // intermediate bytes kept in scratch instead
  // The compiled kernel of a register-level loop, shared by every run of the cached plan.
  std::shared_ptr<PointwiseKernelSlot> pointwise_kernel;
};

// Grows a cluster op by op. An op joins if it iterates the same shape, every tensor it touches
// is sliced along the iteration or broadcast into it, and every storage the cluster writes is
// accessed through one and the same geometry (so chunk order cannot reorder a dependency).
// A reduction over non-leading dims (FusibleOp::reduces_rows) joins too: its result, and later
// reads of it shaped [rows, 1, ...], are sliced along dim 0 like the iteration, so the cluster
// runs by chunks of rows.
class ClusterBuilder {
 public:
  bool try_add(const FusibleOp& op);
  size_t size() const { return ops_.size(); }
  // Storages the cluster writes, in first-written order.
  const std::vector<const c10::StorageImpl*>& written() const { return written_order_; }
  // The plan; `internal(storage)` says whether a written storage may stay in scratch (only
  // storages the cluster writes before it reads them can).
  ClusterPlan finish(const std::function<bool(const c10::StorageImpl*)>& internal) const;

 private:
  struct Geometry {
    const void* data;
    std::vector<int64_t> strides;
    c10::ScalarType dtype;
    bool whole;        // broadcast into every chunk
    bool row_shaped;   // sliced along dim 0 but not the iteration's shape (a reduction's rows)
    int64_t numel;
  };
  std::vector<const FusibleOp*> ops_;
  std::vector<int64_t> shape_;
  std::map<const c10::StorageImpl*, std::vector<Geometry>> accesses_;
  std::map<const c10::StorageImpl*, bool> written_;
  std::vector<const c10::StorageImpl*> written_order_;
  // Storages whose contents from before the cluster some op reads (never scratch-only).
  std::set<const c10::StorageImpl*> read_before_written_;
};

// Runs the cluster's ops (in planned order) chunk by chunk; chunks run in parallel on the
// calling thread's intra-op team.
void run_cluster(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops);

}  // namespace torch_tpu::executors::host
