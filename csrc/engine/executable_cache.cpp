#include "engine/executable_cache.h"

#include <utility>

#include "ir/verifier.h"

namespace torch_tpu::engine {

ExecutableCache::Lookup ExecutableCache::get_or_compile(executors::Executor& executor,
                                                        const ir::Program& program) {
  return get_or_build(executor.name(), program, [&] { return executor.compile(program); });
}

ExecutableCache::Lookup ExecutableCache::get_or_build(const std::string& executor,
                                                      const ir::Program& program,
                                                      const Build& build) {
  Key key{executor, ir::structural_key(program)};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = executables_.find(key); found != executables_.end()) {
      ++stats_.hits;
      return {found->second, true};
    }
  }
  ir::verify_or_throw(program);
  if (near_resource_limit_()) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.evictions += static_cast<int64_t>(executables_.size());
    stats_.evictions_for_mappings += static_cast<int64_t>(executables_.size());
    executables_.clear();
  }
  const auto started = std::chrono::steady_clock::now();
  std::shared_ptr<const executors::Executable> compiled = build();
  const auto took = std::chrono::steady_clock::now() - started;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses;
  stats_.compile_time += std::chrono::duration_cast<std::chrono::nanoseconds>(took);
  if (executables_.size() >= capacity_) {
    stats_.evictions += static_cast<int64_t>(executables_.size());
    executables_.clear();
  }
  const auto stored = executables_.emplace(std::move(key), std::move(compiled)).first;
  return {stored->second, false};
}

ExecutableCacheStats ExecutableCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

size_t ExecutableCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return executables_.size();
}

void ExecutableCache::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_ = {};
}

void ExecutableCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  executables_.clear();
  stats_ = {};
}

ExecutableCache& executable_cache() {
  static ExecutableCache cache;
  return cache;
}

}  // namespace torch_tpu::engine
