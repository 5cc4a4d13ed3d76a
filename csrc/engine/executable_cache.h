// The engine's cache of compiled programs: executables by (executor, program structure), so a
// training loop compiles each of its programs once and then only hits (DESIGN §4). New
// programs are verified before they are compiled. Torch-free; thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "engine/memory_mappings.h"
#include "executors/executor.h"
#include "ir/program.h"
#include "ir/structural_hash.h"

namespace torch_tpu::engine {

struct ExecutableCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;  // each one a compile
  int64_t evictions = 0;
  int64_t evictions_for_mappings = 0;  // of those, dropped near the memory-mapping limit
  std::chrono::nanoseconds compile_time{0};
};

class ExecutableCache {
 public:
  // `capacity`: executables kept; a full cache starts over (executables are re-derivable).
  // `near_resource_limit`, asked before each compile: true drops every cached executable
  // first, so that those no run holds release what they hold (memory_mappings.h).
  using LimitCheck = std::function<bool()>;
  explicit ExecutableCache(size_t capacity = 4096,
                           LimitCheck near_resource_limit = memory_mappings_near_limit)
      : capacity_(capacity), near_resource_limit_(std::move(near_resource_limit)) {}

  struct Lookup {
    std::shared_ptr<const executors::Executable> executable;
    bool hit = false;
  };

  // The executable of `program`'s structure on `executor`: cached, or verified and compiled
  // now (outside the lock: a slow compile does not stall other lookups; two threads missing
  // on one structure may both compile, and the first stored wins). Throws ir::InvalidProgram
  // for a program that fails verification, and whatever the executor's compile throws; neither
  // is cached.
  Lookup get_or_compile(executors::Executor& executor, const ir::Program& program);
  // The same for an executor that compiles from more than the program (the host executor
  // plans from the work its ops recorded): `build` makes the executable on a miss.
  using Build = std::function<std::shared_ptr<const executors::Executable>()>;
  Lookup get_or_build(const std::string& executor, const ir::Program& program, const Build& build);

  ExecutableCacheStats stats() const;
  // Zeroes the counters; cached executables stay.
  void reset_stats();
  size_t size() const;
  void clear();

 private:
  struct Key {
    std::string executor;
    ir::StructuralKey structure;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const {
      return std::hash<std::string>()(key.executor) ^ static_cast<size_t>(key.structure.hash);
    }
  };

  const size_t capacity_;
  const LimitCheck near_resource_limit_;
  mutable std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const executors::Executable>, KeyHash> executables_;
  ExecutableCacheStats stats_;
};

// The process-wide cache every stream and chip shares.
ExecutableCache& executable_cache();

}  // namespace torch_tpu::engine
