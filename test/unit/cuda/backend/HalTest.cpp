//===- HalTest.cpp - The CUDA HAL objects on a fake driver ------------------===//
//
// runtime/cuda/hal without a GPU (FakeCudaDriver.h): every object frees what
// it owns exactly once, moves transfer ownership and leave the source empty,
// DeviceBuffer::growTo keeps its address while big enough, an Executable
// looks each entry up once, a capture left open is abandoned, and a Device
// releases its context and stream.
//===----------------------------------------------------------------------===//
#include "FakeCudaDriver.h"
#include "runtime/cuda/hal/Device.h"
#include "runtime/cuda/hal/DeviceBuffer.h"
#include "runtime/cuda/hal/Executable.h"
#include "runtime/cuda/hal/Graph.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace {

using dsc::test::fakeCudaDriver;
using dsc::test::fakeState;
namespace hal = dsc::cuda::hal;

class Hal : public ::testing::Test {
protected:
  void SetUp() override { fakeState().reset(); }
  void TearDown() override {
    EXPECT_TRUE(fakeState().live.empty());
    EXPECT_EQ(fakeState().badFrees, 0);
  }
};

TEST_F(Hal, DeviceBufferFreesOnceAndMoves) {
  {
    auto a = hal::DeviceBuffer::allocate(fakeCudaDriver(), 100, "a");
    ASSERT_TRUE(a) << a.status().message();
    EXPECT_EQ(a->size(), 100u);
    EXPECT_EQ(fakeState().live.size(), 1u);
    const CUdeviceptr p = a->ptr();
    hal::DeviceBuffer b = std::move(a.value());
    EXPECT_EQ(b.ptr(), p);
    EXPECT_FALSE(*a);
    EXPECT_EQ(a->size(), 0u);
    hal::DeviceBuffer c;
    c = std::move(b);
    EXPECT_EQ(c.ptr(), p);
    EXPECT_FALSE(b);
    // Move-assigning over a buffer frees what it held.
    auto d = hal::DeviceBuffer::allocate(fakeCudaDriver(), 8, "d");
    ASSERT_TRUE(d);
    c = std::move(d.value());
    EXPECT_EQ(fakeState().frees, 1);
    EXPECT_EQ(fakeState().live.size(), 1u);
    std::vector<hal::DeviceBuffer> many;
    for (int i = 0; i < 20; ++i) // vector growth moves them
      many.push_back(std::move(hal::DeviceBuffer::allocate(fakeCudaDriver(), 4, "v").value()));
    EXPECT_EQ(fakeState().live.size(), 21u);
  }
  EXPECT_EQ(fakeState().frees, fakeState().allocs);
}

TEST_F(Hal, ZeroBytesAllocateOne) {
  auto a = hal::DeviceBuffer::allocate(fakeCudaDriver(), 0, "empty");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->size(), 1u);
  EXPECT_NE(a->ptr(), 0u);
}

TEST_F(Hal, GrowKeepsTheAddressWhileBigEnough) {
  hal::DeviceBuffer b;
  bool moved = true;
  ASSERT_TRUE(b.growTo(fakeCudaDriver(), 64, nullptr, "g", &moved));
  EXPECT_FALSE(moved) << "a first allocation moves nothing";
  const CUdeviceptr p = b.ptr();
  ASSERT_TRUE(b.growTo(fakeCudaDriver(), 32, nullptr, "g", &moved));
  EXPECT_FALSE(moved);
  EXPECT_EQ(b.ptr(), p);
  EXPECT_EQ(b.size(), 64u) << "never shrinks";
  ASSERT_TRUE(b.growTo(fakeCudaDriver(), 65, nullptr, "g", &moved));
  EXPECT_TRUE(moved);
  EXPECT_EQ(b.size(), 65u);
  EXPECT_EQ(fakeState().live.size(), 1u);
  const auto *bytes = reinterpret_cast<const unsigned char *>(uintptr_t(b.ptr()));
  for (size_t i = 0; i < b.size(); ++i)
    ASSERT_EQ(bytes[i], 0) << "grown buffers are zero-filled";
}

TEST_F(Hal, AllocationFailureIsAStatus) {
  fakeState().failAllocAfter = 1;
  auto a = hal::DeviceBuffer::allocate(fakeCudaDriver(), 10, "arena");
  ASSERT_FALSE(a);
  EXPECT_NE(a.status().message().find("cuMemAlloc(10, arena)"), std::string::npos)
      << a.status().message();
}

