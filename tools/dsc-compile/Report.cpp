//===- Report.cpp - dsc-compile --report -----------------------------------===//
#include "tools/dsc-compile/Report.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace dsc;
using namespace dsc::tools;
namespace json = llvm::json;

namespace {

/// Layer id of "layers.N.*" (-1 otherwise).
int64_t layerOf(StringRef name) {
  if (!name.consume_front("layers."))
    return -1;
  int64_t id = -1;
  if (name.consumeInteger(10, id))
    return -1;
  return id;
}

/// The part of layer L/2 that prefill runs under CED (passes/CedSplit.cpp):
/// pre-collapse with the previous block's mix, attn norm, compressor and index
/// keys (no attention, no MoE; the layer's own mixes feed only its FFN).
bool isCedProjection(StringRef name) {
  return name.ends_with(".attn_norm.weight") || name.contains(".attn.compressor.") ||
         name.contains(".attn.indexer.wk.") || name.contains(".attn.indexer.k_norm.");
}

} // namespace

ParameterCounts dsc::tools::countParameters(ModuleOp module, const models::ModelSpec &spec) {
  ParameterCounts counts;
  for (auto param : module.getOps<ds::ParameterOp>()) {
    StringRef name = param.getSymName();
    int64_t n = param.getParameterCount();
    if (name.starts_with("mtp.")) {
      counts.dsparkTotal += n;
      continue;
    }
    double activeShare = 1.0;
    if (name.contains(".engram.")) {
      counts.engramTotal += n;
      // A token gathers one row per hash column from each Engram table.
      if (name.ends_with(".engram.embed.weight")) {
        auto shape = llvm::cast<RankedTensorType>(param.getType()).getShape();
        int64_t columns = (spec.engramMaxNgramSize - 1) * spec.engramNHeads;
        activeShare = double(columns) / double(shape[0]);
      }
    } else {
      counts.backboneTotal += n;
    }
    // Activated: a routed expert stack counts top-k of its experts.
    if (name.contains(".experts.{e}.")) {
      int64_t experts = llvm::cast<RankedTensorType>(param.getType()).getShape()[0];
      activeShare = double(spec.nActivatedExperts) / double(experts);
    }
    if (name == "embed.weight")
      continue; // a lookup, not a GEMM
    counts.activatedDecode += activeShare * double(n);
    int64_t layer = layerOf(name);
    if (layer >= 0 && layer < spec.cedSplitLayer)
      counts.activatedPrefill += activeShare * double(n);
    else if (layer == spec.cedSplitLayer && isCedProjection(name))
      counts.activatedPrefill += double(n);
  }
  return counts;
}

dsc::runtime::Expected<dsc::tools::Report::SessionCapacity>
dsc::tools::sessionCapacity(const runtime::Plan &plan, const Report &report, double deviceGiB) {
  // The largest activation peak of any phase, with or without row tiles.
  uint64_t peak = 0;
  for (const auto *summary :
       {&*report.memory, report.memoryUntiled ? &*report.memoryUntiled : nullptr})
    if (summary)
      for (const runtime::PhaseMemory &phase : summary->phases)
        peak = std::max<uint64_t>(peak, phase.peakBytes);
  Report::SessionCapacity capacity;
  capacity.deviceBytes = uint64_t(deviceGiB * double(1ull << 30));
  const uint64_t used = report.memory->weightBytes + peak;
  capacity.freeBytes = capacity.deviceBytes > used ? capacity.deviceBytes - used : 0;
  std::vector<int64_t> contexts;
  for (int64_t tokens : {int64_t(4096), int64_t(131072), int64_t(1048576)})
    if (tokens <= plan.model.maxSeqLen)
      contexts.push_back(tokens);
  if (contexts.empty())
    contexts.push_back(plan.model.maxSeqLen);
  for (int64_t tokens : contexts) {
    runtime::Expected<uint64_t> bytes = runtime::pagedStateBytes(plan, tokens);
    if (!bytes)
      return bytes.status();
    capacity.rows.push_back({tokens, *bytes, *bytes ? capacity.freeBytes / *bytes : uint64_t(0)});
  }
  return capacity;
}

