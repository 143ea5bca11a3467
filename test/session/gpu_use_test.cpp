// Whether a process uses a GPU (session/seam.h), which decides when it answers dynolog.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "session/seam.h"

namespace kinetrace::detail {
namespace {

// This test program never touches CUDA: whatever the machine, it is not a GPU process, and
// asking does not load the driver into it.
TEST(GpuUseTest, AProcessThatNeverUsedCudaDoesNotUseAGpuAndAskingLoadsNoDriver) {
#if defined(KINETRACE_HAVE_CUPTI)
  EXPECT_FALSE(internal::processUsesGpu());
  void* loaded = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  EXPECT_EQ(loaded, nullptr) << "the driver was loaded by the question";
  if (loaded != nullptr) ::dlclose(loaded);
#else
  EXPECT_TRUE(internal::processUsesGpu()) << "without the CUDA toolkit nothing can tell";
#endif
}

}  // namespace
}  // namespace kinetrace::detail