TEST_F(Hal, ExecutableCachesEntriesAndUnloads) {
  const char image[] = "cubin";
  {
    auto e = hal::Executable::load(fakeCudaDriver(), image, "rms_norm");
    ASSERT_TRUE(e);
    EXPECT_EQ(fakeState().modulesLive, 1);
    auto f1 = e->function("dsc_rms_norm");
    auto f2 = e->function("dsc_rms_norm");
    ASSERT_TRUE(f1 && f2);
    EXPECT_EQ(*f1, *f2);
    EXPECT_EQ(fakeState().functionLookups, 1) << "looked up once";
    auto missing = e->function("missing");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
    hal::Executable moved = std::move(e.value());
    EXPECT_FALSE(*e);
    EXPECT_TRUE(moved);
    EXPECT_EQ(fakeState().modulesLive, 1);
    auto f3 = moved.function("dsc_rms_norm");
    ASSERT_TRUE(f3);
    EXPECT_EQ(*f3, *f1) << "the cache moves with the module";
  }
  EXPECT_EQ(fakeState().modulesLive, 0);
}

/// The prologue mark (codegen/kernels/common.cuh dsc_kernel_prologue) is
/// looked up once at load; a module without it is still a module.
TEST_F(Hal, ExecutableKnowsWhetherItsEntriesWaitForTheirPredecessor) {
  const char image[] = "cubin";
  auto marked = hal::Executable::load(fakeCudaDriver(), image, "rms_norm");
  ASSERT_TRUE(marked);
  EXPECT_TRUE(marked->waitsForPredecessor());
  hal::Executable moved = std::move(marked.value());
  EXPECT_TRUE(moved.waitsForPredecessor()) << "the mark moves with the module";
  fakeState().modulesMarked = false;
  auto old = hal::Executable::load(fakeCudaDriver(), image, "rms_norm");
  ASSERT_TRUE(old) << "a module compiled before the prologue loads";
  EXPECT_FALSE(old->waitsForPredecessor());
}

TEST_F(Hal, CaptureEndsIntoAGraphOrIsAbandoned) {
  CUstream stream = reinterpret_cast<CUstream>(0x2);
  {
    auto capture = hal::GraphCapture::begin(fakeCudaDriver(), stream);
    ASSERT_TRUE(capture);
    EXPECT_TRUE(fakeState().capturing);
    hal::GraphCapture held = std::move(capture.value());
    EXPECT_FALSE(capture->active());
    EXPECT_TRUE(held.active());
  } // destroyed open: abandoned
  EXPECT_FALSE(fakeState().capturing);
  EXPECT_EQ(fakeState().graphsLive, 0);
  EXPECT_EQ(fakeState().execsLive, 0);

  auto capture = hal::GraphCapture::begin(fakeCudaDriver(), stream);
  ASSERT_TRUE(capture);
  fakeCudaDriver().cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr);
  auto graph = capture->end();
  ASSERT_TRUE(graph) << graph.status().message();
  EXPECT_FALSE(capture->active());
  EXPECT_EQ(fakeState().graphsLive, 0) << "the CUgraph is destroyed once instantiated";
  EXPECT_EQ(fakeState().execsLive, 1);
  EXPECT_EQ(fakeState().launches, 0) << "captured, not run";
  ASSERT_TRUE(graph->launch(stream));
  ASSERT_TRUE(graph->launch(stream));
  EXPECT_EQ(fakeState().launches, 2);
  hal::Graph moved = std::move(graph.value());
  EXPECT_FALSE(*graph);
  EXPECT_FALSE(graph->launch(stream)) << "an empty graph does not launch";
  moved.reset();
  EXPECT_EQ(fakeState().execsLive, 0);
  EXPECT_FALSE(capture->end()) << "no capture in progress";
}

TEST_F(Hal, DeviceReleasesItsContextAndStream) {
  {
    auto device = hal::Device::open(fakeCudaDriver(), 0);
    ASSERT_TRUE(device);
    EXPECT_EQ(fakeState().contextsRetained, 1);
    EXPECT_EQ(fakeState().streamsLive, 1);
    EXPECT_TRUE(device->makeCurrent());
    EXPECT_TRUE(device->synchronize());
    EXPECT_EQ(device->name(), "fake device");
    hal::Device moved = std::move(device.value());
    EXPECT_FALSE(device->makeCurrent()) << "a moved-from device has no context";
    EXPECT_EQ(fakeState().contextsRetained, 1);
  }
  EXPECT_EQ(fakeState().contextsRetained, 0);
  EXPECT_EQ(fakeState().streamsLive, 0);
  auto none = hal::Device::open(fakeCudaDriver(), 3);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().code(), dsc::runtime::StatusCode::Unavailable);
}

} // namespace
