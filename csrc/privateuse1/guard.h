// DeviceGuardImplInterface for tpu: current device and stream per host thread, events, and
// device/stream synchronization. torch.Stream/torch.Event and torch.accelerator go through it.
#pragma once

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace torch_tpu::privateuse1 {

struct TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return static_type; }
  c10::Device exchangeDevice(c10::Device device) const override;
  c10::Device getDevice() const override;
  void setDevice(c10::Device device) const override;
  void uncheckedSetDevice(c10::Device device) const noexcept override;
  c10::DeviceIndex deviceCount() const noexcept override;
  // torch.accelerator.get_device_capability: the dtypes a tpu tensor can hold and convert
  // between (on PJRT, ops without a lowering for one run on the host's kernels).
  c10::DeviceCapability getDeviceCapability(c10::Device device) const override;

  c10::Stream getStream(c10::Device device) const noexcept override;
  c10::Stream getDefaultStream(c10::Device device) const override;
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool isHighPriority) const override;
  c10::Stream getNewStream(c10::Device device, int priority) const override;
  c10::Stream exchangeStream(c10::Stream stream) const noexcept override;
  bool queryStream(const c10::Stream& stream) const override;
  void synchronizeStream(const c10::Stream& stream) const override;
  void synchronizeDevice(c10::DeviceIndex device_index) const override;

  // Events are heap-allocated runtime::Event objects, created on first record.
  void record(void** event, const c10::Stream& stream, c10::DeviceIndex device_index,
              c10::EventFlag flag) const override;
  void block(void* event, const c10::Stream& stream) const override;
  bool queryEvent(void* event) const override;
  void synchronizeEvent(void* event) const override;
  double elapsedTime(void* start, void* end, c10::DeviceIndex device_index) const override;
  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override;
  void destroyEvent(void* event, c10::DeviceIndex device_index) const noexcept override;
};

}  // namespace torch_tpu::privateuse1
