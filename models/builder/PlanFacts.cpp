//===- PlanFacts.cpp - The model facts a plan carries ----------------------===//
#include "models/builder/PlanFacts.h"

dsc::runtime::PlanFacts dsc::models::planFactsFor(const ModelSpec &spec, int64_t maxSeqLen,
                                                       int64_t maxBatch) {
  runtime::PlanFacts facts;
  facts.name = spec.sourcePath;
  facts.nLayers = spec.nLayers;
  facts.nMtpLayers = spec.nMtpLayers;
  facts.dim = spec.dim;
  facts.vocabSize = spec.vocabSize;
  facts.hcMult = spec.hcMult;
  facts.headDim = spec.headDim;
  facts.ropeHeadDim = spec.ropeHeadDim;
  facts.nHeads = spec.nHeads;
  facts.windowSize = spec.windowSize;
  facts.indexHeadDim = spec.indexHeadDim;
  facts.indexNHeads = spec.indexNHeads;
  facts.indexTopk = spec.indexTopk;
  facts.cedSplitLayer = spec.cedSplitLayer;
  facts.maxSeqLen = maxSeqLen;
  facts.maxBatch = maxBatch;
  return facts;
}