json::Value dsc::tools::reportToJson(const Report &report) {
  const models::ModelSpec &spec = *report.spec;
  json::Array layers;
  for (const models::LayerSpec &l : spec.layers) {
    auto optional = [](const std::optional<int64_t> &v) -> json::Value {
      return v ? json::Value(*v) : json::Value(nullptr);
    };
    layers.push_back(json::Object{
        {"id", l.id},
        {"role", models::roleName(l.role)},
        {"compress_ratio", l.compressRatio},
        {"kv_source", optional(l.kvSource)},
        {"index_source", optional(l.indexSource)},
        {"candidate_source", l.candidateSource},
        {"uses_candidates", l.usesCandidates},
        {"engram", l.engram},
        {"dspark_target", l.dsparkTarget},
        {"decoder", !l.encoder && l.role != models::LayerRole::DSpark},
    });
  }
  json::Array sources;
  for (const ds::KvSourcePlan &s : report.kv.sources)
    sources.push_back(json::Object{{"layer", s.layer},
                                   {"ratio", s.ratio},
                                   {"main_bytes_per_entry", s.mainBytesPerEntry},
                                   {"index_bytes_per_entry", s.indexBytesPerEntry},
                                   {"readers", json::Array(s.readers)}});
  json::Array primes, tableRows, multipliers, offsets;
  for (const models::EngramLayerLayout &e : spec.engram) {
    json::Array perLayer;
    for (const auto &perNgram : e.primes)
      perLayer.push_back(json::Array(perNgram));
    primes.push_back(std::move(perLayer));
    tableRows.push_back(e.tableRows);
    multipliers.push_back(json::Array(e.multipliers));
    offsets.push_back(json::Array(e.offsets));
  }
  const ParameterCounts &p = report.params;
  json::Object launches;
  for (const auto &[program, perLayer] : report.launches) {
    json::Object counts;
    int64_t total = 0;
    for (auto [layer, n] : perLayer) {
      counts[layer < 0 ? std::string("other") : std::to_string(layer)] = n;
      total += n;
    }
    counts["total"] = total;
    launches[program] = std::move(counts);
  }
  // {program: {name: count}} as JSON.
  auto countsByProgram = [](const std::map<std::string, std::map<std::string, int64_t>> &in) {
    json::Object out;
    for (const auto &[program, perName] : in) {
      json::Object counts;
      for (const auto &[name, n] : perName)
        counts[name] = n;
      out[program] = std::move(counts);
    }
    return out;
  };
  json::Object fusedKernels = countsByProgram(report.fusedKernels);
  json::Object nativeExecutables = countsByProgram(report.nativeExecutables);
  json::Array kernels;
  for (const KernelUsage &k : report.kernels) {
    json::Value entries = nullptr;
    if (k.entries) {
      json::Array list;
      for (const KernelEntryUsage &e : *k.entries)
        list.push_back(json::Object{{"entry", e.entry},
                                    {"registers", e.registers},
                                    {"spill_store_bytes", e.spillStoreBytes},
                                    {"spill_load_bytes", e.spillLoadBytes},
                                    {"stack_frame_bytes", e.stackFrameBytes},
                                    {"shared_bytes", e.sharedBytes}});
      entries = std::move(list);
    }
    kernels.push_back(json::Object{
        {"name", k.name},
        {"launches", k.launches},
        {"specialisations", k.specialisations},
        {"entries", std::move(entries)},
        {"cubin_bytes", k.cubinBytes ? json::Value(*k.cubinBytes) : json::Value(nullptr)}});
  }
  json::Object ced;
  if (report.ced) {
    ced["mode"] = report.ced->mode;
    ced["replay_tokens"] = report.ced->replayTokens;
    ced["prefill_layer_tokens"] = json::Array(report.ced->prefillLayerTokens);
    ced["activated_per_prompt_token"] = int64_t(report.ced->activatedPerPromptToken + 0.5);
  }
  json::Object byMode;
  for (const auto &[mode, value] : report.activatedPrefillByMode)
    byMode[mode] = int64_t(value + 0.5);
  json::Object memory;
  if (report.memory) {
    json::Object peak, sum, tokens;
    for (const runtime::PhaseMemory &phase : report.memory->phases) {
      peak[phase.phase] = int64_t(phase.peakBytes);
      sum[phase.phase] = int64_t(phase.sumBytes);
      json::Object call{{"tokens", phase.tokens}, {"start", phase.startPos}};
      if (phase.phase == "prefill") {
        call["prompt_tokens"] = phase.promptTokens;
        call["chunks"] = phase.chunks;
        call["prefill_chunk"] = report.prefillChunk;
      }
      tokens[phase.phase] = std::move(call);
    }
    memory["weights_bytes"] = int64_t(report.memory->weightBytes);
    memory["state_bytes"] = int64_t(report.memory->stateBytes);
    memory["peak_bytes"] = std::move(peak);
    memory["sum_bytes"] = std::move(sum);
    memory["calls"] = std::move(tokens);
    if (report.memoryUntiled) {
      json::Object untiled;
      for (const runtime::PhaseMemory &phase : report.memoryUntiled->phases)
        untiled[phase.phase] = int64_t(phase.peakBytes);
      memory["peak_bytes_untiled"] = std::move(untiled);
    }
  } else if (!report.memoryError.empty()) {
    memory["error"] = report.memoryError;
  }
  if (report.capacity) {
    json::Array rows;
    for (const Report::SessionCapacity::Row &row : report.capacity->rows)
      rows.push_back(json::Object{{"tokens", row.tokens},
                                  {"bytes_per_session", int64_t(row.bytesPerSession)},
                                  {"sessions", int64_t(row.sessions)}});
    memory["sessions"] = json::Object{{"device_bytes", int64_t(report.capacity->deviceBytes)},
                                      {"free_bytes", int64_t(report.capacity->freeBytes)},
                                      {"contexts", std::move(rows)}};
  }
  return json::Object{
      {"memory", std::move(memory)},
      {"ced", std::move(ced)},
      {"activated_prefill_by_mode", std::move(byMode)},
      {"launches", std::move(launches)},
      {"fused_kernels", std::move(fusedKernels)},
      {"native_executables", std::move(nativeExecutables)},
      {"kernels", std::move(kernels)},
      {"distinct_kernels", report.distinctKernels},
      {"model",
       json::Object{{"config", spec.sourcePath},
                    {"format", spec.format == models::ConfigFormat::HuggingFace ? "hf" : "inference"},
                    {"n_layers", spec.nLayers},
                    {"n_dspark_stages", spec.nMtpLayers},
                    {"dim", spec.dim},
                    {"vocab_size", spec.vocabSize},
                    {"ced_split_layer", spec.cedSplitLayer}}},
      {"options", json::Object{{"max_seq_len", report.options.maxSeqLen},
                               {"max_batch", report.options.maxBatch}}},
      {"layers", std::move(layers)},
      {"kv_bytes_per_token", json::Object{{"main", report.kv.mainBytesPerToken},
                                          {"index", report.kv.indexBytesPerToken},
                                          {"total", report.kv.totalBytesPerToken()}}},
      {"swa_bytes_per_token_per_layer", report.kv.windowBytesPerTokenPerLayer},
      {"swa_ring_bytes_per_sequence", report.kv.windowRingBytes},
      {"kv_sources", std::move(sources)},
      {"params", json::Object{{"backbone_total", p.backboneTotal},
                              {"engram_total", p.engramTotal},
                              {"dspark_total", p.dsparkTotal},
                              {"activated_decode", int64_t(p.activatedDecode + 0.5)},
                              {"activated_prefill", int64_t(p.activatedPrefill + 0.5)}}},
      {"engram",
       json::Object{{"layers", json::Array(spec.engramLayerIds)},
                    {"primes", std::move(primes)},
                    {"offsets", std::move(offsets)},
                    {"table_rows", std::move(tableRows)},
                    {"multipliers", std::move(multipliers)},
                    {"compressed_vocab_size", report.options.engramCompressedVocabSize
                                                  ? *report.options.engramCompressedVocabSize
                                                  : spec.engramCompressedVocabSize}}},
  };
}

