//===- AttentionKernelsTest.cpp - The CSA2 attention kernel templates -----===//
//
// Compiles each attention template (codegen/kernels/<name>.cu, embedded)
// with NVRTC for sm_90a and checks that the PTX defines every entry point the
// CUDA adapters (runtime/cuda/CudaAdaptersAttention.cpp) launch. Needs no
// GPU; skipped when NVRTC is not in the build.
//===----------------------------------------------------------------------===//
#include "codegen/KernelCompiler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace dsc::codegen;

namespace {

struct Template {
  std::string name;
  std::vector<std::string> entries;
};

const std::vector<Template> &templates() {
  static const std::vector<Template> t = {
      {"rope", {"dsc_rope"}},
      {"window_kv", {"dsc_window_kv", "dsc_window_kv_ring"}},
      {"compressor",
       {"dsc_compressor_linear", "dsc_compressor_state", "dsc_compressor_pool",
        "dsc_compressor_norm", "dsc_compressor_linear_fast"}},
      {"compress_kv", {"dsc_compress_kv"}},
      {"index_keys", {"dsc_index_keys_linear", "dsc_index_keys_linear_fast", "dsc_index_keys_norm",
                      "dsc_index_keys_write"}},
      {"index_queries",
       {"dsc_index_queries_act", "dsc_index_queries_gemm", "dsc_index_queries_rope_qdq",
        "dsc_index_queries_act_quant_fast", "dsc_index_queries_gemm_fast",
        "dsc_index_queries_gemm_lanes", "dsc_index_queries_gemm_wg",
        "dsc_index_queries_splitk_reduce_fast"}},
      {"indexer_score", {"dsc_indexer_score", "dsc_indexer_score_fast"}},
      {"candidate_blocks", {"dsc_candidate_blocks"}},
      {"indexer_topk", {"dsc_indexer_topk_select", "dsc_indexer_topk_emit"}},
      {"sparse_attention",
       {"dsc_sparse_attention", "dsc_sparse_attention_fast", "dsc_sparse_attention_logits_fast",
        "dsc_sparse_attention_pv_fast", "dsc_sparse_attention_merge_fast",
        "dsc_sparse_attention_logits_mqa", "dsc_sparse_attention_pv_mqa",
        "dsc_sparse_attention_logits_tc", "dsc_sparse_attention_pv_tc"}},
  };
  return t;
}

bool hasEntry(const std::string &ptx, const std::string &entry) {
  // ".entry dsc_x(" -- the paren keeps dsc_x from matching dsc_x_step.
  return ptx.find(".entry " + entry + "(") != std::string::npos;
}

class AttentionKernels : public ::testing::TestWithParam<Template> {
protected:
  void SetUp() override {
    if (nvrtcVersion().empty())
      GTEST_SKIP() << "NVRTC not available in this build";
  }
};

} // namespace

TEST(AttentionKernelSources, AllEmbedded) {
  for (const Template &t : templates())
    EXPECT_TRUE(hasKernelSource(t.name)) << t.name;
  EXPECT_FALSE(hasKernelSource("attention")); // attention.cuh is a header
}

TEST_P(AttentionKernels, CompilesWithEntries) {
  const Template &t = GetParam();
  KernelCompileOptions opts;
  opts.useCache = false;
  auto k = compileKernel(t.name, opts);
  ASSERT_TRUE(k) << t.name << ": " << k.status().message();
  EXPECT_FALSE(k->cubin.empty()) << t.name;
  for (const std::string &e : t.entries)
    EXPECT_TRUE(hasEntry(k->ptx, e)) << t.name << " lacks .entry " << e;
}

INSTANTIATE_TEST_SUITE_P(Templates, AttentionKernels, ::testing::ValuesIn(templates()),
                         [](const ::testing::TestParamInfo<Template> &info) {
                           return info.param.name;
                         });
