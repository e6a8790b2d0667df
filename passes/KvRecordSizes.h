//===- KvRecordSizes.h - Record bytes of the KV formats, by width ----------===//
//
// Adapters from a record's value count to its bytes, for the three KV
// formats, taken from the numerics library's record descriptors (one
// definition of every byte layout, numerics/include/dsc/numerics/KvLayout.h):
//   main KV:    E2M1 values (2 per byte) + one E4M3 scale per 16 values
//   index keys: E2M1 values (2 per byte) + one UE8M0 scale per 32 values
//   SWA window: E4M3 values (1 per byte) + one UE8M0 scale per 32 values
// The released widths give 288, 68 and 528 bytes.
//===----------------------------------------------------------------------===//
#ifndef DSC_PASSES_KVRECORDSIZES_H
#define DSC_PASSES_KVRECORDSIZES_H

#include "dsc/numerics/KvLayout.h"

#include <cstdint>

namespace dsc::ds {
inline int64_t mainKvRecordBytes(int64_t values) {
  return numerics::mainKvFormat(int32_t(values)).entryBytes;
}
inline int64_t indexKeyRecordBytes(int64_t values) {
  return numerics::indexKeyFormat(int32_t(values)).entryBytes;
}
inline int64_t windowRecordBytes(int64_t values) {
  return numerics::swaKvFormat(int32_t(values)).entryBytes;
}
} // namespace dsc::ds

#endif // DSC_PASSES_KVRECORDSIZES_H
