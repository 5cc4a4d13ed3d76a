// The Strict-mode program cache for one-op programs (DESIGN §2): what an op's Meta kernel
// said about its outputs, keyed by the op and its inputs' structure (dtypes, sizes, strides,
// non-tensor arguments). A training loop repeats the same ops on the same shapes, so after the
// first step no op pays for shape inference (PyTorch's Meta kernels for many ops are Python).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "executors/executor.h"
#include "ops/boxed_args.h"
#include "ops/op_plan.h"

namespace torch_tpu::ops {

// How to make one returned tensor.
struct TensorSpec {
  enum class Kind { kUndefined, kFresh, kMutatedArgument, kViewOfArgument };
  Kind kind = Kind::kUndefined;
  c10::SmallVector<int64_t, 5> sizes;
  c10::SmallVector<int64_t, 5> strides;
  int64_t storage_offset = 0;  // kViewOfArgument: offset relative to the base's
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  int position = -1;  // kMutatedArgument: flattened tensor position; kViewOfArgument: arg index
};

// One return of the op: None, a tensor, or a list of tensors. A cached entry holding a single
// kSyncFallback says calls of this structure need data (the Meta kernel cannot shape them).
struct ReturnSpec {
  enum class Kind { kNone, kTensor, kTensorList, kSyncFallback };
  Kind kind = Kind::kNone;
  std::vector<TensorSpec> tensors;  // one for kTensor
};

using OutputSpecs = std::vector<ReturnSpec>;

// The structural key of a call: op identity (its plan) plus every argument's structure.
using CallSignature = std::vector<int64_t>;
CallSignature call_signature(const OpPlan& plan, BoxedArgs args);

// A cached call: its outputs and, once a Strict or Debug call of its structure has run, the
// one-node program it runs as (engine::compile_one_node). Calls of one signature differ in IR
// only in which arguments share a storage and where in it they lie, which the host executor's
// one-node programs do not depend on; an executor with opaque buffers compiles from the IR,
// so its one-node programs are looked up by the program's structure on every call
// (engine::compile_and_bind_one_node), and the entry only remembers that the executor could not
// express the op. TODO(#22): key aliasing and offsets here too, sparing that lookup.
class CachedCall {
 public:
  explicit CachedCall(OutputSpecs outputs) : outputs(std::move(outputs)) {}
  const OutputSpecs outputs;

  // The one-node program, or null before the first Strict or Debug call. Thread-safe; the
  // hot path is one acquire load (set once, never changed after).
  std::shared_ptr<const executors::Executable> one_node() const {
    return has_one_node_.load(std::memory_order_acquire) ? one_node_ : nullptr;
  }
  // Keeps `executable` unless another thread kept one first; returns the one kept.
  std::shared_ptr<const executors::Executable> keep_one_node(
      std::shared_ptr<const executors::Executable> executable) const;

  // What an executor with opaque buffers said of calls of this structure: it can express them,
  // or not (executors::NotSupported: they run on host kernels through host copies,
  // ops/host_copies.h), or nothing yet. Thread-safe.
  bool runs_on_host() const { return on_executor_.load(std::memory_order_relaxed) == kRunsOnHost; }
  bool expressible() const { return on_executor_.load(std::memory_order_relaxed) == kExpressible; }
  void mark_runs_on_host() const { on_executor_.store(kRunsOnHost, std::memory_order_relaxed); }
  void mark_expressible() const { on_executor_.store(kExpressible, std::memory_order_relaxed); }

 private:
  mutable std::mutex setting_;
  mutable std::shared_ptr<const executors::Executable> one_node_;
  mutable std::atomic<bool> has_one_node_{false};
  enum : uint8_t { kNotAsked, kExpressible, kRunsOnHost };
  mutable std::atomic<uint8_t> on_executor_{kNotAsked};
};

// Thread-safe lookup/insert. A full cache is cleared (it only ever holds re-derivable data).
// Entries are shared, so a hit costs a refcount, not a copy.
using SharedCachedCall = std::shared_ptr<const CachedCall>;
SharedCachedCall lookup_call(const CallSignature& signature);  // nullptr on a miss
void store_call(CallSignature signature, SharedCachedCall call);

struct ShapeCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
};
ShapeCacheStats shape_cache_stats();
// Zeroes the hit/miss counters (entries stay cached).
void reset_shape_cache_stats();

}  // namespace torch_tpu::ops
