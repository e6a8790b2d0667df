//===- Conformance.h - Forced boundaries and layer dumps -------------------===//
//
// The comparison protocol of ../shared/golden/README.md as a product feature:
//   - GoldenForcing replaces, after block L of phase `prefill` / `decode<i>`,
//     the stream and mix with `{phase}.layers.L.out` / `.pre_mix` of a
//     golden-format safetensors file (shapes checked; a missing key or a shape
//     that does not match the plan is an error naming it);
//   - LayerDumper writes, per phase, NumPy files named like the golden keys:
//     `{phase}.layers.L.out.npy` (float32, the block's own output before any
//     injection), `.attn_out.npy` / `.ffn_out.npy` (float32, the sub-block
//     outputs), `.topk_idxs.npy` (int32) for index sources,
//     `.candidates.npy` (uint8) for the candidate source,
//     `{phase}.engram_hash_ids.npy` (int64), `{phase}.logits_all.npy`, and
//     after prefill `prefill.cache.L.{window_kv,compress_kv,index_k}.npy`
//     (float32, decoded from the packed records).
// ObserverChain runs several observers in order (dump before forcing).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CONFORMANCE_H
#define DSC_RUNTIME_CONFORMANCE_H

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Safetensors.h"

#include <memory>
#include <string>
#include <vector>

namespace dsc::runtime {

class GoldenForcing : public SessionObserver {
public:
  static Expected<std::unique_ptr<GoldenForcing>> open(const std::string &path);
  Status atBoundary(const CallInfo &call, int64_t layer, HostTensor &stream,
                    HostTensor &mix) override;

private:
  explicit GoldenForcing(SafetensorsFile file) : file_(std::move(file)) {}
  SafetensorsFile file_;
};

class LayerDumper : public SessionObserver {
public:
  LayerDumper(std::string directory, const Session &session, const Plan &plan)
      : directory_(std::move(directory)), session_(session), plan_(plan) {}
  void afterLaunch(const CallInfo &, const Program &, const Launch &, const KernelSpec &,
                   std::span<const HostTensor *const> outputs) override;
  Status atBoundary(const CallInfo &call, int64_t layer, HostTensor &stream,
                    HostTensor &mix) override;
  /// Writes the caches of every layer after prefill (call once, after it).
  Status dumpCaches();
  /// The first error a dump hit, if any (afterLaunch cannot return one).
  const Status &status() const { return status_; }

private:
  void write(const std::string &name, const HostTensor &tensor);
  void write(const std::string &name, const Expected<HostTensor> &tensor);
  std::string directory_;
  const Session &session_;
  const Plan &plan_;
  Status status_;
};

class ObserverChain : public SessionObserver {
public:
  void add(SessionObserver *observer) { observers_.push_back(observer); }
  void afterLaunch(const CallInfo &call, const Program &program, const Launch &launch,
                   const KernelSpec &kernel, std::span<const HostTensor *const> outputs) override {
    for (SessionObserver *o : observers_)
      o->afterLaunch(call, program, launch, kernel, outputs);
  }
  Status atBoundary(const CallInfo &call, int64_t layer, HostTensor &stream,
                    HostTensor &mix) override {
    for (SessionObserver *o : observers_)
      if (Status s = o->atBoundary(call, layer, stream, mix); !s)
        return s;
    return Status::ok();
  }

private:
  std::vector<SessionObserver *> observers_;
};

/// bf16 / f16 / f32 / f64 / fp8 E4M3 / integer tensors widened to float32
/// (bf16, f16 and E4M3 bits decoded exactly); InvalidArgument naming the
/// dtype for others (UE8M0 scales).
Expected<HostTensor> toFloat32(const HostTensor &tensor);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_CONFORMANCE_H
