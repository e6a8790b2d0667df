//===- CpuAdaptersBasic.cpp - Embedding, mHC plumbing, concat, Engram hash -===//
//
// Kernels simple enough to need no separate math file:
//   embed            rows of the bf16 table (reference-spec §5.3)
//   hc_expand        hc identical copies of the embedding (§5.4)
//   hc_identity_mix  one-hot pre mix, copy 0 = 1.0, no eps (§5.5)
//   concat           along the last axis (DSpark main_hidden, §5.10)
//   engram_hash      compressed ids into the sequence history, then the n-gram
//                    hash of every new position (§7.4, numerics/EngramHash.h)
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuAdapter.h"

#include "dsc/numerics/EngramHash.h"

#include <algorithm>
#include <cstring>

namespace dsc::cpu {
namespace {

Status embed(LaunchContext &c) {
  const HostTensor &ids = *c.inputs[0], &table = *c.inputs[1];
  HostTensor &out = *c.outputs[0];
  int64_t vocab = table.dim(0), dim = table.dim(1);
  for (int64_t t = 0; t < ids.numElements(); ++t) {
    int32_t id = ids.data<int32_t>()[t];
    if (id < 0 || id >= vocab)
      return runtime::invalidArgument("embed: token id " + std::to_string(id) +
                                      " outside the vocabulary [0, " + std::to_string(vocab) + ")");
    std::memcpy(out.data<uint16_t>() + t * dim, table.data<uint16_t>() + int64_t(id) * dim,
                dim * sizeof(uint16_t));
  }
  return Status::ok();
}

Status hcExpand(LaunchContext &c) {
  const HostTensor &x = *c.inputs[0];
  HostTensor &out = *c.outputs[0];
  int64_t tokens = x.dim(0), dim = x.dim(1), copies = out.dim(1);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t k = 0; k < copies; ++k)
      std::memcpy(out.data<uint16_t>() + (t * copies + k) * dim, x.data<uint16_t>() + t * dim,
                  dim * sizeof(uint16_t));
  return Status::ok();
}

Status hcIdentityMix(LaunchContext &c) {
  HostTensor &mix = *c.outputs[0];
  int64_t tokens = mix.dim(0), copies = mix.dim(1);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t k = 0; k < copies; ++k)
      mix.data<float>()[t * copies + k] = k == 0 ? 1.0f : 0.0f;
  return Status::ok();
}

Status concat(LaunchContext &c) {
  HostTensor &out = *c.outputs[0];
  int64_t rows = out.numElements() / out.shape().back();
  size_t element = runtime::dtypeSize(out.dtype());
  int64_t offset = 0;
  for (const HostTensor *in : c.inputs) {
    int64_t width = in->shape().back();
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out.bytes() + (r * out.shape().back() + offset) * element,
                  in->bytes() + r * width * element, width * element);
    offset += width;
  }
  return Status::ok();
}

Status engramHash(LaunchContext &c) {
  runtime::Expected<runtime::EngramHashTables> params = runtime::readEngramHashTables(c.kernel, c.plan.model);
  if (!params)
    return params.status();
  const std::vector<int64_t> &map = c.plan.model.engramTokenMap;
  const std::vector<int64_t> &layers = params->layers, &mult = params->multipliers,
                             &primes = params->primes, &offsets = params->offsets;
  int64_t maxNgram = params->maxNgram, heads = params->heads;
  const HostTensor &ids = *c.inputs[0];
  HostTensor &history = *c.outputs[0];
  HostTensor &hashes = *c.outputs[1];
  int64_t start = c.call.startPos, tokens = ids.numElements();
  if (start + tokens > history.numElements())
    return runtime::invalidArgument("engram_hash: position beyond the history capacity");
  int64_t *cache = history.data<int64_t>();
  for (int64_t t = 0; t < tokens; ++t) {
    int32_t id = ids.data<int32_t>()[t];
    if (id < 0 || id >= int64_t(map.size()))
      return runtime::invalidArgument("engram_hash: token id " + std::to_string(id) +
                                      " outside the Engram token map");
    cache[start + t] = map[id];
  }
  int64_t padId = params->padId;
  int64_t cols = (maxNgram - 1) * heads, nLayers = int64_t(layers.size());
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t l = 0; l < nLayers; ++l)
      numerics::engramHashFromCache(cache, start + t, padId, mult.data() + l * maxNgram,
                                    int(maxNgram), primes.data() + l * cols,
                                    offsets.data() + l * cols, int(heads),
                                    hashes.data<int64_t>() + (t * nLayers + l) * cols);
  return Status::ok();
}

/// replay_slice (CED): the last R' rows of the stream [S, hc, D] and the
/// mix [S, hc]; R' is the outputs' row count (kReplayTokens).
Status replaySlice(LaunchContext &c) {
  for (size_t i = 0; i < 2; ++i) {
    const HostTensor &in = *c.inputs[i];
    HostTensor &out = *c.outputs[i];
    if (in.dtype() != out.dtype() || in.shape().empty() || out.shape().empty() ||
        out.dim(0) > in.dim(0) || in.numElements() / std::max<int64_t>(in.dim(0), 1) !=
                                      out.numElements() / std::max<int64_t>(out.dim(0), 1))
      return runtime::invalidArgument("replay_slice: output " + std::to_string(i) + " " +
                                      HostTensor::shapeString(out.shape()) +
                                      " is not a row suffix of input " +
                                      HostTensor::shapeString(in.shape()));
    size_t skip = in.byteSize() - out.byteSize();
    std::memcpy(out.bytes(), in.bytes() + skip, out.byteSize());
  }
  return Status::ok();
}

} // namespace

void registerBasicAdapters(AdapterTable &table) {
  add<abi::ReplaySliceParams>(table, replaySlice);
  add<abi::EmbedParams>(table, embed);
  add<abi::HcExpandParams>(table, hcExpand);
  add<abi::HcIdentityMixParams>(table, hcIdentityMix);
  add<abi::ConcatParams>(table, concat);
  add<abi::EngramHashParams>(table, engramHash);
}

} // namespace dsc::cpu
