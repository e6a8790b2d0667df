//===- GpuKernelTest.h - GoogleTest fixture over tools::KernelHarness -----===//
//
// GpuKernelTest<Base> opens the harness in SetUp and skips the test (with
// the reason) where there is no GPU, driver or NVRTC; Base is
// ::testing::Test or a ::testing::TestWithParam<T>.
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_UNIT_CUDA_KERNELS_GPUKERNELTEST_H
#define DSC_TEST_UNIT_CUDA_KERNELS_GPUKERNELTEST_H

#include "tools/common/KernelHarness.h"

#include <gtest/gtest.h>

namespace dsc::test {

template <typename Base = ::testing::Test> class GpuKernelTest : public Base {
protected:
  void SetUp() override {
    std::string why;
    harness_ = dsc::tools::KernelHarness::open(why);
    if (!harness_)
      GTEST_SKIP() << why;
  }
  std::unique_ptr<dsc::tools::KernelHarness> harness_;
};

} // namespace dsc::test

#endif // DSC_TEST_UNIT_CUDA_KERNELS_GPUKERNELTEST_H
