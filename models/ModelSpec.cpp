//===- ModelSpec.cpp - Role names and the model-fact comparison -----------===//
//
// modelSpecDifferences compares every model fact of two ModelSpecs (config
// fields and derived facts), so that "both formats yield the same ModelSpec"
// is one call in a test and a readable list of differences when it fails.
//===----------------------------------------------------------------------===//
#include "models/ModelSpec.h"

#include <sstream>

namespace dsc::models {

const char *roleName(LayerRole role) {
  switch (role) {
  case LayerRole::SwaOnly:
    return "swa";
  case LayerRole::Full:
    return "full";
  case LayerRole::Reindex:
    return "reindex";
  case LayerRole::Reuse:
    return "reuse";
  case LayerRole::DSpark:
    return "dspark";
  }
  return "unknown";
}

std::optional<LayerRole> roleFromName(const std::string &name) {
  for (LayerRole role : {LayerRole::SwaOnly, LayerRole::Full,
                         LayerRole::Reindex, LayerRole::Reuse,
                         LayerRole::DSpark})
    if (name == roleName(role))
      return role;
  return std::nullopt;
}

namespace {

// Printing of the compared values; doubles with round-trip precision so two
// values that print alike are equal.
std::string show(int64_t v) { return std::to_string(v); }
std::string show(bool v) { return v ? "true" : "false"; }
std::string show(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}
std::string show(const std::string &v) { return "\"" + v + "\""; }
std::string show(LayerRole v) { return roleName(v); }
template <typename T> std::string show(const std::optional<T> &v) {
  return v ? show(*v) : std::string("none");
}
template <typename T> std::string show(const std::vector<T> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + show(v[i]);
  return s + "]";
}

class Differ {
public:
  std::vector<std::string> out;

