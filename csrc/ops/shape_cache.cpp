#include "ops/shape_cache.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace torch_tpu::ops {
namespace {

constexpr size_t kMaxEntries = 1 << 16;

// Tags keep differently-shaped argument lists from colliding.
enum Tag : int64_t { kTensorTag = -1001, kUndefinedTag, kListTag, kNoneTag, kIntTag,
                     kDoubleTag, kBoolTag, kScalarTag, kStringTag, kOtherTag, kCpuTensorTag,
                     kWrappedNumberTag };

void append_tensor(CallSignature& out, const at::Tensor& tensor) {
  if (!tensor.defined()) {
    out.push_back(kUndefinedTag);
    return;
  }
  // A wrapped Python number promotes differently from a 0-dim tensor of the same dtype
  // (int64 tensor * 2.5 is float32; * tensor(2.5, dtype=float64) is float64).
  if (tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
    out.push_back(kWrappedNumberTag);
  } else {
    out.push_back(tensor.device().is_cpu() ? kCpuTensorTag : kTensorTag);
  }
  out.push_back(static_cast<int64_t>(tensor.scalar_type()));
  out.push_back(tensor.dim());
  out.insert(out.end(), tensor.sizes().begin(), tensor.sizes().end());
  out.insert(out.end(), tensor.strides().begin(), tensor.strides().end());
}

void append_scalar(CallSignature& out, const c10::Scalar& scalar, bool by_value) {
  out.push_back(kScalarTag);
  out.push_back(static_cast<int64_t>(scalar.type()));
  if (by_value) {
    const double value = scalar.toDouble();
    int64_t bits;
    static_assert(sizeof(bits) == sizeof(value));
    std::memcpy(&bits, &value, sizeof(bits));
    out.push_back(bits);
  }
}

// `scalar_param`: the schema types this argument Scalar (or Scalar?/Scalar[]), whose values
// are keyed only when scalars_by_value.
void append_value(CallSignature& out, const c10::IValue& value, bool scalar_param,
                  bool scalars_by_value) {
  if (scalar_param && (value.isScalar())) {
    append_scalar(out, value.toScalar(), scalars_by_value);
    return;
  }
  if (value.isTensor()) {
    append_tensor(out, value.toTensor());
  } else if (value.isTensorList()) {
    out.push_back(kListTag);
    out.push_back(static_cast<int64_t>(value.toTensorList().size()));
    for (const at::Tensor& tensor : value.toTensorList()) append_tensor(out, tensor);
  } else if (value.isOptionalTensorList()) {
    out.push_back(kListTag);
    for (const std::optional<at::Tensor> tensor : value.toOptionalTensorList()) {
      append_tensor(out, tensor.value_or(at::Tensor()));
    }
  } else if (value.isNone()) {
    out.push_back(kNoneTag);
  } else if (value.isInt()) {
    out.push_back(kIntTag);
    out.push_back(value.toInt());
  } else if (value.isBool()) {
    out.push_back(kBoolTag);
    out.push_back(value.toBool());
  } else if (value.isScalar()) {
    // `float` arguments (eps, p): kept by value; they rarely vary and may shape checks.
    append_scalar(out, value.toScalar(), /*by_value=*/true);
  } else if (value.isIntList()) {
    out.push_back(kListTag);
    for (const int64_t element : value.toIntList()) out.push_back(element);
  } else if (value.isList()) {
    out.push_back(kListTag);
    for (const c10::IValue& element : value.toListRef()) {
      append_value(out, element, scalar_param, scalars_by_value);
    }
  } else if (value.isString()) {
    out.push_back(kStringTag);
    out.push_back(static_cast<int64_t>(std::hash<std::string_view>()(value.toStringView())));
  } else if (value.isDevice()) {
    out.push_back(kOtherTag);
    out.push_back(static_cast<int64_t>(value.toDevice().type()) * 1000 + value.toDevice().index());
  } else if (value.isGenerator()) {
    out.push_back(kOtherTag);  // generators never change output shapes
  } else {
    // Anything else (ScalarType/Layout/MemoryFormat are ints in IValues; custom classes are
    // rare): hash what IValue can hash, else make the call uncacheable-by-collision by identity.
    out.push_back(kOtherTag);
    try {
      out.push_back(static_cast<int64_t>(c10::IValue::hash(value)));
    } catch (const c10::Error&) {
      out.push_back(reinterpret_cast<int64_t>(value.internalToPointer()));
    }
  }
}

struct SignatureHash {
  size_t operator()(const CallSignature& signature) const {
    size_t seed = signature.size();
    for (const int64_t value : signature) {
      seed ^= std::hash<int64_t>()(value) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    }
    return seed;
  }
};

std::shared_mutex g_mutex;
std::unordered_map<CallSignature, SharedCachedCall, SignatureHash> g_cache;
std::atomic<int64_t> g_hits{0};
std::atomic<int64_t> g_misses{0};

}  // namespace

std::shared_ptr<const executors::Executable> CachedCall::keep_one_node(
    std::shared_ptr<const executors::Executable> executable) const {
  std::lock_guard<std::mutex> lock(setting_);
  if (!has_one_node_.load(std::memory_order_relaxed)) {
    one_node_ = std::move(executable);
    has_one_node_.store(true, std::memory_order_release);
  }
  return one_node_;
}

CallSignature call_signature(const OpPlan& plan, BoxedArgs args) {
  CallSignature signature;
  signature.reserve(32);
  signature.push_back(reinterpret_cast<int64_t>(&plan));
  for (size_t i = 0; i < args.size(); ++i) {
    append_value(signature, args[i], plan.scalar_args[i], plan.scalar_values_shape_outputs);
  }
  return signature;
}

SharedCachedCall lookup_call(const CallSignature& signature) {
  std::shared_lock<std::shared_mutex> lock(g_mutex);
  auto it = g_cache.find(signature);
  if (it == g_cache.end()) {
    g_misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  g_hits.fetch_add(1, std::memory_order_relaxed);
  return it->second;
}

void store_call(CallSignature signature, SharedCachedCall call) {
  std::unique_lock<std::shared_mutex> lock(g_mutex);
  if (g_cache.size() >= kMaxEntries) g_cache.clear();
  g_cache.emplace(std::move(signature), std::move(call));
}

void reset_shape_cache_stats() {
  g_hits.store(0);
  g_misses.store(0);
}

ShapeCacheStats shape_cache_stats() {
  std::shared_lock<std::shared_mutex> lock(g_mutex);
  return {g_hits.load(), g_misses.load(), static_cast<int64_t>(g_cache.size())};
}

}  // namespace torch_tpu::ops
