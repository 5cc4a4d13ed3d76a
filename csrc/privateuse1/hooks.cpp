// PrivateUse1HooksInterface for tpu: availability, generators, pinned memory, pointer lookup.
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "engine/launch.h"
#include "privateuse1/generator.h"
#include "privateuse1/host_allocator.h"
#include "privateuse1/storage_resize.h"
#include "runtime/chip.h"

namespace torch_tpu::privateuse1 {
namespace {

struct TpuHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return deviceCount() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override { return true; }
  void init() const override { runtime::Runtime::instance(); }

  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(runtime::Runtime::instance().chip_count());
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    engine::set_current_device(device);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(engine::current_device());
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto previous = getCurrentDevice();
    engine::set_current_device(device);
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return make_generator(device_index);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    const int chip = runtime::chip_of_address(reinterpret_cast<runtime::DeviceAddress>(data));
    TORCH_CHECK(chip >= 0, "pointer ", data, " is not a tpu device address");
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(chip));
  }

  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return pinned_memory_allocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    resize_storage_bytes(storage, new_bytes);
  }
};

// Registered at load time; the registry accepts exactly one PrivateUse1 hooks object.
const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new TpuHooks());
  return true;
}();

}  // namespace
}  // namespace torch_tpu::privateuse1
