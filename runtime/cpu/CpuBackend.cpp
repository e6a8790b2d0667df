//===- CpuBackend.cpp - The CPU reference backend ---------------------------===//
//
// Executes launches with the reference's rounding points (runtime/cpu/
// kernels). Adapters come from CpuAdapters*.cpp; `check` rejects a plan that
// uses a kernel with no CPU adapter, naming it.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuAdapter.h"
#include "runtime/cpu/ParallelFor.h"

namespace dsc::cpu {
namespace {

class CpuBackend final : public runtime::Backend {
public:
  CpuBackend() {
    registerBasicAdapters(table_);
    registerDenseAdapters(table_);
    registerAttentionAdapters(table_);
  }
  const char *name() const override { return "cpu"; }
  Status check(const runtime::Plan &plan) const override {
    for (const runtime::KernelSpec &kernel : plan.kernels)
      if (!table_.count(kernel.name))
        return runtime::failedPrecondition("the CPU backend has no kernel '" + kernel.name + "'");
    return Status::ok();
  }
  Status launch(LaunchContext &context) override {
    auto it = table_.find(context.kernel.name);
    if (it == table_.end())
      return runtime::failedPrecondition("the CPU backend has no kernel '" + context.kernel.name + "'");
    return it->second(context);
  }

private:
  AdapterTable table_;
};

} // namespace
} // namespace dsc::cpu

std::unique_ptr<dsc::runtime::Backend> dsc::runtime::createCpuBackend(int64_t threads) {
  dsc::cpu::setCpuThreadCount(threads);
  return std::make_unique<dsc::cpu::CpuBackend>();
}
