//===- AttentionBlock.cpp - One layer's CSA2 attention up to o ------------===//
#include "runtime/cpu/kernels/attention/AttentionBlock.h"

#include "dsc/numerics/SparseSelect.h"

#include "runtime/cpu/kernels/attention/Indexer.h"
#include "runtime/cpu/kernels/attention/SparseAttention.h"
#include "runtime/cpu/kernels/attention/WindowKv.h"
#include "runtime/cpu/kernels/dense/Linear.h"
#include "runtime/cpu/kernels/dense/Norm.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace dsc::cpu {

AttentionLayerState makeAttentionLayerState(const AttentionLayerConfig &cfg, int64_t maxSeqLen,
                                            const AttentionPageConfig &pages) {
  AttentionLayerState st;
  numerics::KvPageLayout win{numerics::swaKvFormat(static_cast<int32_t>(cfg.headDim)),
                             pages.windowTokensPerPage, pages.windowOrder};
  st.window = KvRecordStore(win, cfg.window);
  if (cfg.kvSource) {
    const int64_t entries = std::max<int64_t>(maxSeqLen / cfg.ratio, 1);
    numerics::KvPageLayout mainKv{numerics::mainKvFormat(static_cast<int32_t>(cfg.headDim)),
                                  pages.mainTokensPerPage, pages.mainOrder};
    numerics::KvPageLayout keys{numerics::indexKeyFormat(static_cast<int32_t>(cfg.indexHeadDim)),
                                pages.indexTokensPerPage, pages.indexOrder};
    st.mainKv = KvRecordStore(mainKv, entries);
    st.indexKeys = KvRecordStore(keys, entries);
    if (cfg.ratio > 1)
      st.compressor.reset(cfg.ratio, cfg.headDim);
  }
  return st;
}