void dsc::tools::printReportText(const Report &report, llvm::raw_ostream &os) {
  const models::ModelSpec &spec = *report.spec;
  auto billions = [](double n) { return llvm::format("%.2fB", n / 1e9); };
  os << "dsc report: " << spec.sourcePath << "\n";
  os << "  " << spec.nLayers << " layers (encoder 0-" << spec.cedSplitLayer - 1 << ", decoder "
     << spec.cedSplitLayer << "-" << spec.nLayers - 1 << ") + " << spec.nMtpLayers
     << " DSpark stages; dim " << spec.dim << ", vocab " << spec.vocabSize << "\n";
  os << "  plan: max_seq_len " << report.options.maxSeqLen << ", max_batch "
     << report.options.maxBatch << "\n\n";
  os << "layers:\n";
  for (const models::LayerSpec &l : spec.layers) {
    os << llvm::format("  %3lld %-8s", (long long)l.id, models::roleName(l.role));
    if (l.compressRatio > 0)
      os << llvm::format(" ratio %lld  kv<-%-3lld index<-%-3lld", (long long)l.compressRatio,
                         (long long)*l.kvSource, (long long)*l.indexSource);
    if (l.candidateSource)
      os << "  candidate source";
    if (l.usesCandidates)
      os << "  within candidates";
    if (l.engram)
      os << "  engram";
    if (l.dsparkTarget)
      os << "  dspark target";
    os << "\n";
  }
  os << "\nKV per token: " << llvm::format("%g", report.kv.mainBytesPerToken) << " B main + "
     << llvm::format("%g", report.kv.indexBytesPerToken) << " B index = "
     << llvm::format("%g", report.kv.totalBytesPerToken()) << " B"
     << " (+ window " << report.kv.windowBytesPerTokenPerLayer << " B/token/layer, "
     << report.kv.windowRingBytes << " B of rings per sequence)\n";
  for (const ds::KvSourcePlan &s : report.kv.sources) {
    os << "  source " << s.layer << " (ratio " << s.ratio << "): " << s.mainBytesPerEntry
       << " + " << s.indexBytesPerEntry << " B/entry, read by " << s.readers.size()
       << " layers\n";
  }
  for (const auto &[program, perLayer] : report.launches) {
    int64_t total = 0, reuseMax = 0;
    for (auto [layer, n] : perLayer) {
      total += n;
      if (layer >= 0 && layer < int64_t(spec.layers.size()) &&
          spec.layers[layer].role == models::LayerRole::Reuse)
        reuseMax = std::max(reuseMax, n);
    }
    os << "launches (" << program << "): " << total << " per call, " << reuseMax
       << " per Reuse layer (" << (report.fused ? "fused" : "unfused") << ")\n";
    if (auto it = report.nativeExecutables.find(program);
        it != report.nativeExecutables.end() && !it->second.empty()) {
      os << "  native executables:";
      for (const auto &[executable, n] : it->second)
        os << " " << executable << " " << n;
      os << "\n";
    }
  }
  if (!report.kernels.empty()) {
    os << "\nkernels: " << report.kernels.size() << " distinct\n";
    for (const KernelUsage &k : report.kernels) {
      os << llvm::format("  %-22s %6lld launches", k.name.c_str(), (long long)k.launches);
      if (k.specialisations > 1)
        os << " (" << k.specialisations << " specialisations)";
      if (!k.entries) {
        os << "  (not compiled)\n";
        continue;
      }
      os << ", cubin " << *k.cubinBytes << " B\n";
      for (const KernelEntryUsage &e : *k.entries)
        os << "    " << e.entry << ": " << e.registers << " registers, " << e.spillStoreBytes
           << " B spill stores, " << e.spillLoadBytes << " B spill loads, " << e.stackFrameBytes
           << " B stack, " << e.sharedBytes << " B smem\n";
    }
  }
  if (!report.memoryError.empty())
    os << "memory: no plan at these limits: " << report.memoryError << "\n";
  if (report.memory) {
    auto gib = [](uint64_t b) { return llvm::format("%.3f GiB", double(b) / double(1ull << 30)); };
    os << "memory: weights " << gib(report.memory->weightBytes) << ", state per sequence "
       << gib(report.memory->stateBytes) << "\n";
    for (const runtime::PhaseMemory &phase : report.memory->phases) {
      os << "  " << phase.program << " (" << phase.tokens << " tokens at " << phase.startPos;
      if (phase.phase == "prefill")
        os << "; the largest of " << phase.chunks << " chunk" << (phase.chunks == 1 ? "" : "s")
           << " of a " << phase.promptTokens << "-token prompt";
      os << "): activation peak " << gib(phase.peakBytes) << " (" << gib(phase.sumBytes)
         << " without reuse)\n";
    }
    if (report.memoryUntiled)
      for (const runtime::PhaseMemory &phase : report.memoryUntiled->phases)
        if (phase.phase == "prefill")
          os << "  prefill on a backend without row tiles (CUDA today): activation peak "
             << gib(phase.peakBytes) << "\n";
    if (report.capacity) {
      os << "  sessions on a " << gib(report.capacity->deviceBytes)
         << " device (a paged KV pool of the " << gib(report.capacity->freeBytes)
         << " left after the weights and the largest activation peak):";
      for (const Report::SessionCapacity::Row &row : report.capacity->rows)
        os << " " << row.tokens << " tokens " << row.bytesPerSession << " B each: "
           << row.sessions << ";";
      os << "\n";
    }
  }
  const ParameterCounts &p = report.params;
  os << "\nparameters: backbone " << billions(p.backboneTotal) << ", Engram "
     << billions(p.engramTotal) << ", DSpark " << billions(p.dsparkTotal) << "\n";
  os << "  activated per token: decode " << billions(p.activatedDecode) << ", prefill (CED) "
     << billions(p.activatedPrefill) << "\n";
  if (spec.hasEngram()) {
    os << "\nEngram: layers";
    for (const models::EngramLayerLayout &e : spec.engram)
      os << " " << e.layerId << " (" << e.tableRows << " rows)";
    os << ", compressed vocab "
       << (report.options.engramCompressedVocabSize ? *report.options.engramCompressedVocabSize
                                                    : spec.engramCompressedVocabSize)
       << "\n";
  }
}

