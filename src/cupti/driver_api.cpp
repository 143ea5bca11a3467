#include "cupti/driver_api.h"

#include <dlfcn.h>

#include <string>

#include "cupti/make_cupti_source.h"

namespace kinetrace::detail {

Status DriverApi::open(bool initialize) {
  // The driver is normally loaded already (by the CUDA runtime); dlopen then just returns it.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    const char* error = dlerror();
    return Failure{std::string("no NVIDIA driver: ") + (error ? error : "libcuda.so.1 not found")};
  }
  auto find = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(library, name));
    return slot != nullptr;
  };
  bool complete = find(cuInit_, "cuInit") && find(cuDriverGetVersion_, "cuDriverGetVersion") &&
                  find(cuDeviceGetCount_, "cuDeviceGetCount") && find(cuDeviceGet_, "cuDeviceGet") &&
                  find(cuDeviceGetName_, "cuDeviceGetName") &&
                  find(cuDeviceTotalMem_, "cuDeviceTotalMem_v2") &&
                  find(cuDeviceGetAttribute_, "cuDeviceGetAttribute") &&
                  find(cuCtxPushCurrent_, "cuCtxPushCurrent_v2") &&
                  find(cuCtxPopCurrent_, "cuCtxPopCurrent_v2") &&
                  find(cuCtxSynchronize_, "cuCtxSynchronize") &&
                  find(cuCtxGetDevice_, "cuCtxGetDevice") &&
                  find(cuGetErrorString_, "cuGetErrorString");
  find(cuDevicePrimaryCtxGetState_, "cuDevicePrimaryCtxGetState");
  if (!complete) {
    cuInit_ = nullptr;
    return Failure{
        "the NVIDIA driver's libcuda.so.1 lacks functions kinetrace needs (driver too old?)"};
  }
  if (!initialize) return {};
  CUresult result = cuInit_(0);
  if (result != CUDA_SUCCESS) {
    std::string why = "the CUDA driver could not start: " + errorText(result);
    cuInit_ = nullptr;
    return Failure{std::move(why)};
  }
  int count = 0;
  if (cuDeviceGetCount_(&count) != CUDA_SUCCESS || count == 0) {
    cuInit_ = nullptr;
    return Failure{"no CUDA device is visible (check CUDA_VISIBLE_DEVICES and nvidia-smi)"};
  }
  return {};
}

std::string DriverApi::errorText(CUresult result) const {
  const char* text = nullptr;
  if (cuGetErrorString_ != nullptr && cuGetErrorString_(result, &text) == CUDA_SUCCESS && text) {
    return text;
  }
  return "CUDA driver error " + std::to_string(static_cast<int>(result));
}

int DriverApi::driverVersion() const {
  int version = 0;
  if (cuDriverGetVersion_ != nullptr) cuDriverGetVersion_(&version);
  return version;
}

std::vector<DeviceInfo> DriverApi::devices(StringTable& strings) const {
  std::vector<DeviceInfo> result;
  if (!isOpen()) return result;
  int count = 0;
  // The application may not have started the driver yet; starting it twice is harmless.
  if (cuDeviceGetCount_(&count) == CUDA_ERROR_NOT_INITIALIZED && cuInit_(0) == CUDA_SUCCESS) {
    cuDeviceGetCount_(&count);
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    DeviceInfo info;
    if (deviceInfo(static_cast<uint32_t>(ordinal), strings, info)) result.push_back(info);
  }
  return result;
}

bool DriverApi::deviceInfo(uint32_t ordinal, StringTable& strings, DeviceInfo& info) const {
  if (!isOpen()) return false;
  CUdevice device;
  if (cuDeviceGet_(&device, static_cast<int>(ordinal)) != CUDA_SUCCESS) return false;
  auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    cuDeviceGetAttribute_(&value, which, device);
    return value;
  };
  char name[256] = {};
  cuDeviceGetName_(name, sizeof name - 1, device);
  size_t totalMem = 0;
  cuDeviceTotalMem_(&totalMem, device);
  info = DeviceInfo{};
  info.id = ordinal;
  info.name = strings.intern(name);
  info.totalGlobalMem = totalMem;
  info.computeMajor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.computeMinor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.maxThreadsPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.maxThreadsPerMultiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.maxBlocksPerMultiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.regsPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info.regsPerMultiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.warpSize = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info.sharedMemPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.sharedMemPerBlockOptin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.sharedMemPerMultiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.numSms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return true;
}

bool DriverApi::synchronize(CUcontext context) const noexcept {
  if (!isOpen() || context == nullptr) return false;
  if (cuCtxPushCurrent_(context) != CUDA_SUCCESS) return false;
  bool ok = cuCtxSynchronize_() == CUDA_SUCCESS;
  CUcontext popped = nullptr;
  cuCtxPopCurrent_(&popped);
  return ok;
}

int DriverApi::deviceOf(CUcontext context) const noexcept {
  if (!isOpen() || context == nullptr) return -1;
  if (cuCtxPushCurrent_(context) != CUDA_SUCCESS) return -1;
  CUdevice device = -1;
  if (cuCtxGetDevice_(&device) != CUDA_SUCCESS) device = -1;
  CUcontext popped = nullptr;
  cuCtxPopCurrent_(&popped);
  return static_cast<int>(device);
}

bool processUsesGpu() {
  // RTLD_NOLOAD: a process that has not loaded the driver has done no GPU work, and loading
  // it here would cost that process the driver's memory for nothing.
  void* loaded = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (loaded == nullptr) return false;
  DriverApi driver;
  const bool uses =
      driver.open(/*initialize=*/false).ok() && !driver.devicesWithActivePrimaryContext().empty();
  dlclose(loaded);
  return uses;
}

std::vector<uint32_t> DriverApi::devicesWithActivePrimaryContext() const {
  std::vector<uint32_t> active;
  if (!isOpen() || cuDevicePrimaryCtxGetState_ == nullptr) return active;
  int count = 0;
  if (cuDeviceGetCount_(&count) != CUDA_SUCCESS) return active;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device;
    unsigned flags = 0;
    int isActive = 0;
    if (cuDeviceGet_(&device, ordinal) == CUDA_SUCCESS &&
        cuDevicePrimaryCtxGetState_(device, &flags, &isActive) == CUDA_SUCCESS && isActive != 0) {
      active.push_back(static_cast<uint32_t>(ordinal));
    }
  }
  return active;
}

}  // namespace kinetrace::detail
