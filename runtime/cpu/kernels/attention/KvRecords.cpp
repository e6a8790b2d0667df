//===- KvRecords.cpp - Packed KV record pools -----------------------------===//
#include "runtime/cpu/kernels/attention/KvRecords.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace dsc::cpu {

void KvRecordPool::write(int64_t token, const float *values) const {
  assert(token >= 0 && token < capacity);
  uint8_t *data = pool + layout.tokenDataOffset(token, pageTable);
  uint8_t *scales = pool + layout.tokenScaleOffset(token, pageTable);
  numerics::encodeKvRecord(layout.format, values, data, scales);
}

void KvRecordPool::read(int64_t token, float *values) const {
  assert(token >= 0 && token < capacity);
  const uint8_t *data = pool + layout.tokenDataOffset(token, pageTable);
  const uint8_t *scales = pool + layout.tokenScaleOffset(token, pageTable);
  numerics::decodeKvRecord(layout.format, data, scales, values);
  // code*scale is exact and a bf16 value except on bf16 under/overflow,
  // where the reference's QDQ rounds to bf16: do the same.
  for (int64_t i = 0; i < layout.format.valuesPerEntry; ++i)
    values[i] = numerics::roundToBf16(values[i]);
}

KvRecordStore::KvRecordStore(const numerics::KvPageLayout &layout, int64_t capacity,
                             std::vector<int32_t> pageTable)
    : pageTable_(std::move(pageTable)) {
  if (!layout.isValid())
    throw std::invalid_argument("KvRecordStore: invalid page layout");
  const int64_t logicalPages = numerics::kvPagesFor(layout, std::max<int64_t>(capacity, 1));
  int64_t physicalPages = logicalPages;
  if (!pageTable_.empty()) {
    if (static_cast<int64_t>(pageTable_.size()) < logicalPages)
      throw std::invalid_argument("KvRecordStore: page table shorter than the pool");
    physicalPages = 0;
    for (int32_t p : pageTable_)
      physicalPages = std::max<int64_t>(physicalPages, int64_t(p) + 1);
  }
  bytes_.assign(static_cast<size_t>(physicalPages * layout.pageBytes()), 0);
  view_.layout = layout;
  view_.pool = bytes_.data();
  view_.pageTable = pageTable_.empty() ? nullptr : pageTable_.data();
  view_.capacity = capacity;
}

void qdqThroughRecord(const numerics::KvRecordFormat &format, const float *in, float *out) {
  std::vector<uint8_t> data(static_cast<size_t>(format.dataBytes));
  std::vector<uint8_t> scales(static_cast<size_t>(format.scaleBytes));
  numerics::encodeKvRecord(format, in, data.data(), scales.data());
  numerics::decodeKvRecord(format, data.data(), scales.data(), out);
  for (int32_t i = 0; i < format.valuesPerEntry; ++i)
    out[i] = numerics::roundToBf16(out[i]);
}

} // namespace dsc::cpu