void attentionForward(const AttentionLayerConfig &cfg, const AttentionLayerWeights &w,
                      const RopeFreqs &freqs, AttentionLayerState &state,
                      SharedAttentionSlots &shared, const uint16_t *x, int64_t S,
                      int64_t startPos, uint16_t *o, AttentionTrace *trace) {
  if (!(startPos == 0 || S == 1))
    throw std::invalid_argument("attentionForward: only (0, S) and (p > 0, 1) calls");
  const int64_t H = cfg.nHeads, Dh = cfg.headDim, W = cfg.window, r = cfg.ratio;

  // Q: qr = q_norm(wq_a(x)); q = wq_b(qr) with RoPE on the last ropeDim.
  std::vector<uint16_t> qr(static_cast<size_t>(S * cfg.qLoraRank));
  linearFp8(x, S, cfg.dim, w.wqA, w.wqAScale, cfg.qLoraRank, qr.data());
  rmsNorm(qr.data(), S, cfg.qLoraRank, w.qNorm, cfg.normEps, qr.data());
  std::vector<uint16_t> q(static_cast<size_t>(S * H * Dh));
  linearFp8(qr.data(), S, cfg.qLoraRank, w.wqB, w.wqBScale, H * Dh, q.data());
  applyRope(q.data(), S, H, Dh, freqs, startPos, 1, false);

  // Window KV: kv_norm(wkv(x)), RoPE, FP8 records in the ring.
  std::vector<uint16_t> kv(static_cast<size_t>(S * Dh));
  linearFp8(x, S, cfg.dim, w.wkv, w.wkvScale, Dh, kv.data());
  rmsNorm(kv.data(), S, Dh, w.kvNorm, cfg.normEps, kv.data());
  applyRope(kv.data(), S, 1, Dh, freqs, startPos, 1, false);
  const int64_t winRows = windowKvRows(startPos, S, W);
  const int64_t winWidth = windowIdxWidth(startPos, S, W);
  std::vector<float> kvAll(static_cast<size_t>(winRows * Dh));
  std::vector<int32_t> winIdx(static_cast<size_t>(S * winWidth));
  const KvRecordPool ring = state.window.view();
  if (startPos == 0) {
    windowKvPrefill(kv.data(), S, Dh, ring, W, kvAll.data());
    windowIdxPrefill(S, W, winIdx.data());
  } else {
    windowKvDecode(kv.data(), Dh, startPos, ring, W, kvAll.data());
    windowIdxDecode(startPos, W, winIdx.data());
  }

  // Compressed part.
  int64_t cmpWidth = 0;
  std::vector<int32_t> cmpIdx;
  int64_t latentCount = 0;
  if (r > 0) {
    const int64_t compressLen = (startPos + S) / r;
    std::vector<uint16_t> latents;
    int64_t j0 = startPos / r;
    if (cfg.kvSource) {
      latents.resize(static_cast<size_t>(std::max<int64_t>(S, 1) * Dh));
      CompressorWeights cw{r, cfg.dim, Dh, w.cmpWkv, w.cmpWgate, w.cmpNorm, cfg.normEps};
      latentCount = compressorForward(cw, x, S, startPos, r > 1 ? &state.compressor : nullptr,
                                      latents.data());
      shared.compressKv = &state.mainKv.pool();
      shared.compressKvRatio = r;
      // Owners publish their index keys on every forward (§15.1, fixed).
      shared.indexKeys = &state.indexKeys.pool();
      shared.indexKeysRatio = r;
    }
    if (cfg.indexSource) {
      if (compressLen == 0) {
        shared.topkIdxs.clear();
        shared.topkWidth = 0;
      } else {
        if (cfg.kvSource && latentCount > 0)
          indexKeysWrite(latents.data(), latentCount, j0, r, Dh, w.idxWk, w.idxKNorm,
                         cfg.indexHeadDim, cfg.normEps, freqs, state.indexKeys.view());
        if (!shared.indexKeys || shared.indexKeysRatio != r)
          throw std::runtime_error("attentionForward: no index keys of this ratio published");
        const int64_t Hi = cfg.indexNHeads, Dk = cfg.indexHeadDim;
        std::vector<float> iq(static_cast<size_t>(S * Hi * Dk));
        indexQueries(qr.data(), S, cfg.qLoraRank, w.idxWqB, w.idxWqBScale, Hi, Dk, freqs,
                     startPos, iq.data());
        std::vector<uint16_t> iw(static_cast<size_t>(S * Hi));
        indexWeights(x, S, cfg.dim, w.idxWeightsProj, Hi, Dk, iw.data());
        const int64_t width = compressLen;
        std::vector<float> keys(static_cast<size_t>(width * Dk));
        for (int64_t t = 0; t < width; ++t)
          shared.indexKeys->read(t, keys.data() + t * Dk);
        std::vector<float> scores(static_cast<size_t>(S * width));
        indexScores(iq.data(), iw.data(), S, Hi, Dk, keys.data(), width, scores.data());
        indexMaskInvisible(scores.data(), S, width, startPos, r);
        if (cfg.candidateSource) {
          // Block ids per row, kept here as the [S, width] mask.
          const int64_t nb = cfg.candidateTopkBlocks;
          std::vector<int32_t> ids(static_cast<size_t>(S * nb));
          indexSelectCandidates(scores.data(), S, width, startPos, r, nb, cfg.candidateBlockSize,
                                ids.data());
          shared.candidates.assign(static_cast<size_t>(S * width), 0);
          shared.candidatesWidth = width;
          for (int64_t s = 0; s < S; ++s) {
            const std::vector<uint8_t> mask = numerics::candidateMaskFromBlocks(
                ids.data() + s * nb, nb, cfg.candidateBlockSize, width);
            std::copy(mask.begin(), mask.end(), shared.candidates.begin() + s * width);
          }
        } else if (cfg.usesCandidates) {
          if (shared.candidatesWidth != width ||
              static_cast<int64_t>(shared.candidates.size()) != S * width)
            throw std::runtime_error("attentionForward: candidates of another shape");
          numerics::maskNonCandidates(scores.data(), shared.candidates.data(), S * width);
        }
        shared.topkWidth = indexTopKWidth(cfg.indexTopk, width);
        shared.topkIdxs.assign(static_cast<size_t>(S * shared.topkWidth), -1);
        indexTopK(scores.data(), S, width, startPos, r, cfg.indexTopk, winRows,
                  shared.topkIdxs.data());
      }
    }
    if (cfg.kvSource && latentCount > 0)
      compressKvWrite(latents.data(), latentCount, j0, r, Dh, freqs, state.mainKv.view());
    if (static_cast<int64_t>(shared.topkIdxs.size()) != S * shared.topkWidth)
      throw std::runtime_error("attentionForward: published top-k of another shape");
    cmpWidth = shared.topkWidth;
    cmpIdx = shared.topkIdxs;
    // Decode only the compressed rows the lists reference, appended after
    // the window rows; remap their indices.
    if (cmpWidth > 0) {
      if (!shared.compressKv || shared.compressKvRatio != r)
        throw std::runtime_error("attentionForward: no compressed KV of this ratio published");
      std::vector<int32_t> remap(static_cast<size_t>(compressLen), -1);
      int64_t rows = winRows;
      for (int32_t &v : cmpIdx) {
        if (v < 0)
          continue;
        const int64_t j = v - winRows;
        assert(j >= 0 && j < compressLen);
        int32_t &slot = remap[static_cast<size_t>(j)];
        if (slot < 0) {
          slot = static_cast<int32_t>(rows++);
          kvAll.resize(static_cast<size_t>(rows * Dh));
          shared.compressKv->read(j, kvAll.data() + (rows - 1) * Dh);
        }
        v = slot;
      }
    }
  }

  // Full index lists: cat(window, compressed).
  const int64_t K = winWidth + cmpWidth;
  std::vector<int32_t> idx(static_cast<size_t>(S * K));
  for (int64_t s = 0; s < S; ++s) {
    std::copy_n(winIdx.data() + s * winWidth, winWidth, idx.data() + s * K);
    if (cmpWidth > 0)
      std::copy_n(cmpIdx.data() + s * cmpWidth, cmpWidth, idx.data() + s * K + winWidth);
  }
  const int64_t nKv = static_cast<int64_t>(kvAll.size()) / Dh;
  sparseAttention(q.data(), S, H, Dh, kvAll.data(), nKv, w.attnSink, idx.data(), K,
                  sparseAttnScale(Dh), o);
  applyRope(o, S, H, Dh, freqs, startPos, 1, true);

  if (trace) {
    trace->qr = qr;
    trace->latents = latentCount;
    trace->idxWidth = K;
    // Report the lists in kv_all row numbering of the reference
    // (compressed j at winRows + j), not the compacted one.
    trace->idx.assign(idx.begin(), idx.end());
    if (cmpWidth > 0)
      for (int64_t s = 0; s < S; ++s)
        std::copy_n(shared.topkIdxs.data() + s * cmpWidth, cmpWidth,
                    trace->idx.data() + s * K + winWidth);
  }
}

} // namespace dsc::cpu
