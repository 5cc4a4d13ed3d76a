#include "executors/pjrt/executable_disk_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace torch_tpu::executors::pjrt {
namespace {

namespace fs = std::filesystem;

uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

// An entry: the key's length (8 bytes, little-endian host order), the key, the executable.
std::string entry(const std::string& key, std::string_view serialized) {
  const uint64_t size = key.size();
  std::string bytes(reinterpret_cast<const char*>(&size), sizeof(size));
  bytes += key;
  bytes += serialized;
  return bytes;
}

}  // namespace

ExecutableDiskCache::ExecutableDiskCache(fs::path dir, std::string plugin_identity)
    : dir_(std::move(dir)), plugin_identity_(std::move(plugin_identity)) {}

std::string ExecutableDiskCache::key(std::string_view mlir, std::string_view options) const {
  std::string key = plugin_identity_;
  key += '\n';
  key += std::to_string(options.size()) + ':';
  key += options;
  key += mlir;
  return key;
}

fs::path ExecutableDiskCache::path_of(const std::string& key) const {
  char name[40];
  std::snprintf(name, sizeof(name), "%016llx.pjrt", static_cast<unsigned long long>(fnv1a(key)));
  return dir_ / name;
}

std::optional<std::string> ExecutableDiskCache::load(std::string_view mlir,
                                                     std::string_view options) const {
  const std::string wanted = key(mlir, options);
  std::ifstream file(path_of(wanted), std::ios::binary);
  std::string bytes;
  if (file) bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  uint64_t size = 0;
  if (bytes.size() >= sizeof(size)) std::memcpy(&size, bytes.data(), sizeof(size));
  if (bytes.size() < sizeof(size) + size || bytes.compare(sizeof(size), size, wanted) != 0) {
    misses_.fetch_add(1);
    return std::nullopt;
  }
  hits_.fetch_add(1);
  return bytes.substr(sizeof(size) + size);
}

void ExecutableDiskCache::store(std::string_view mlir, std::string_view options,
                                std::string_view serialized) const {
  const std::string stored_key = key(mlir, options);
  const fs::path target = path_of(stored_key);
  std::error_code error;
  fs::create_directories(dir_, error);
  const fs::path unique = target.string() + "." + std::to_string(getpid()) + ".tmp";
  {
    std::ofstream file(unique, std::ios::binary | std::ios::trunc);
    const std::string bytes = entry(stored_key, serialized);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) {
      fs::remove(unique, error);
      return;
    }
  }
  fs::rename(unique, target, error);
  if (error) {
    fs::remove(unique, error);
    return;
  }
  stores_.fetch_add(1);
}

void ExecutableDiskCache::remove(std::string_view mlir, std::string_view options) const {
  std::error_code error;
  fs::remove(path_of(key(mlir, options)), error);
}

}  // namespace torch_tpu::executors::pjrt
