//===- KernelAbiTest.cpp - Host and device agree on the kernel params ABI -===//
//
// The CUDA kernels take their kernel's dsc::abi::<X>Params (dsc/abi/
// KernelParams.h, generated) as one `const __grid_constant__` argument and
// the host adapters pass the struct they get (common.cuh's convention). These
// tests compile with NVRTC (no GPU) and read the PTX:
//   - a source including only dsc/abi/KernelParams.h with one kernel per
//     params struct: each entry has exactly one param, a byte array of
//     sizeof(struct) at alignof(struct) as the host compiler lays it out;
//   - RopeParams (a Rope inside): the PTX offset and width of each field's
//     load equal the host's offsetof / sizeof;
//   - every entry of every embedded template: the entries that use
//     parameters take their struct first (and the fused attention the rope
//     step's second), no other argument is a struct.
// Skipped when NVRTC is not in the build.
//===----------------------------------------------------------------------===//
#include "codegen/KernelCompiler.h"
#include "dsc/abi/KernelParams.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <variant>
#include <vector>

using namespace dsc::codegen;

namespace {

// Every params struct of KernelParams.h (checked against kKernelCount).
#define DSC_ABI_STRUCTS(X)                                                                        \
  X(CandidateBlocks) X(CompressKv) X(Compressor) X(Concat) X(CopyMean) X(DSparkConfidence)        \
  X(DSparkDraft) X(DSparkMarkovHead) X(Embed) X(EngramGate) X(EngramHash) X(EngramLookup)         \
  X(GroupedOutput) X(HcExpand) X(HcIdentityMix) X(HcMixes) X(HcPost) X(HcPre) X(Head)            \
  X(IndexKeys) X(IndexQueries) X(IndexerScore) X(IndexerTopK) X(Linear) X(MoeExperts)            \
  X(MoeGate) X(ReplaySlice) X(RmsNorm) X(Rope) X(SparseAttention) X(WindowKv)

struct HostLayout {
  std::string name; ///< e.g. "RmsNorm" for dsc::abi::RmsNormParams
  size_t size, align;
};

const std::vector<HostLayout> &hostLayouts() {
#define DSC_ABI_LAYOUT(N) {#N, sizeof(dsc::abi::N##Params), alignof(dsc::abi::N##Params)},
  static const std::vector<HostLayout> all = {DSC_ABI_STRUCTS(DSC_ABI_LAYOUT)};
#undef DSC_ABI_LAYOUT
  return all;
}

/// One PTX parameter: a byte array (a struct by value) or a scalar.
struct PtxParam {
  bool isStruct = false;
  size_t size = 0, align = 0; ///< the array's bytes and alignment (structs only)
  std::string text;
};

/// The parameters of `.entry name(...)`, or nullopt if the PTX has no such entry.
std::optional<std::vector<PtxParam>> entryParams(const std::string &ptx, const std::string &name) {
  const std::string head = ".entry " + name + "(";
  const size_t at = ptx.find(head);
  if (at == std::string::npos)
    return std::nullopt;
  const size_t open = at + head.size(), close = ptx.find(')', open);
  if (close == std::string::npos)
    return std::nullopt;
  std::vector<PtxParam> out;
  const std::string list = ptx.substr(open, close - open);
  static const std::regex array(R"(\.param\s+\.align\s+(\d+)\s+\.b8\s+\w+_param_\d+\[(\d+)\])");
  size_t from = 0;
  while (from < list.size()) {
    size_t comma = list.find(',', from);
    if (comma == std::string::npos)
      comma = list.size();
    std::string p = list.substr(from, comma - from);
    from = comma + 1;
    const size_t b = p.find_first_not_of(" \t\r\n"), e = p.find_last_not_of(" \t\r\n");
    if (b == std::string::npos)
      continue;
    PtxParam param;
    param.text = p.substr(b, e - b + 1);
    std::smatch m;
    if (std::regex_search(param.text, m, array)) {
      param.isStruct = true;
      param.align = std::stoul(m[1]);
      param.size = std::stoul(m[2]);
    }
    out.push_back(param);
  }
  return out;
}

/// Names of every `.entry` of the PTX.
std::vector<std::string> entryNames(const std::string &ptx) {
  std::vector<std::string> out;
  static const std::regex entry(R"(\.entry\s+(\w+)\s*\()");
  for (std::sregex_iterator it(ptx.begin(), ptx.end(), entry), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

/// A struct parameter as the host lays it out.
struct Takes {
  size_t size, align;
};
template <typename T> Takes layoutOf() { return {sizeof(T), alignof(T)}; }

class KernelAbi : public ::testing::Test {
protected:
  void SetUp() override {
    if (nvrtcVersion().empty())
      GTEST_SKIP() << "NVRTC not available in this build";
    opts_.useCache = false;
  }
  KernelCompileOptions opts_;
};

} // namespace

static_assert(std::variant_size_v<dsc::abi::KernelParams> == size_t(dsc::abi::kKernelCount) + 1,
              "KernelParams gained or lost a kernel: update DSC_ABI_STRUCTS");

TEST(KernelAbiHost, ListsEveryParamsStruct) {
  EXPECT_EQ(hostLayouts().size(), size_t(dsc::abi::kKernelCount));
  std::set<std::string> names;
  for (const HostLayout &l : hostLayouts())
    EXPECT_TRUE(names.insert(l.name).second) << l.name;
}

TEST_F(KernelAbi, EveryStructIsOneGridConstantParamOfTheHostSize) {
  std::string src = "#include \"dsc/abi/KernelParams.h\"\n";
  for (const HostLayout &l : hostLayouts())
    src += "extern \"C\" __global__ void abi_" + l.name + "(const __grid_constant__ dsc::abi::" +
           l.name + "Params p) {}\n";
  auto k = compileSource("kernel_abi_structs", src, opts_);
  ASSERT_TRUE(k) << k.status().message();
  EXPECT_FALSE(k->cubin.empty());
  for (const HostLayout &l : hostLayouts()) {
    auto params = entryParams(k->ptx, "abi_" + l.name);
    ASSERT_TRUE(params) << "no entry abi_" << l.name;
    ASSERT_EQ(params->size(), 1u) << l.name;
    const PtxParam &p = (*params)[0];
    EXPECT_TRUE(p.isStruct) << l.name << ": " << p.text;
    EXPECT_EQ(p.size, l.size) << l.name << "Params: device " << p.text << ", host sizeof "
                              << l.size;
    EXPECT_EQ(p.align, l.align) << l.name << "Params: device " << p.text << ", host alignof "
                                << l.align;
  }
}

TEST_F(KernelAbi, RopeParamsFieldOffsetsMatchTheHost) {
  using RP = dsc::abi::RopeParams;
  using R = dsc::abi::Rope;
  const size_t rope = offsetof(RP, rope);
  struct Field {
    const char *name, *expr, *store; // entry suffix, field, device global it is stored to
    size_t offset, size;
  };
  const std::vector<Field> fields = {
      {"dim", "p.rope.dim", "gI", rope + offsetof(R, dim), sizeof(R::dim)},
      {"theta", "p.rope.theta", "gD", rope + offsetof(R, theta), sizeof(R::theta)},
      {"original_seq_len", "p.rope.original_seq_len", "gI", rope + offsetof(R, original_seq_len),
       sizeof(R::original_seq_len)},
      {"factor", "p.rope.factor", "gD", rope + offsetof(R, factor), sizeof(R::factor)},
      {"beta_fast", "p.rope.beta_fast", "gD", rope + offsetof(R, beta_fast), sizeof(R::beta_fast)},
      {"beta_slow", "p.rope.beta_slow", "gD", rope + offsetof(R, beta_slow), sizeof(R::beta_slow)},
      {"position_stride", "p.position_stride", "gI", offsetof(RP, position_stride),
       sizeof(RP::position_stride)},
      {"inverse", "p.inverse", "gB", offsetof(RP, inverse), sizeof(RP::inverse)},
  };
  // The host layout the kernels rely on (KernelAbi.h's Rope first, then the
  // op's own fields), stated once so a generator change is seen here too.
  EXPECT_EQ(sizeof(R), 48u);
  EXPECT_EQ(rope, 0u);
  EXPECT_EQ(offsetof(RP, position_stride), 48u);
  EXPECT_EQ(offsetof(RP, inverse), 56u);
  EXPECT_EQ(sizeof(RP), 64u);

  // One kernel per field, so that each entry's body holds exactly one
  // ld.param of the struct: its offset and width are the device layout.
  std::string src = "#include \"dsc/abi/KernelParams.h\"\n"
                    "__device__ long long gI;\n__device__ double gD;\n__device__ bool gB;\n";
  for (const Field &f : fields)
    src += std::string("extern \"C\" __global__ void rope_") + f.name +
           "(const __grid_constant__ dsc::abi::RopeParams p) { " + f.store + " = " + f.expr +
           "; }\n";
  auto k = compileSource("kernel_abi_rope", src, opts_);
  ASSERT_TRUE(k) << k.status().message();
  for (const Field &f : fields) {
    const std::string entry = std::string("rope_") + f.name;
    auto params = entryParams(k->ptx, entry);
    ASSERT_TRUE(params) << "no entry " << entry;
    ASSERT_EQ(params->size(), 1u) << entry;
    EXPECT_EQ((*params)[0].size, sizeof(RP)) << (*params)[0].text;
    // The entry's body: up to the next entry.
    const size_t begin = k->ptx.find(".entry " + entry + "(");
    const size_t end = k->ptx.find(".entry ", begin + 1);
    const std::string body = k->ptx.substr(begin, end == std::string::npos ? end : end - begin);
    const std::regex load("ld\\.param\\.[a-z]+?(\\d+)\\s+%\\w+,\\s*\\[" + entry +
                          "_param_0(?:\\+(\\d+))?\\]");
    std::vector<std::pair<size_t, size_t>> loads; // (offset, bytes)
    for (std::sregex_iterator it(body.begin(), body.end(), load), e; it != e; ++it)
      loads.emplace_back((*it)[2].matched ? std::stoul((*it)[2]) : 0, std::stoul((*it)[1]) / 8);
    ASSERT_EQ(loads.size(), 1u) << entry << ":\n" << body;
    EXPECT_EQ(loads[0].first, f.offset) << entry << ": device offset vs host offsetof";
    EXPECT_EQ(loads[0].second, f.size) << entry << ": device load width vs host sizeof";
  }
}

TEST_F(KernelAbi, TemplateEntriesTakeTheirStructFirst) {
  // entry -> the structs it takes first, in order. Every other entry of the
  // templates takes no struct at all.
  const std::map<std::string, std::vector<Takes>> takes = {
      {"dsc_rms_norm", {layoutOf<dsc::abi::RmsNormParams>()}},
      {"dsc_mhc_pre_norm", {layoutOf<dsc::abi::RmsNormParams>()}},
      {"dsc_hc_expand", {layoutOf<dsc::abi::HcExpandParams>()}},
      {"dsc_hc_mixes", {layoutOf<dsc::abi::HcMixesParams>()}},
      {"dsc_engram_hash", {layoutOf<dsc::abi::EngramHashParams>()}},
      {"dsc_engram_lookup", {layoutOf<dsc::abi::EngramLookupParams>()}},
      {"dsc_engram_gate", {layoutOf<dsc::abi::EngramGateParams>()}},
      {"dsc_grouped_output_woa", {layoutOf<dsc::abi::GroupedOutputParams>()}},
      {"dsc_grouped_output_woa_fast", {layoutOf<dsc::abi::GroupedOutputParams>()}},
      {"dsc_hc_mixes_finish_fast", {layoutOf<dsc::abi::HcMixesParams>()}},
      {"dsc_moe_gate_scores_fast", {layoutOf<dsc::abi::MoeGateParams>()}},
      {"dsc_moe_gate_select_fast", {layoutOf<dsc::abi::MoeGateParams>()}},
      {"dsc_moe_gate_fused_fast", {layoutOf<dsc::abi::MoeGateParams>()}},
      {"dsc_moe_experts_up_fast", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_moe_experts_up_fast_e4m3", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_moe_experts_up_lanes", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_moe_experts_up_rows", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_moe_experts_up_slots", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_moe_experts_up_wg", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_rms_norm_fast", {layoutOf<dsc::abi::RmsNormParams>()}},
      {"dsc_mhc_pre_norm_fast", {layoutOf<dsc::abi::RmsNormParams>()}},
      {"dsc_mhc_entry_decode_fast", {layoutOf<dsc::abi::RmsNormParams>()}},
      {"dsc_moe_gate", {layoutOf<dsc::abi::MoeGateParams>()}},
      {"dsc_moe_experts_up_fp4", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_moe_experts_up_fp8", {layoutOf<dsc::abi::MoeExpertsParams>()}},
      {"dsc_rope", {layoutOf<dsc::abi::RopeParams>()}},
      {"dsc_window_kv", {layoutOf<dsc::abi::WindowKvParams>()}},
      {"dsc_window_kv_ring", {layoutOf<dsc::abi::WindowKvParams>()}},
      {"dsc_window_kv_prefix", {layoutOf<dsc::abi::WindowKvParams>()}},
      {"dsc_compressor_state", {layoutOf<dsc::abi::CompressorParams>()}},
      {"dsc_compressor_pool", {layoutOf<dsc::abi::CompressorParams>()}},
      {"dsc_compressor_pool_groups", {layoutOf<dsc::abi::CompressorParams>()}},
      {"dsc_compressor_state_at", {layoutOf<dsc::abi::CompressorParams>()}},
      {"dsc_compressor_norm", {layoutOf<dsc::abi::CompressorParams>()}},
      {"dsc_compress_kv", {layoutOf<dsc::abi::CompressKvParams>()}},
      {"dsc_index_keys_linear", {layoutOf<dsc::abi::IndexKeysParams>()}},
      {"dsc_index_keys_linear_fast", {layoutOf<dsc::abi::IndexKeysParams>()}},
      {"dsc_index_keys_norm", {layoutOf<dsc::abi::IndexKeysParams>()}},
      {"dsc_index_keys_write", {layoutOf<dsc::abi::IndexKeysParams>()}},
      {"dsc_index_queries_rope_qdq", {layoutOf<dsc::abi::IndexQueriesParams>()}},
      {"dsc_indexer_score", {layoutOf<dsc::abi::IndexerScoreParams>()}},
      {"dsc_indexer_score_fast", {layoutOf<dsc::abi::IndexerScoreParams>()}},
      {"dsc_candidate_blocks", {layoutOf<dsc::abi::CandidateBlocksParams>()}},
      {"dsc_candidate_blocks_radix", {layoutOf<dsc::abi::CandidateBlocksParams>()}},
      {"dsc_indexer_topk_select", {layoutOf<dsc::abi::IndexerTopKParams>()}},
      {"dsc_indexer_topk_emit", {layoutOf<dsc::abi::IndexerTopKParams>()}},
      {"dsc_indexer_topk_radix", {layoutOf<dsc::abi::IndexerTopKParams>()}},
      // The fused `attention` kernel: its two steps' structs, in step order.
      {"dsc_sparse_attention",
       {layoutOf<dsc::abi::SparseAttentionParams>(), layoutOf<dsc::abi::RopeParams>()}},
      {"dsc_sparse_attention_fast",
       {layoutOf<dsc::abi::SparseAttentionParams>(), layoutOf<dsc::abi::RopeParams>()}},
      {"dsc_sparse_attention_logits_fast", {layoutOf<dsc::abi::SparseAttentionParams>()}},
      {"dsc_sparse_attention_logits_mqa", {layoutOf<dsc::abi::SparseAttentionParams>()}},
      {"dsc_sparse_attention_logits_tc", {layoutOf<dsc::abi::SparseAttentionParams>()}},
      {"dsc_sparse_attention_merge_fast",
       {layoutOf<dsc::abi::SparseAttentionParams>(), layoutOf<dsc::abi::RopeParams>()}},
  };
  std::set<std::string> seen;
  for (const std::string &name : kernelSourceNames()) {
    auto k = compileKernel(name, opts_);
    ASSERT_TRUE(k) << name << ": " << k.status().message();
    for (const std::string &entry : entryNames(k->ptx)) {
      auto params = entryParams(k->ptx, entry);
      ASSERT_TRUE(params) << entry;
      auto want = takes.find(entry);
      const size_t structs = want == takes.end() ? 0 : want->second.size();
      ASSERT_GE(params->size(), structs) << entry;
      for (size_t i = 0; i < params->size(); ++i) {
        const PtxParam &p = (*params)[i];
        if (i >= structs) {
          EXPECT_FALSE(p.isStruct) << name << ": " << entry << " param " << i
                                   << " is a struct by value: " << p.text;
          continue;
        }
        EXPECT_TRUE(p.isStruct) << name << ": " << entry << " param " << i << ": " << p.text;
        EXPECT_EQ(p.size, want->second[i].size) << entry << " param " << i << ": " << p.text;
        EXPECT_EQ(p.align, want->second[i].align) << entry << " param " << i << ": " << p.text;
      }
      seen.insert(entry);
    }
  }
  for (const auto &[entry, structs] : takes)
    EXPECT_TRUE(seen.count(entry)) << "no template defines " << entry;
}
