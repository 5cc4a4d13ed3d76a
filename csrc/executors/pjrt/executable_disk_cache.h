// Serialized PJRT executables on disk (DESIGN §2): a later process loads a program it compiled
// before instead of compiling it again. An entry is keyed by the module's text, the compile
// options and the plugin build (its path, API version and attributes), and holds that key, so
// another plugin build or a hash collision never loads it. Entries are written under a private
// name and renamed, so processes filling the same cache do not collide. Torch-free; thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace torch_tpu::executors::pjrt {

class ExecutableDiskCache {
 public:
  // Entries under `dir` (created on the first store) for the plugin build `plugin_identity`.
  ExecutableDiskCache(std::filesystem::path dir, std::string plugin_identity);

  // The serialized executable stored for `mlir` compiled with `options`, if any.
  std::optional<std::string> load(std::string_view mlir, std::string_view options) const;
  // Stores `serialized` for `mlir` and `options`; a failure to write only costs a later compile.
  void store(std::string_view mlir, std::string_view options, std::string_view serialized) const;
  // Forgets a stored entry that failed to load (written by a crashed process, say).
  void remove(std::string_view mlir, std::string_view options) const;

  const std::filesystem::path& dir() const { return dir_; }
  int64_t hits() const { return hits_.load(); }
  int64_t misses() const { return misses_.load(); }
  int64_t stores() const { return stores_.load(); }

 private:
  std::string key(std::string_view mlir, std::string_view options) const;
  std::filesystem::path path_of(const std::string& key) const;

  std::filesystem::path dir_;
  std::string plugin_identity_;
  mutable std::atomic<int64_t> hits_{0};
  mutable std::atomic<int64_t> misses_{0};
  mutable std::atomic<int64_t> stores_{0};
};

}  // namespace torch_tpu::executors::pjrt
