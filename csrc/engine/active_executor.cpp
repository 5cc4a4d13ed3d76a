#include "engine/active_executor.h"

#include <atomic>

#include "runtime/status.h"

namespace torch_tpu::engine {
namespace {

std::atomic<executors::Executor*> g_executor{nullptr};

}  // namespace

void set_active_executor(executors::Executor* executor) { g_executor.store(executor); }

executors::Executor& active_executor() {
  executors::Executor* executor = g_executor.load(std::memory_order_acquire);
  if (executor == nullptr) {
    throw runtime::RuntimeError("no tpu executor is installed (import torch_tpu first)");
  }
  return *executor;
}

bool buffers_are_opaque() { return !active_executor().buffers_are_host_memory(); }

}  // namespace torch_tpu::engine
