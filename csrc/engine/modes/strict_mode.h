// Strict (the default): asynchronous eager, like CUDA streams. Ops are queued on the chip and
// return at once; host reads wait. Every question keeps ModePolicy's default answer.
#pragma once

#include "engine/mode.h"

namespace torch_tpu::engine {

class StrictMode final : public ModePolicy {
 public:
  const char* name() const override { return "strict"; }
};

}  // namespace torch_tpu::engine
