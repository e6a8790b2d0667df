//===- NvrtcCompileTest.cpp - The device-ready headers compile under NVRTC -===//
//
// Compiles a kernel that uses every device-ready numerics header with NVRTC
// (no standard headers, no -default-device), the way the runtime JIT will.
// libnvrtc is opened with dlopen so the test binary has no CUDA dependency;
// without the library the test is skipped.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>
#include <vector>

namespace {

// The handful of NVRTC entry points used (types as in nvrtc.h).
using nvrtcProgram = struct _nvrtcProgram *;
using CreateFn = int (*)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                         const char *const *);
using CompileFn = int (*)(nvrtcProgram, int, const char *const *);
using LogSizeFn = int (*)(nvrtcProgram, size_t *);
using LogFn = int (*)(nvrtcProgram, char *);
using DestroyFn = int (*)(nvrtcProgram *);

const char *kKernel = R"CU(
#include "dsc/numerics/Portability.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "dsc/numerics/Quantize.h"
#include "dsc/numerics/KvLayout.h"
using namespace dsc::numerics;
extern "C" __global__ void roundTrip(const float *x, uint8_t *pool, float *y, int tokens) {
  const KvPageLayout layout{mainKvFormat(), 64, KvPageOrder::PagePlanar};
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const KvRecordFormat f = layout.format;
  encodeKvRecord(f, x + t * f.valuesPerEntry, pool + layout.tokenDataOffset(t),
                 pool + layout.tokenScaleOffset(t));
  decodeKvRecord(f, pool + layout.tokenDataOffset(t), pool + layout.tokenScaleOffset(t),
                 y + t * f.valuesPerEntry);
  float q[32];
  qdqFp8Block(x, 32, q);
  qdqFp4E8M0Block(x, 32, q);
  y[0] += q[0] + bf16ToFloat(bf16FromFloat(q[1])) + fp8ActScale(q[2]) +
          ue8m0ToFloat(e4m3FromFloat(q[3])) + e2m1ToFloat(e2m1FromFloat(q[4]));
}
)CU";

} // namespace

TEST(NumericsNvrtc, DeviceHeadersCompile) {
  void *lib = nullptr;
#ifdef DSC_NVRTC_LIBRARY
  lib = ::dlopen(DSC_NVRTC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
#endif
  for (const char *name : {"libnvrtc.so.13", "libnvrtc.so"})
    if (!lib)
      lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    GTEST_SKIP() << "libnvrtc not found";
  auto create = reinterpret_cast<CreateFn>(::dlsym(lib, "nvrtcCreateProgram"));
  auto compile = reinterpret_cast<CompileFn>(::dlsym(lib, "nvrtcCompileProgram"));
  auto logSize = reinterpret_cast<LogSizeFn>(::dlsym(lib, "nvrtcGetProgramLogSize"));
  auto getLog = reinterpret_cast<LogFn>(::dlsym(lib, "nvrtcGetProgramLog"));
  auto destroy = reinterpret_cast<DestroyFn>(::dlsym(lib, "nvrtcDestroyProgram"));
  ASSERT_TRUE(create && compile && logSize && getLog && destroy);

  const std::string include = std::string("-I") + DSC_SOURCE_DIR + "/numerics/include";
  for (const char *std : {"-std=c++17", "-std=c++20"}) {
    nvrtcProgram prog = nullptr;
    ASSERT_EQ(create(&prog, kKernel, "numerics.cu", 0, nullptr, nullptr), 0);
    const char *opts[] = {"--gpu-architecture=compute_90", std, include.c_str()};
    const int rc = compile(prog, 3, opts);
    size_t n = 0;
    logSize(prog, &n);
    std::string log(n, '\0');
    getLog(prog, log.data());
    EXPECT_EQ(rc, 0) << std << ":\n" << log;
    destroy(&prog);
  }
}
