// Fused (DeferAndFuse): ops are recorded, not run; a sync point flushes the pending ops as a
// program whose pointwise chains run fused, planned once per structure and cached (DESIGN §4).
// Buffers get chip memory only when something needs their bytes, and autograd may keep
// recipes instead of cheap saved results.
#pragma once

#include "engine/mode.h"

namespace torch_tpu::engine {

class FusedMode final : public ModePolicy {
 public:
  const char* name() const override { return "fused"; }
  std::vector<std::string> aliases() const override { return {"defer_and_fuse"}; }
  bool defers_ops() const override { return true; }
  bool allocates_lazily() const override { return true; }
  bool flushes_after_backward() const override { return true; }
  bool recomputes_saved_results() const override { return true; }
};

}  // namespace torch_tpu::engine
