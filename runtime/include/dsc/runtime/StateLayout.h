//===- StateLayout.h - A state buffer's record layout as numerics types ----===//
//
// Converts the plan's RecordLayout into numerics::KvPageLayout (the one
// definition of record and page byte layouts) and sizes a state buffer:
// whole pages covering `capacity` records, or one page of `capacity`
// records when tokensPerPage is 0 (not paged).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_STATELAYOUT_H
#define DSC_RUNTIME_STATELAYOUT_H

#include "dsc/numerics/KvLayout.h"
#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <cstdint>
#include <string>

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

/// The page layout of a record state: tokensPerPage == 0 means "not paged",
/// i.e. one page of `capacity` records (capacity must then fit in int32).
inline numerics::KvPageLayout pageLayoutOf(const StateBuffer &state) {
  numerics::KvPageLayout layout = pageLayoutOf(state.layout);
  if (layout.tokensPerPage == 0 && state.capacity > 0 && state.capacity <= INT32_MAX)
    layout.tokensPerPage = int32_t(state.capacity);
  return layout;
}

/// Bytes of a record state buffer holding `capacity` records in whole pages
/// (one page of `capacity` records when not paged). Every product is
/// checked: a negative field or an overflow is InvalidArgument naming the
/// state.
inline Expected<int64_t> stateBytes(const StateBuffer &state) {
  auto bad = [&](const std::string &why) {
    return invalidArgument("state '" + state.name + "': " + why);
  };
  if (state.capacity < 0)
    return bad("capacity " + std::to_string(state.capacity) + " is negative");
  if (state.layout.entryBytes < 0)
    return bad("entryBytes " + std::to_string(state.layout.entryBytes) + " is negative");
  if (state.layout.tokensPerPage < 0)
    return bad("tokensPerPage " + std::to_string(state.layout.tokensPerPage) + " is negative");
  int64_t perPage = state.layout.tokensPerPage;
  int64_t pages = 0;
  if (perPage == 0) { // not paged: one page of `capacity` records
    perPage = state.capacity;
    pages = state.capacity > 0 ? 1 : 0;
  } else {
    pages = state.capacity / perPage + (state.capacity % perPage != 0);
  }
  int64_t pageBytes = 0, bytes = 0;
  if (__builtin_mul_overflow(perPage, int64_t(state.layout.entryBytes), &pageBytes) ||
      __builtin_mul_overflow(pages, pageBytes, &bytes))
    return bad("capacity " + std::to_string(state.capacity) + " x entryBytes " +
               std::to_string(state.layout.entryBytes) + " overflows");
  return bytes;
}

} // namespace dsc::runtime

#endif // DSC_RUNTIME_STATELAYOUT_H
