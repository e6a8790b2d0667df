//===- CudaDenseKernelsTest.cpp - The dense kernel templates compile -------===//
//
// Compiles each dense kernel template (codegen/kernels/<name>.cu) with NVRTC
// through dsc::codegen::compileKernel and checks that the result has a cubin
// and that the PTX declares every entry the CUDA adapters launch
// (runtime/cuda/CudaAdapters{Basic,Dense}.cpp): the CPU-order entries and the
// fast ones (gemv.cuh). No GPU needed; skipped when
// NVRTC cannot be loaded.
//===----------------------------------------------------------------------===//
#include "codegen/KernelCompiler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

struct KernelCase {
  std::string name;
  std::vector<std::string> entries;
};

std::vector<KernelCase> denseKernels() {
  return {
      {"embed", {"dsc_embed"}},
      {"hc_expand", {"dsc_hc_expand"}},
      {"hc_identity_mix", {"dsc_hc_identity_mix"}},
      {"concat", {"dsc_concat"}},
      {"engram_hash", {"dsc_engram_hash_map", "dsc_engram_hash"}},
      {"linear",
       {"dsc_linear_act_quant", "dsc_linear_fp8", "dsc_linear_fp4", "dsc_linear_bf16",
        "dsc_linear_act_quant_fast", "dsc_linear_fp8_fast", "dsc_linear_fp4_fast",
        "dsc_linear_bf16_fast", "dsc_linear_splitk_reduce_fast", "dsc_linear_fp8_lanes",
        "dsc_linear_fp4_lanes", "dsc_linear_fp8_wg", "dsc_linear_fp4_wg"}},
      {"rms_norm", {"dsc_rms_norm", "dsc_rms_norm_fast"}},
      {"hc_mixes", {"dsc_hc_mixes", "dsc_hc_mixes_dot_fast", "dsc_hc_mixes_finish_fast"}},
      {"hc_pre", {"dsc_hc_pre"}},
      {"hc_post", {"dsc_hc_post"}},
      {"copy_mean", {"dsc_copy_mean"}},
      {"head", {"dsc_head", "dsc_head_fast"}},
      {"grouped_output",
       {"dsc_grouped_output_woa", "dsc_grouped_output_act_quant", "dsc_grouped_output_fp8",
        "dsc_grouped_output_woa_fast", "dsc_grouped_output_act_quant_fast",
        "dsc_grouped_output_fp8_fast", "dsc_grouped_output_splitk_reduce_fast",
        "dsc_grouped_output_fp8_lanes", "dsc_grouped_output_fp8_wg"}},
      {"moe_gate", {"dsc_moe_gate", "dsc_moe_gate_scores_fast", "dsc_moe_gate_select_fast",
                    "dsc_moe_gate_fused_fast"}},
      {"moe_experts",
       {"dsc_moe_experts_zero", "dsc_moe_experts_order", "dsc_moe_experts_act_quant",
        "dsc_moe_experts_up_fp4", "dsc_moe_experts_down_fp4", "dsc_moe_experts_up_fp8",
        "dsc_moe_experts_down_fp8", "dsc_moe_experts_act_quant_fast", "dsc_moe_experts_up_fast",
        "dsc_moe_experts_down_fast", "dsc_moe_experts_up_lanes", "dsc_moe_experts_down_lanes",
        "dsc_moe_experts_up_wg", "dsc_moe_experts_down_wg", "dsc_moe_experts_combine_fast"}},
      {"engram_lookup", {"dsc_engram_lookup"}},
      {"engram_gate", {"dsc_engram_gate"}},
      {"mhc_entry", {"dsc_mhc_pre_norm", "dsc_mhc_pre_norm_fast", "dsc_mhc_entry_decode_fast"}}, // native executable mhc_entry_pre_norm
  };
}

class CudaDenseKernels : public ::testing::TestWithParam<KernelCase> {};

TEST_P(CudaDenseKernels, CompilesWithEntries) {
  const KernelCase &k = GetParam();
  if (dsc::codegen::nvrtcVersion().empty())
    GTEST_SKIP() << "NVRTC is unavailable";
  ASSERT_TRUE(dsc::codegen::hasKernelSource(k.name)) << k.name << ".cu is not embedded";
  dsc::codegen::KernelCompileOptions options;
  options.useCache = false;
  auto compiled = dsc::codegen::compileKernel(k.name, options);
  ASSERT_TRUE(compiled.hasValue()) << compiled.status().message();
  EXPECT_FALSE(compiled->cubin.empty()) << k.name;
  for (const std::string &entry : k.entries)
    EXPECT_NE(compiled->ptx.find(".entry " + entry + "("), std::string::npos)
        << k.name << ": no entry " << entry;
}

INSTANTIATE_TEST_SUITE_P(Dense, CudaDenseKernels, ::testing::ValuesIn(denseKernels()),
                         [](const ::testing::TestParamInfo<KernelCase> &info) {
                           return info.param.name;
                         });

} // namespace
