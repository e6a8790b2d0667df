//===- GoldenHarness.cpp - Compile a golden case and compare a run with it -===//
#include "GoldenHarness.h"

#include <gtest/gtest.h>

#include "compiler/PlanPipeline.h"
#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "dsc/numerics/EngramTokenMap.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "dsc/numerics/SparseSelect.h"
#include "models/ConfigImport.h"
#include "models/builder/ModelBuilder.h"
#include "models/builder/PlanFacts.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cmath>

namespace dsc::test {

CompiledCase compileGoldenPlan(const std::string &caseDir, std::string &error) {
  return compileCasePlan(caseDir, "full", 0, /*layerBoundaries=*/true, error);
}

CompiledCase compileCasePlan(const std::string &caseDir, const std::string &cedMode,
                             int64_t maxSeqLen, bool layerBoundaries, std::string &error) {
  CompiledCase result;
  llvm::Expected<models::ModelSpec> spec = models::importConfigFile(caseDir + "/config.json");
  if (!spec) {
    error = llvm::toString(spec.takeError());
    return result;
  }
  result.spec = std::move(*spec);
  mlir::MLIRContext context;
  context.loadDialect<ds::DSDialect, mlir::func::FuncDialect>();
  models::BuildOptions options;
  options.allPrefillLogits = layerBoundaries;
  mlir::OwningOpRef<mlir::ModuleOp> module = models::buildModule(result.spec, context, options);
  if (!module) {
    error = "the module does not verify";
    return result;
  }
  mlir::PassManager pm(&context);
  ds::buildCompilePipeline(pm, cedMode, {"all"}); // dsc-compile's default fusion
  if (mlir::failed(pm.run(*module))) {
    error = "the analysis pipeline failed";
    return result;
  }
  // dsc-compile's library pipeline for a CPU plan, in one prefill call
  // (tests that chunk set the chunk themselves).
  compiler::PlanCompileOptions plan;
  plan.facts = models::planFactsFor(
      result.spec, maxSeqLen > 0 ? maxSeqLen : result.spec.limits.maxSeqLen.value_or(4096), 1);
  plan.facts.layerBoundaries = layerBoundaries;
  std::optional<numerics::EngramTokenMap> map =
      numerics::readEngramTokenMap(caseDir + "/engram_token_map.json", &error);
  if (!map)
    return result;
  plan.facts.engramTokenMap = map->lookup;
  plan.facts.engramCompressedVocabSize = map->compressedVocabSize;
  plan.prefillChunk = 0;
  plan.gpuArch = "none";
  plan.kernels = compiler::KernelMode::Skip;
  runtime::Expected<compiler::CompiledPlan> compiled = compiler::compileModuleToPlan(*module, plan);
  if (!compiled) {
    error = compiled.status().message();
    return result;
  }
  result.plan = std::move(compiled->plan);
  return result;
}

double relativeError(const std::vector<float> &a, const std::vector<float> &b, int64_t width,
                     const std::vector<int64_t> &rows) {
  double num = 0, den = 0;
  auto add = [&](int64_t r) {
    for (int64_t i = r * width; i < (r + 1) * width; ++i) {
      double d = double(a[i]) - double(b[i]);
      num += d * d;
      den += double(b[i]) * double(b[i]);
    }
  };
  if (rows.empty())
    for (int64_t r = 0; r < int64_t(b.size()) / width; ++r)
      add(r);
  else
    for (int64_t r : rows)
      add(r);
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<float> goldenFloats(const runtime::TensorView &view) {
  std::vector<float> out(view.numElements());
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    if (view.dtype == runtime::DType::BF16)
      out[i] = numerics::bf16ToFloat(view.as<uint16_t>()[i]);
    else if (view.dtype == runtime::DType::F32)
      out[i] = view.as<float>()[i];
  }
  return out;
}

std::vector<int32_t> extendedGoldenIds(const std::string &caseDir, int64_t length,
                                       int64_t vocab) {
  auto golden = runtime::SafetensorsFile::open(caseDir + "/expected.safetensors");
  const runtime::TensorView *inputIds = golden ? golden->find("input_ids") : nullptr;
  EXPECT_TRUE(inputIds) << caseDir << "/expected.safetensors: no input_ids";
  if (!inputIds)
    return {};
  std::vector<int64_t> base = goldenInts(*inputIds);
  EXPECT_FALSE(base.empty());
  if (base.empty() || vocab <= 0)
    return {};
  const int64_t n = int64_t(base.size());
  std::vector<int32_t> ids(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i)
    ids[size_t(i)] = int32_t(i < n ? base[size_t(i)] : (base[size_t((i * 31 + 7) % n)] + i) % vocab);
  return ids;
}

std::vector<int64_t> goldenInts(const runtime::TensorView &view) {
  std::vector<int64_t> out(view.numElements());
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    switch (view.dtype) {
    case runtime::DType::I32: out[i] = view.as<int32_t>()[i]; break;
    case runtime::DType::I64: out[i] = view.as<int64_t>()[i]; break;
    case runtime::DType::U8: out[i] = view.as<uint8_t>()[i]; break;
    default: out[i] = 0;
    }
  }
  return out;
}

namespace {

std::vector<float> hostFloats(const runtime::HostTensor &t) {
  std::vector<float> out(t.numElements());
  for (int64_t i = 0; i < int64_t(out.size()); ++i)
    out[i] = t.dtype() == runtime::DType::BF16 ? numerics::bf16ToFloat(t.data<uint16_t>()[i])
                                               : t.data<float>()[i];
  return out;
}

std::string layerKey(const std::string &phase, int64_t layer, const std::string &what) {
  return phase + ".layers." + std::to_string(layer) + "." + what;
}

} // namespace

