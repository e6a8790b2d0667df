//===- CedSummaryTest.cpp - ds-ced-split on the released config ----------===//
//
// Builds the released module, runs the dsc-compile pipeline for each CED mode
// and checks summarizeCed: which prefill layers run on how many tokens and
// the parameters activated per prompt token (docs/passes.md).
//===----------------------------------------------------------------------===//
#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "models/ConfigImport.h"
#include "models/builder/ModelBuilder.h"
#include "passes/CedSummary.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

namespace {

dsc::ds::CedSummary summarize(const std::string &mode) {
  llvm::Expected<dsc::models::ModelSpec> spec = dsc::models::importConfigFile(
      std::string(DSC_SOURCE_DIR) + "/models/deepseek-v4.1-flash/config.json");
  EXPECT_TRUE(bool(spec));
  mlir::MLIRContext context;
  context.loadDialect<dsc::ds::DSDialect, mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module = dsc::models::buildModule(*spec, context, {});
  EXPECT_TRUE(bool(module));
  mlir::PassManager pm(&context);
  dsc::ds::buildCompilePipeline(pm, mode);
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  return dsc::ds::summarizeCed(*module);
}

TEST(CedSummary, ReleasedConfig) {
  dsc::ds::CedSummary full = summarize("full");
  dsc::ds::CedSummary bounded = summarize("bounded");
  dsc::ds::CedSummary exact = summarize("exact");
  EXPECT_EQ(full.mode, "full");
  EXPECT_EQ(full.replayTokens, 0);
  EXPECT_EQ(bounded.replayTokens, 128);
  EXPECT_EQ(exact.mode, "exact");
  EXPECT_EQ(exact.replayTokens, 2560); // (L/2)·W = 20·128
  ASSERT_EQ(full.prefillLayerTokens.size(), 40u);
  ASSERT_EQ(exact.prefillLayerTokens.size(), 40u);
  for (int id = 0; id < 40; ++id) {
    EXPECT_EQ(full.prefillLayerTokens[id], "all");
    EXPECT_EQ(exact.prefillLayerTokens[id], id < 20 ? "all" : "2560") << id;
    EXPECT_EQ(bounded.prefillLayerTokens[id], id < 20 ? "all" : "128") << id;
  }
  // Bounded and exact run the same ops on all tokens; full adds the decoder.
  EXPECT_DOUBLE_EQ(bounded.activatedPerPromptToken, exact.activatedPerPromptToken);
  EXPECT_GT(full.activatedPerPromptToken, 1.5 * exact.activatedPerPromptToken);
  // Decode's activated count minus the head (last row only in prefill), and
  // the report's encoder + projection count minus layer 20's hc_attn mixes
  // (24·20480 + 3 + 24 = 491547, not needed by the projection).
  EXPECT_DOUBLE_EQ(full.activatedPerPromptToken, 15468672112.0);
  EXPECT_DOUBLE_EQ(exact.activatedPerPromptToken, 7895572792.0);
  std::printf("activated per prompt token: full %.0f, bounded %.0f, exact %.0f\n",
              full.activatedPerPromptToken, bounded.activatedPerPromptToken,
              exact.activatedPerPromptToken);
}

} // namespace