namespace {

bool isScalar(const json::Value &v) {
  return v.kind() != json::Value::Object && v.kind() != json::Value::Array;
}

bool isFlat(const json::Value &v) {
  if (const json::Array *a = v.getAsArray())
    return llvm::all_of(*a, isScalar);
  if (const json::Object *o = v.getAsObject())
    return llvm::all_of(*o, [](const auto &kv) { return isScalar(kv.second); });
  return true;
}

std::vector<std::string> sortedKeys(const json::Object &o) {
  std::vector<std::string> keys;
  for (const auto &kv : o)
    keys.push_back(kv.first.str());
  auto rank = [](const std::string &k) { return k == "id" ? 0 : k == "role" ? 1 : 2; };
  llvm::sort(keys, [&](const std::string &a, const std::string &b) {
    return std::pair(rank(a), a) < std::pair(rank(b), b);
  });
  return keys;
}

void printValue(const json::Value &v, raw_ostream &os, int indent) {
  std::string pad(indent, ' '), inner(indent + 2, ' ');
  if (isScalar(v)) {
    os << v;
    return;
  }
  bool flat = isFlat(v);
  if (const json::Array *a = v.getAsArray()) {
    bool allFlat = llvm::all_of(*a, isFlat);
    if (flat || (allFlat && llvm::all_of(*a, [](const json::Value &e) { return e.getAsArray(); }))) {
      // [1, 2] or [[1, 2], [3, 4]] on one line.
      os << "[";
      for (size_t i = 0; i < a->size(); ++i) {
        os << (i ? ", " : "");
        printValue((*a)[i], os, indent);
      }
      os << "]";
      return;
    }
    os << "[\n";
    for (size_t i = 0; i < a->size(); ++i) {
      os << inner;
      printValue((*a)[i], os, indent + 2);
      os << (i + 1 < a->size() ? ",\n" : "\n");
    }
    os << pad << "]";
    return;
  }
  const json::Object &o = *v.getAsObject();
  std::vector<std::string> keys = sortedKeys(o);
  if (flat) {
    os << "{";
    for (size_t i = 0; i < keys.size(); ++i) {
      os << (i ? ", " : "") << json::Value(keys[i]) << ": ";
      printValue(*o.get(keys[i]), os, indent);
    }
    os << "}";
    return;
  }
  os << "{\n";
  for (size_t i = 0; i < keys.size(); ++i) {
    os << inner << json::Value(keys[i]) << ": ";
    printValue(*o.get(keys[i]), os, indent + 2);
    os << (i + 1 < keys.size() ? ",\n" : "\n");
  }
  os << pad << "}";
}

} // namespace

void dsc::tools::printJsonReadable(const json::Value &value, raw_ostream &os) {
  printValue(value, os, 0);
  os << "\n";
}
