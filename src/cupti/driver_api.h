#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "model/records.h"
#include "model/string_table.h"
#include "support/result.h"

// The few CUDA driver calls kinetrace makes itself: device properties for the trace
// header, and synchronising contexts at stop so GPU work still running is collected.
// libcuda is opened at run time, not linked: kinetrace loads on machines without a driver
// and says so instead of failing to load.

namespace kinetrace::detail {

class DriverApi {
 public:
  // Opens libcuda.so.1 and, when `initialize`, starts the driver and checks that a device
  // is visible. Returns "" or why it could not ("no NVIDIA driver: libcuda.so.1: cannot
  // open shared object file"). Inside the driver's own initialisation (CUDA injection) the
  // driver must not be re-entered: pass initialize = false.
  Status open(bool initialize);
  bool isOpen() const { return cuInit_ != nullptr; }

  int driverVersion() const;
  // One DeviceInfo per visible device; names interned into `strings`.
  std::vector<DeviceInfo> devices(StringTable& strings) const;
  // The device of that ordinal; false when the driver does not know it (or is not started).
  bool deviceInfo(uint32_t ordinal, StringTable& strings, DeviceInfo& info) const;
  // Waits for all work of a context to finish. Returns false if the context is gone.
  bool synchronize(CUcontext context) const noexcept;
  // The ordinal of a context's device; -1 when the context is gone.
  int deviceOf(CUcontext context) const noexcept;
  // The ordinals of the devices whose primary context is active: those a program on the
  // CUDA runtime has started using, seen by kinetrace or not. Empty while the driver has
  // not started.
  std::vector<uint32_t> devicesWithActivePrimaryContext() const;

  std::string errorText(CUresult result) const;

 private:
  using InitFn = CUresult (*)(unsigned);
  using DriverGetVersionFn = CUresult (*)(int*);
  using DeviceGetCountFn = CUresult (*)(int*);
  using DeviceGetFn = CUresult (*)(CUdevice*, int);
  using DeviceGetNameFn = CUresult (*)(char*, int, CUdevice);
  using DeviceTotalMemFn = CUresult (*)(size_t*, CUdevice);
  using DeviceGetAttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  using CtxPushFn = CUresult (*)(CUcontext);
  using CtxPopFn = CUresult (*)(CUcontext*);
  using CtxSynchronizeFn = CUresult (*)();
  using CtxGetDeviceFn = CUresult (*)(CUdevice*);
  using PrimaryCtxGetStateFn = CUresult (*)(CUdevice, unsigned*, int*);
  using GetErrorStringFn = CUresult (*)(CUresult, const char**);

  InitFn cuInit_ = nullptr;
  DriverGetVersionFn cuDriverGetVersion_ = nullptr;
  DeviceGetCountFn cuDeviceGetCount_ = nullptr;
  DeviceGetFn cuDeviceGet_ = nullptr;
  DeviceGetNameFn cuDeviceGetName_ = nullptr;
  DeviceTotalMemFn cuDeviceTotalMem_ = nullptr;
  DeviceGetAttributeFn cuDeviceGetAttribute_ = nullptr;
  CtxPushFn cuCtxPushCurrent_ = nullptr;
  CtxPopFn cuCtxPopCurrent_ = nullptr;
  CtxSynchronizeFn cuCtxSynchronize_ = nullptr;
  CtxGetDeviceFn cuCtxGetDevice_ = nullptr;
  PrimaryCtxGetStateFn cuDevicePrimaryCtxGetState_ = nullptr;  // optional
  GetErrorStringFn cuGetErrorString_ = nullptr;
};

}  // namespace kinetrace::detail
