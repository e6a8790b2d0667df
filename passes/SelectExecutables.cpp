//===- SelectExecutables.cpp - ds-select-executables ----------------------===//
//
// What: marks every `ds.fused` group that a native executable of
// runtime/include/dsc/abi/NativeExecutables.def runs with
// `executable = "<name>"`. A group matches when its `kernel` is the
// executable's group and its ops, in order, fit the executable's step pattern
// (optional steps, steps whose results must stay internal, required unit
// attributes). Lowering copies the name into the plan (Fusion::executable),
// so whether a group runs natively is decided here and visible in the plan
// and in `dsc-compile --emit=mlir`; no backend pattern-matches steps.
//
// Invariants: values never change (an executable computes exactly its
// steps' values); a step marked `*` only matches when none of its results is
// yielded by the group, because a native executable may never write them; a
// group that matches no executable is left unmarked (run step by step).
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "dsc/abi/NativeExecutables.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"

#include <string>
#include <vector>

namespace dsc::ds {
#define GEN_PASS_DEF_SELECTEXECUTABLES
#include "passes/Passes.h.inc"
} // namespace dsc::ds

using namespace mlir;
using namespace dsc::ds;

namespace {

/// One token of a step pattern: `[kernel]`, `kernel*`, `kernel(attr)`.
struct Step {
  std::string kernel, attr;
  bool optional = false, internal = false;
};

std::vector<Step> parseSteps(llvm::StringRef pattern) {
  std::vector<Step> steps;
  llvm::SmallVector<llvm::StringRef> tokens;
  pattern.split(tokens, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef t : tokens) {
    Step s;
    if (t.consume_front("["))
      s.optional = t.consume_back("]");
    if (t.consume_back(")")) {
      auto [kernel, attr] = t.split('(');
      t = kernel;
      s.attr = attr.str();
    }
    s.internal = t.consume_back("*");
    s.kernel = t.str();
    steps.push_back(std::move(s));
  }
  return steps;
}

bool truthy(Operation *op, llvm::StringRef attr) {
  Attribute a = op->getAttr(attr);
  if (auto b = llvm::dyn_cast_or_null<BoolAttr>(a))
    return b.getValue();
  return a && llvm::isa<UnitAttr>(a);
}

/// Whether the group's ops fit `pattern`.
bool matches(FusedOp fused, llvm::StringRef pattern) {
  Block &body = fused.getBody().front();
  Operation *yield = body.getTerminator();
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  size_t next = 0;
  for (const Step &step : parseSteps(pattern)) {
    Operation *op = next < ops.size() ? ops[next] : nullptr;
    if (!op || op->getName().stripDialect() != step.kernel) {
      if (step.optional)
        continue;
      return false;
    }
    if (!step.attr.empty() && !truthy(op, step.attr))
      return false;
    if (step.internal)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (user == yield)
            return false;
    ++next;
  }
  return next == ops.size();
}

struct SelectExecutablesPass
    : public dsc::ds::impl::SelectExecutablesBase<SelectExecutablesPass> {
  void runOnOperation() override {
    getOperation().walk([&](FusedOp fused) {
      fused->removeAttr("executable");
      for (const dsc::abi::NativeExecutableInfo &e : dsc::abi::kNativeExecutables)
        if (fused.getKernel() == e.group && matches(fused, e.steps)) {
          fused->setAttr("executable", StringAttr::get(&getContext(), e.name));
          return;
        }
    });
  }
};

} // namespace