std::set<int64_t> GoldenComparator::ties(const std::string &key) const {
  std::set<int64_t> rows;
  if (const runtime::TensorView *view = golden_.find(key))
    for (int64_t r : goldenInts(*view))
      rows.insert(r);
  return rows;
}

std::set<int64_t> GoldenComparator::excusedBlockRows(const std::string &phase, int64_t layer) const {
  std::set<int64_t> rows = ties(layerKey(phase, layer, "expert_ties"));
  const models::LayerSpec &l = spec_.layers.at(layer);
  if (l.indexSource)
    for (int64_t r : excusedTopKRows(phase, *l.indexSource))
      rows.insert(r);
  int64_t cand = spec_.candidateSourceLayer;
  if (cand >= 0 && layer > cand && l.compressRatio == spec_.layers.at(cand).compressRatio)
    for (int64_t r : ties(layerKey(phase, cand, "topk_ties")))
      rows.insert(r);
  return rows;
}

std::set<int64_t> GoldenComparator::excusedTopKRows(const std::string &phase, int64_t layer) const {
  std::set<int64_t> rows = ties(layerKey(phase, layer, "topk_ties"));
  if (spec_.layers.at(layer).usesCandidates)
    for (int64_t r : ties(layerKey(phase, spec_.candidateSourceLayer, "topk_ties")))
      rows.insert(r);
  return rows;
}

void GoldenComparator::afterLaunch(const runtime::CallInfo &call, const runtime::Program &,
                                   const runtime::Launch &launch, const runtime::KernelSpec &kernel,
                                   std::span<const runtime::HostTensor *const> outputs) {
  const std::string &phase = call.phase;
  if (kernel.name == "indexer_topk" || kernel.name == "candidate_blocks") {
    bool topk = kernel.name == "indexer_topk";
    std::string key = layerKey(phase, launch.layer, topk ? "topk_idxs" : "candidates");
    const runtime::TensorView *view = golden_.find(key);
    if (!view)
      return;
    const runtime::HostTensor &mine = *outputs[0];
    std::vector<int64_t> gold = goldenInts(*view);
    int64_t rows = view->shape[0], goldWidth = view->shape[1], myWidth = mine.dim(1);
    std::set<int64_t> excused = topk ? excusedTopKRows(phase, launch.layer)
                                     : ties(layerKey(phase, launch.layer, "topk_ties"));
    for (int64_t r = 0; r < rows; ++r) {
      if (excused.count(r))
        continue;
      bool same = true;
      if (topk) {
        std::set<int64_t> a, b;
        for (int64_t j = 0; j < myWidth; ++j)
          if (int64_t v = mine.data<int32_t>()[r * myWidth + j]; v >= 0)
            a.insert(v);
        for (int64_t j = 0; j < goldWidth; ++j)
          if (int64_t v = gold[r * goldWidth + j]; v >= 0)
            b.insert(v);
        same = a == b;
      } else { // our block ids against the golden mask
        const int64_t blockSize = kernel.as<dsc::abi::CandidateBlocksParams>()->block_size;
        const std::vector<uint8_t> mask = numerics::candidateMaskFromBlocks(
            mine.data<int32_t>() + r * myWidth, myWidth, blockSize, goldWidth);
        for (int64_t j = 0; j < goldWidth && same; ++j)
          same = int64_t(mask[size_t(j)]) == gold[r * goldWidth + j];
      }
      if (!same)
        fail(phase + " layer " + std::to_string(launch.layer) + ": row " + std::to_string(r) +
             (topk ? " top-k set differs" : " candidate mask differs"));
    }
  } else if (kernel.name == "engram_hash") {
    const runtime::TensorView *view = golden_.find(phase + ".engram_hash_ids");
    if (!view)
      return;
    std::vector<int64_t> gold = goldenInts(*view);
    const runtime::HostTensor &mine = *outputs[1];
    for (int64_t i = 0; i < int64_t(gold.size()); ++i)
      if (mine.data<int64_t>()[i] != gold[i]) {
        fail(phase + ": Engram hash id " + std::to_string(i) + " differs");
        break;
      }
  }
}

runtime::Status GoldenComparator::atBoundary(const runtime::CallInfo &call, int64_t layer,
                                             runtime::HostTensor &stream, runtime::HostTensor &) {
  const runtime::TensorView *view = golden_.find(layerKey(call.phase, layer, "out"));
  if (!view)
    return runtime::Status::ok();
  std::vector<float> mine = hostFloats(stream), gold = goldenFloats(*view);
  int64_t rows = stream.dim(0), width = stream.numElements() / rows;
  std::set<int64_t> excused = excusedBlockRows(call.phase, layer);
  std::vector<int64_t> kept;
  BlockResult result;
  result.phase = call.phase;
  result.layer = layer;
  for (int64_t r = 0; r < rows; ++r) {
    if (excused.count(r)) {
      ++result.excusedRows;
      continue;
    }
    kept.push_back(r);
    double e = relativeError(mine, gold, width, {r});
    if (e > result.worstRowError) {
      result.worstRowError = e;
      result.worstRow = r;
    }
  }
  result.blockError = kept.empty() ? 0 : relativeError(mine, gold, width, kept);
  blocks_.push_back(result);
  return runtime::Status::ok();
}

} // namespace dsc::test
