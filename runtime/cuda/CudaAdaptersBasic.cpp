//===- CudaAdaptersBasic.cpp - Embedding, mHC plumbing, concat, Engram hash ===//
//
// The CUDA side of runtime/cpu/CpuAdaptersBasic.cpp: same launch inputs,
// outputs and parameters; kernels in codegen/kernels/<name>.cu
// (docs/cuda-kernels-dense.md). Element-wise kernels use one thread per
// element, 256 threads a block, grid-stride loops.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dsc::cuda {
namespace {

using runtime::Expected;



/// A host vector as a cached device constant of this kernel specialisation.
template <typename T>
Expected<CUdeviceptr> upload(CudaLaunchContext &c, const std::vector<T> &v, const char *name) {
  return c.constant(name, v.data(), v.size() * sizeof(T));
}

Status embed(CudaLaunchContext &c) {
  const CudaTensor &ids = *c.inputs[0], &table = *c.inputs[1];
  CudaTensor &out = *c.outputs[0];
  long long S = ids.numElements(), vocab = table.dim(0), D = table.dim(1);
  // Ids are validated on the host by the Session (no copy back: capture-safe);
  // the kernel skips ids outside [0, vocab) as well.
  CUdeviceptr i = ids.ptr, t = table.ptr, o = out.ptr;
  return c.launchEntry("dsc_embed", gridFor(S * D), block1(), 0, args(i, t, o, S, D, vocab));
}

Status hcExpand(CudaLaunchContext &c, const abi::HcExpandParams &p) {
  const CudaTensor &x = *c.inputs[0];
  CudaTensor &out = *c.outputs[0];
  long long S = x.dim(0), D = x.dim(1), copies = out.dim(1); // = p.copies (verifyPlan)
  CUdeviceptr xp = x.ptr, o = out.ptr;
  return c.launchEntry("dsc_hc_expand", gridFor(S * copies * D), block1(), 0,
                       args(p, xp, o, S, D));
}

Status hcIdentityMix(CudaLaunchContext &c) {
  CudaTensor &mix = *c.outputs[0];
  long long S = mix.dim(0), copies = mix.dim(1);
  CUdeviceptr m = mix.ptr;
  return c.launchEntry("dsc_hc_identity_mix", gridFor(S * copies), block1(), 0,
                       args(m, S, copies));
}

Status concat(CudaLaunchContext &c) {
  CudaTensor &out = *c.outputs[0];
  const long long element = (long long)runtime::dtypeSize(out.dtype);
  const long long outWidth = out.shape.back();
  long long rows = outWidth ? out.numElements() / outWidth : 0;
  long long outWidthBytes = outWidth * element, offsetBytes = 0;
  for (const CudaTensor *in : c.inputs) {
    long long widthBytes = in->shape.back() * element;
    if (in->numElements() != rows * in->shape.back())
      return runtime::invalidArgument("concat: an input's rows differ from the output's");
    CUdeviceptr ip = in->ptr, op = out.ptr;
    if (Status s = c.launchEntry("dsc_concat", gridFor(rows * widthBytes), block1(), 0,
                                 args(ip, op, rows, widthBytes, outWidthBytes, offsetBytes));
        !s)
      return s;
    offsetBytes += widthBytes;
  }
  if (offsetBytes != outWidthBytes)
    return runtime::invalidArgument("concat: the inputs' widths do not add up to the output's");
  return Status::ok();
}

Status engramHash(CudaLaunchContext &c, const abi::EngramHashParams &p) {
  Expected<runtime::EngramHashTables> params = runtime::readEngramHashTables(c.kernel, c.plan.model);
  if (!params)
    return params.status();
  const std::vector<int64_t> &map = c.plan.model.engramTokenMap;
  const std::vector<int64_t> &mult = params->multipliers, &primes = params->primes,
                             &offsets = params->offsets;
  const long long nLayers = (long long)params->layers.size();
  const CudaTensor &ids = *c.inputs[0];
  CudaTensor &history = *c.outputs[0];
  CudaTensor &hashes = *c.outputs[1];
  long long start = c.call.startPos, S = ids.numElements();
  if (start + S > history.numElements())
    return runtime::invalidArgument("engram_hash: position beyond the history capacity");
  // Ids were validated on the host by the Session (no copy back); an id
  // outside the map hashes as dead in the kernel.
  // The history state comes in as input 1; write through the output buffer.
  if (c.inputs.size() > 1 && c.inputs[1]->ptr != history.ptr && history.numElements() > 0) {
    size_t bytes = size_t(std::min(history.numElements(), c.inputs[1]->numElements())) * 8;
    if (Status s = c.copy(history.ptr, c.inputs[1]->ptr, bytes); !s)
      return s;
  }
  auto mapDev = upload(c, map, "engram.token_map");
  auto multDev = upload(c, mult, "engram.multipliers");
  auto primesDev = upload(c, primes, "engram.primes");
  auto offsetsDev = upload(c, offsets, "engram.offsets");
  for (auto *e : {&mapDev, &multDev, &primesDev, &offsetsDev})
    if (!*e)
      return e->status();
  CUdeviceptr ip = ids.ptr, mp = *mapDev, hp = history.ptr, mu = *multDev, pr = *primesDev,
              of = *offsetsDev, out = hashes.ptr, cs = c.callState;
  long long mapSize = (long long)map.size(), padId = params->padId;
  if (Status s = c.launchEntry("dsc_engram_hash_map", gridFor(S), block1(), 0,
                               args(ip, mp, mapSize, hp, cs, S));
      !s)
    return s;
  // The kernel reads max_ngram, heads and the layer count from p.
  return c.launchEntry("dsc_engram_hash", gridFor(S * nLayers), block1(), 0,
                       args(p, hp, cs, S, padId, mu, pr, of, out));
}

/// replay_slice (CED): the last R' rows of the stream [S, hc, D] and the mix
/// [S, hc]; R' is the outputs' row count (kReplayTokens).
Status replaySlice(CudaLaunchContext &c) {
  if (c.inputs.size() != 2 || c.outputs.size() != 2)
    return runtime::internalError("replay_slice: takes stream and mix");
  for (size_t i = 0; i < 2; ++i) {
    const CudaTensor &in = *c.inputs[i];
    CudaTensor &out = *c.outputs[i];
    if (in.dtype != out.dtype || in.shape.empty() || out.shape.empty() || out.dim(0) > in.dim(0) ||
        in.numElements() / std::max<int64_t>(in.dim(0), 1) !=
            out.numElements() / std::max<int64_t>(out.dim(0), 1))
      return runtime::invalidArgument("replay_slice: output " + std::to_string(i) +
                                      " is not a row suffix of input " + std::to_string(i));
    const long long elem = (long long)runtime::dtypeSize(in.dtype);
    long long bytes = out.numElements() * elem;
    if (bytes <= 0)
      continue;
    CUdeviceptr src = in.ptr + CUdeviceptr(in.numElements() * elem - bytes), dst = out.ptr;
    if (Status s = c.launchEntry("dsc_replay_slice", gridFor(bytes), block1(), 0,
                                 args(src, dst, bytes));
        !s)
      return s;
  }
  return Status::ok();
}

} // namespace

void registerCudaBasicAdapters(CudaAdapterTable &table) {
  add<abi::ReplaySliceParams>(table, replaySlice);
  add<abi::EmbedParams>(table, embed);
  add<abi::HcExpandParams>(table, hcExpand);
  add<abi::HcIdentityMixParams>(table, hcIdentityMix);
  add<abi::ConcatParams>(table, concat);
  add<abi::EngramHashParams>(table, engramHash);
}

} // namespace dsc::cuda
