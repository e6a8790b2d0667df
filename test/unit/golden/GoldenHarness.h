//===- GoldenHarness.h - Compile a golden case and compare a run with it ---===//
//
// compileGoldenPlan builds the conformance plan of a golden case in process
// (config -> ModelSpec -> ds module -> passes -> plan, --layer-boundaries,
// --ced=full, the case's engram_token_map.json). GoldenComparator is a
// SessionObserver that checks every gate of ../shared/golden/README.md
// ("How to compare") before the boundary is forced, and records the numbers.
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_UNIT_GOLDEN_GOLDENHARNESS_H
#define DSC_TEST_UNIT_GOLDEN_GOLDENHARNESS_H

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Safetensors.h"
#include "models/ModelSpec.h"

#include <map>
#include <tuple>
#include <set>
#include <string>
#include <vector>

namespace dsc::test {

struct CompiledCase {
  models::ModelSpec spec;
  runtime::Plan plan;
};

/// Empty `error` on success.
CompiledCase compileGoldenPlan(const std::string &caseDir, std::string &error);

/// The same pipeline with a CED mode (full | bounded | exact) and a
/// max_seq_len (0: the config's); a free-running plan (last-position logits)
/// unless `layerBoundaries`.
CompiledCase compileCasePlan(const std::string &caseDir, const std::string &cedMode,
                             int64_t maxSeqLen, bool layerBoundaries, std::string &error);

/// Relative error ‖a−b‖/‖b‖ over the given rows of [rows, width] arrays
/// (all rows if `rows` is empty).
double relativeError(const std::vector<float> &a, const std::vector<float> &b, int64_t width,
                     const std::vector<int64_t> &rows = {});

struct BlockResult {
  std::string phase;
  int64_t layer = 0;
  double blockError = 0;      ///< over the rows not excused
  double worstRowError = 0;   ///< largest per-row error outside excused rows
  int64_t worstRow = -1;      ///< its row
  int64_t excusedRows = 0;
};

class GoldenComparator : public runtime::SessionObserver {
public:
  GoldenComparator(const runtime::SafetensorsFile &golden, const models::ModelSpec &spec)
      : golden_(golden), spec_(spec) {}

  void afterLaunch(const runtime::CallInfo &, const runtime::Program &, const runtime::Launch &,
                   const runtime::KernelSpec &,
                   std::span<const runtime::HostTensor *const> outputs) override;
  runtime::Status atBoundary(const runtime::CallInfo &call, int64_t layer,
                             runtime::HostTensor &stream, runtime::HostTensor &mix) override;

  const std::vector<BlockResult> &blocks() const { return blocks_; }
  /// Every failed gate, as readable lines ("prefill layer 5: row 68 top-k set differs").
  const std::vector<std::string> &failures() const { return failures_; }
  void fail(std::string message) { failures_.push_back(std::move(message)); }

  /// Tie rows of `key` ("prefill.layers.3.topk_ties"), empty if absent.
  std::set<int64_t> ties(const std::string &key) const;
  /// Rows of block L excused in its error (expert ties, its index source's and
  /// candidate source's top-k ties).
  std::set<int64_t> excusedBlockRows(const std::string &phase, int64_t layer) const;
  /// Rows excused in the top-k sets of index source L.
  std::set<int64_t> excusedTopKRows(const std::string &phase, int64_t layer) const;

private:
  const runtime::SafetensorsFile &golden_;
  const models::ModelSpec &spec_;
  std::vector<BlockResult> blocks_;
  std::vector<std::string> failures_;
};

/// Reads a golden tensor as float32 values (bf16 widened), or as int64.
std::vector<float> goldenFloats(const runtime::TensorView &view);
std::vector<int64_t> goldenInts(const runtime::TensorView &view);

/// A prompt of `length` ids for free-running tests on a golden checkpoint:
/// the case's expected.safetensors input_ids, extended deterministically past
/// their end (id i = (base[(31 i + 7) % n] + i) % vocab). Empty (with a test
/// failure) when the file or its input_ids cannot be read.
std::vector<int32_t> extendedGoldenIds(const std::string &caseDir, int64_t length, int64_t vocab);

} // namespace dsc::test

#endif // DSC_TEST_UNIT_GOLDEN_GOLDENHARNESS_H
