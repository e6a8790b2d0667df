//===- TypedAdapter.h - An adapter that receives its kernel's typed params -===//
//
// Both backends register their adapters by parameter struct
// (add<abi::RmsNormParams>(table, fn)); this is the one wrapper that hands
// `fn` the launch's params as that struct. verifyPlan checks a kernel's
// params are its own, so the mismatch branch only defends in-memory plans
// built past the verifier. Context is the backend's launch context (it has
// `kernel`, a KernelSpec).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_TYPEDADAPTER_H
#define DSC_RUNTIME_TYPEDADAPTER_H

#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <functional>
#include <string>

namespace dsc::runtime {

template <typename Context, typename T>
std::function<Status(Context &)> typedAdapter(Status (*fn)(Context &, const T &)) {
  return [fn](Context &c) -> Status {
    const T *p = c.kernel.template as<T>();
    if (!p)
      return internalError("kernel '" + c.kernel.name + "': parameters of another kernel");
    return fn(c, *p);
  };
}

} // namespace dsc::runtime

#endif // DSC_RUNTIME_TYPEDADAPTER_H
