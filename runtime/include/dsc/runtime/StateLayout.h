//===- StateLayout.h - A state buffer's record layout as numerics types ----===//
//
// Converts the plan's RecordLayout into numerics::KvPageLayout (the one
// definition of record and page byte layouts) and sizes a state buffer:
// whole pages covering `capacity` records.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_STATELAYOUT_H
#define DSC_RUNTIME_STATELAYOUT_H

#include "dsc/numerics/KvLayout.h"
#include "dsc/runtime/PlanModel.h"

namespace dsc::runtime {

inline numerics::KvPageLayout pageLayoutOf(const RecordLayout &r) {
  numerics::KvPageLayout layout;
  layout.format.valuesPerEntry = r.valuesPerEntry;
  layout.format.valuesPerTile = r.valuesPerTile;
  layout.format.valueType = numerics::KvValueType(r.valueType);
  layout.format.scaleType = numerics::KvScaleType(r.scaleType);
  layout.format.dataBytes = r.dataBytes;
  layout.format.scaleBytes = r.scaleBytes;
  layout.format.entryBytes = r.entryBytes;
  layout.tokensPerPage = r.tokensPerPage;
  layout.order = numerics::KvPageOrder(r.pageOrder);
  return layout;
}

/// Bytes of a record state buffer holding `capacity` records in whole pages.
inline int64_t stateBytes(const StateBuffer &state) {
  numerics::KvPageLayout layout = pageLayoutOf(state.layout);
  int64_t pages = (state.capacity + layout.tokensPerPage - 1) / layout.tokensPerPage;
  return pages * layout.pageBytes();
}

} // namespace dsc::runtime

#endif // DSC_RUNTIME_STATELAYOUT_H
