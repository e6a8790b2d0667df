//===- AdapterCoverageTest.cpp - Backends cover the kernel vocabulary ------===//
//
// The kernel vocabulary lives in one table (kernelSignatures(), the checked
// form of docs/kernels.md); each backend registers its adapters by name in its
// own table. These tests pin the two together: every kernel of the vocabulary
// has an adapter on the CPU backend and on the CUDA backend (when built with
// the toolkit's headers), and no backend registers a name outside the
// vocabulary (a misspelt registration would otherwise only show up as "kernel
// not supported" at plan load). Needs no GPU: registration touches no device.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/KernelSignatures.h"
#include "runtime/cpu/CpuAdapter.h"
#ifdef DSC_TEST_CUDA_ADAPTERS
#include "runtime/cuda/CudaAdapter.h"
#endif

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

std::set<std::string> vocabulary() {
  std::set<std::string> names;
  for (const dsc::runtime::KernelSignature &s : dsc::runtime::kernelSignatures())
    names.insert(s.name);
  return names;
}

template <typename Table> std::set<std::string> registered(const Table &table) {
  std::set<std::string> names;
  for (const auto &[name, adapter] : table)
    names.insert(name);
  return names;
}

void expectSameNames(const std::set<std::string> &backend, const char *backendName) {
  const std::set<std::string> kernels = vocabulary();
  ASSERT_FALSE(kernels.empty());
  for (const std::string &k : kernels)
    EXPECT_TRUE(backend.count(k)) << backendName << " backend has no adapter for kernel '" << k << "'";
  for (const std::string &b : backend)
    EXPECT_TRUE(kernels.count(b)) << backendName << " backend registers '" << b
                                  << "', which is not in kernelSignatures()";
}

} // namespace

TEST(AdapterCoverage, CpuBackendCoversTheVocabulary) {
  dsc::cpu::AdapterTable table;
  dsc::cpu::registerBasicAdapters(table);
  dsc::cpu::registerDenseAdapters(table);
  dsc::cpu::registerAttentionAdapters(table);
  expectSameNames(registered(table), "CPU");
}

#ifdef DSC_TEST_CUDA_ADAPTERS
TEST(AdapterCoverage, CudaBackendCoversTheVocabulary) {
  dsc::cuda::CudaAdapterTable table;
  dsc::cuda::registerCudaBasicAdapters(table);
  dsc::cuda::registerCudaDenseAdapters(table);
  dsc::cuda::registerCudaAttentionAdapters(table);
  expectSameNames(registered(table), "CUDA");
}
#endif
