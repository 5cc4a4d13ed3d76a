// The policy of a torch.compile graph's ops (python/torch_tpu/compiler/): they are recorded,
// not run, so that the flush at the graph's end hands the whole graph to the executor as one
// program, planned once per structure and cached beside fused mode's programs. Buffers get
// chip memory only when something needs their bytes. Not a mode users select: a
// CompiledGraphScope (engine/mode.h) puts the calling thread under it for one graph's run.
// Autograd keeps no recipes: aot_autograd already chose what the forward graph saves.
#pragma once

#include "engine/mode.h"

namespace torch_tpu::engine {

class CompiledGraphMode final : public ModePolicy {
 public:
  const char* name() const override { return "compiled_graph"; }
  bool defers_ops() const override { return true; }
  bool allocates_lazily() const override { return true; }
  // A graph is one program, however many ops it has: on PJRT, one module XLA fuses whole.
  bool bounds_program_size() const override { return false; }
  // Debug mode's graphs name each op's line of user code too.
  bool always_records_issue_sites() const override {
    return process_policy().always_records_issue_sites();
  }
};

}  // namespace torch_tpu::engine