  template <typename T>
  void field(const std::string &name, const T &a, const T &b) {
    if (!(a == b))
      out.push_back(name + ": " + show(a) + " vs " + show(b));
  }
};

void compareLayer(Differ &d, const std::string &p, const LayerSpec &a,
                  const LayerSpec &b) {
  d.field(p + ".id", a.id, b.id);
  d.field(p + ".role", a.role, b.role);
  d.field(p + ".compressRatio", a.compressRatio, b.compressRatio);
  d.field(p + ".kvSource", a.kvSource, b.kvSource);
  d.field(p + ".indexSource", a.indexSource, b.indexSource);
  d.field(p + ".candidateSource", a.candidateSource, b.candidateSource);
  d.field(p + ".usesCandidates", a.usesCandidates, b.usesCandidates);
  d.field(p + ".engram", a.engram, b.engram);
  d.field(p + ".engramIndex", a.engramIndex, b.engramIndex);
  d.field(p + ".dsparkTarget", a.dsparkTarget, b.dsparkTarget);
  d.field(p + ".encoder", a.encoder, b.encoder);
  d.field(p + ".nRoutedExperts", a.nRoutedExperts, b.nRoutedExperts);
  d.field(p + ".nActivatedExperts", a.nActivatedExperts, b.nActivatedExperts);
  d.field(p + ".ropeTheta", a.ropeTheta, b.ropeTheta);
  d.field(p + ".yarn", a.yarn, b.yarn);
}

void compareEngram(Differ &d, const std::string &p, const EngramLayerLayout &a,
                   const EngramLayerLayout &b) {
  d.field(p + ".layerId", a.layerId, b.layerId);
  d.field(p + ".primes.size", int64_t(a.primes.size()),
          int64_t(b.primes.size()));
  for (size_t i = 0; i < std::min(a.primes.size(), b.primes.size()); ++i)
    d.field(p + ".primes[" + std::to_string(i) + "]", a.primes[i],
            b.primes[i]);
  d.field(p + ".offsets", a.offsets, b.offsets);
  d.field(p + ".tableRows", a.tableRows, b.tableRows);
  d.field(p + ".multipliers", a.multipliers, b.multipliers);
}

} // namespace

// modelSpecDifferences must compare every field: these fire when a field is
// added to ModelSpec, LayerSpec, EngramLayerLayout or RuntimeLimits, as a
// reminder to compare it below (then update the size). LP64 sizes.
static_assert(sizeof(void *) != 8 || sizeof(ModelSpec) == 768,
              "new ModelSpec field: compare it in modelSpecDifferences");
static_assert(sizeof(void *) != 8 || sizeof(LayerSpec) == 112,
              "new LayerSpec field: compare it in compareLayer");
static_assert(sizeof(void *) != 8 || sizeof(EngramLayerLayout) == 88,
              "new EngramLayerLayout field: compare it in compareEngram");
static_assert(sizeof(void *) != 8 || sizeof(RuntimeLimits) == 48,
              "new RuntimeLimits field: compare it in modelSpecDifferences");

std::vector<std::string> modelSpecDifferences(const ModelSpec &a,
                                              const ModelSpec &b,
                                              bool compareLimits) {
  Differ d;
#define DSC_FIELD(f) d.field(#f, a.f, b.f)
  DSC_FIELD(vocabSize);
  DSC_FIELD(dim);
  DSC_FIELD(moeInterDim);
  DSC_FIELD(nLayers);
  DSC_FIELD(nMtpLayers);
  DSC_FIELD(nHeads);
  DSC_FIELD(headDim);
  DSC_FIELD(ropeHeadDim);
  DSC_FIELD(qLoraRank);
  DSC_FIELD(oGroups);
  DSC_FIELD(oLoraRank);
  DSC_FIELD(windowSize);
  DSC_FIELD(normEps);
  DSC_FIELD(dtype);
  DSC_FIELD(expertDtype);
  DSC_FIELD(nRoutedExperts);
  DSC_FIELD(nSharedExperts);
  DSC_FIELD(nActivatedExperts);
  DSC_FIELD(scoreFunc);
  DSC_FIELD(routeScale);
  DSC_FIELD(swigluLimit);
  DSC_FIELD(gateTemp);
  DSC_FIELD(normTopkProb);
  DSC_FIELD(compressRatios);
  DSC_FIELD(kvSourceLayers);
  DSC_FIELD(indexSourceLayers);
  DSC_FIELD(candidateSourceLayer);
  DSC_FIELD(candidateTopkBlocks);
  DSC_FIELD(candidateBlockSize);
  DSC_FIELD(indexNHeads);
  DSC_FIELD(indexHeadDim);
  DSC_FIELD(indexTopk);
  DSC_FIELD(ropeTheta);
  DSC_FIELD(compressRopeTheta);
  DSC_FIELD(ropeFactor);
  DSC_FIELD(betaFast);
  DSC_FIELD(betaSlow);
  DSC_FIELD(originalSeqLen);
  DSC_FIELD(hcMult);
  DSC_FIELD(hcSinkhornIters);
  DSC_FIELD(hcEps);
  DSC_FIELD(engramLayerIds);
  DSC_FIELD(engramNumEmbeddings);
  DSC_FIELD(engramMaxNgramSize);
  DSC_FIELD(engramVocabSize);
  DSC_FIELD(engramNHeads);
  DSC_FIELD(engramHeadDim);
  DSC_FIELD(engramPadId);
  DSC_FIELD(engramCompressedVocabSize);
  DSC_FIELD(dsparkBlockSize);
  DSC_FIELD(dsparkNoiseTokenId);
  DSC_FIELD(dsparkMarkovRank);
  DSC_FIELD(dsparkTargetLayerIds);
  DSC_FIELD(dsparkNRoutedExperts);
  DSC_FIELD(dsparkNActivatedExperts);
  DSC_FIELD(visionNLayers);
  DSC_FIELD(imageTokenId);
  if (compareLimits) {
    DSC_FIELD(limits.maxSeqLen);
    DSC_FIELD(limits.maxBatchSize);
    DSC_FIELD(limits.temperature);
  }
  DSC_FIELD(cedSplitLayer);
#undef DSC_FIELD

  d.field("layers.size", int64_t(a.layers.size()), int64_t(b.layers.size()));
  for (size_t i = 0; i < std::min(a.layers.size(), b.layers.size()); ++i)
    compareLayer(d, "layers[" + std::to_string(i) + "]", a.layers[i],
                 b.layers[i]);
  d.field("engram.size", int64_t(a.engram.size()), int64_t(b.engram.size()));
  for (size_t i = 0; i < std::min(a.engram.size(), b.engram.size()); ++i)
    compareEngram(d, "engram[" + std::to_string(i) + "]", a.engram[i],
                  b.engram[i]);
  return d.out;
}

} // namespace dsc::models
