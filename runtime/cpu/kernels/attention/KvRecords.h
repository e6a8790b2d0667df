//===- KvRecords.h - Packed KV record pools for the CPU attention kernels -===//
//
// What: a view of one pool of packed per-token KV records (a window ring, a
// KV source's main/compressed KV, or its index keys) laid out in pages by a
// numerics::KvPageLayout, plus an owning store for tests and the driver.
// Why: dsc keeps attention state as the packed records peers use, never as
// the reference's bf16 QDQ tensors (reference-spec §1, §3.5, §14). Encoding
// a record is the reference's QDQ quantiser and decoding it gives exactly the
// QDQ values (numerics/KvLayout.h), so "write then read" == QDQ.
// Rounding points: only those of numerics::encodeKvRecord (act_quant FP8 /
// FP4-E4M3 / FP4-UE8M0 scale and value rounding); decode is exact.
// Invariants: token indices are logical record slots in [0, capacity);
// page order, page size and the page table are data (tests use several).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_KVRECORDS_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_KVRECORDS_H

#include "dsc/numerics/KvLayout.h"

#include <cstdint>
#include <vector>

namespace dsc::cpu {

/// Non-owning view of a pool of records. `pageTable` maps logical page
/// token/tokensPerPage to a physical page (null: identity).
struct KvRecordPool {
  numerics::KvPageLayout layout;
  uint8_t *pool = nullptr;
  const int32_t *pageTable = nullptr;
  int64_t capacity = 0; ///< addressable records

  int64_t values() const { return layout.format.valuesPerEntry; }
  /// Quantises `values` (valuesPerEntry fp32, normally bf16 values) into the
  /// record of `token` (the reference's QDQ quantiser for this format).
  void write(int64_t token, const float *values) const;
  /// Decodes the record of `token` into `values` (exact QDQ values).
  void read(int64_t token, float *values) const;
};

/// Owning, zero-initialised contiguous pages (identity page table unless one
/// is given: then pages are placed at the physical indices it names).
class KvRecordStore {
public:
  KvRecordStore() = default;
  // The view points into the owned buffers: moves keep them (std::vector
  // moves its storage), copies would not.
  KvRecordStore(const KvRecordStore &) = delete;
  KvRecordStore &operator=(const KvRecordStore &) = delete;
  KvRecordStore(KvRecordStore &&) = default;
  KvRecordStore &operator=(KvRecordStore &&) = default;
  KvRecordStore(const numerics::KvPageLayout &layout, int64_t capacity,
                std::vector<int32_t> pageTable = {});
  KvRecordPool view() { return view_; }
  const KvRecordPool &pool() const { return view_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

private:
  std::vector<uint8_t> bytes_;
  std::vector<int32_t> pageTable_;
  KvRecordPool view_;
};

/// QDQ of one row through a record format without a pool (encode into a
/// scratch record, decode): the values a pool would return.
void qdqThroughRecord(const numerics::KvRecordFormat &format, const float *in, float *out);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_KVRECORDS_H
