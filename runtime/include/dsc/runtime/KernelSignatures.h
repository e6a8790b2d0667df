//===- KernelSignatures.h - What each kernel of the vocabulary accepts ----===//
//
// The checked form of docs/kernels.md: one table, shared by every backend,
// describing for each kernel name the launches it accepts (input / output
// counts, per position the dtype set, rank and state kind) and the shape
// relations and parameter ranges its adapters rely on (e.g. grouped_output's
// `groups` divides the heads, head writes f32 [rows <= S, V], compress_kv's
// `ratio` is its main KV's ratio). verifyPlan (PlanFile.h) checks every
// launch of every program against this table, so that no loader hands an
// adapter a launch it would read or write out of bounds on.
//
// Parameters are typed (dsc/abi/KernelParams.h, generated from the ds ODS), so
// this table holds only the memory-safety bounds the adapters rely on: value
// ranges of parameters and shape relations between operands.
//
// Static checks only: dtypes, ranks, fixed dimensions, parameters, state
// kinds and the dimensions shared between operands. A symbolic dimension
// (kTokens, kCompressed*, kWindowRows) is compared with another symbolic one
// (same symbol required where the adapter assumes equality); kTokens with a
// fixed one by programFixedTokens; any other symbol never equals a fixed one.
// What depends on the call (the start position, the KV capacity a call
// reaches) is checked per launch by the adapters.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_KERNELSIGNATURES_H
#define DSC_RUNTIME_KERNELSIGNATURES_H

#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <string>
#include <vector>

namespace dsc::runtime {

/// One input or output position of a kernel.
struct OperandSignature {
  const char *role = "";      ///< e.g. "ids", "table", "ring"
  std::vector<DType> dtypes;  ///< allowed dtypes; empty = any
  int rankMin = 0, rankMax = 0; ///< allowed ranks (0, 0 = any)
  /// Allowed state kinds; empty = the operand must not be a state.
  std::vector<StateKind> states;
};

/// The operand context the relation check sees: the slot and, for a state
/// value, its buffer.
struct OperandView {
  const ValueSlot *slot = nullptr;
  const StateBuffer *state = nullptr;
};

struct KernelSignature {
  const char *name = "";
  /// Accepted input layouts, selected by the number of inputs (e.g.
  /// sparse_attention: 4 or 6, linear: 2 or 3). With `variadicInputs`, the
  /// single layout's last position repeats (concat).
  std::vector<std::vector<OperandSignature>> inputLayouts;
  std::vector<OperandSignature> outputs;
  bool variadicInputs = false;
  /// Shape relations and parameter ranges; returns "" or what is wrong.
  /// fixedTokens: programFixedTokens of the launch's program.
  std::string (*relations)(const KernelSpec &, const Plan &,
                           const std::vector<OperandView> &inputs,
                           const std::vector<OperandView> &outputs,
                           int64_t fixedTokens) = nullptr;
};

/// The table (every kernel of docs/kernels.md).
const std::vector<KernelSignature> &kernelSignatures();
/// The signature of `name`, or null for a kernel outside the vocabulary.
const KernelSignature *findKernelSignature(const std::string &name);

/// The rows every call of `program` has: 1 for "decode" (Session::decode),
/// 0 (the call decides) for the others. A fixed dimension the signature ties
/// to a kTokens one must equal it (decode) or be kTokens too (the others).
int64_t programFixedTokens(const Program &program);

/// Checks launch `launchIndex` of `program` against its kernel's signature. A
/// kernel outside the table passes (Backend::check rejects kernels a backend
/// does not implement, so such a launch never runs).
/// Assumes verifyPlan's index checks passed (kernel, value and state indices
/// in range). Errors read "program 'prefill' launch 12 (head): output 0 is
/// BF16, expected F32".
Status checkLaunchSignature(const Plan &plan, const Program &program, size_t launchIndex);

/// Checks that a State value slot matches its state buffer: record states are
/// U8 [rows, entryBytes]; CompressorState F32 [2, ratio, dim]; EngramHistory
/// I64 [capacity]. Returns "" or what is wrong.
std::string checkStateSlot(const ValueSlot &slot, const StateBuffer &state);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_KERNELSIGNATURES_H
