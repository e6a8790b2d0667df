//===- GraphCache.cpp - One Session's CUDA graphs ---------------------------===//
#include "runtime/cuda/GraphCache.h"

namespace dsc::cuda {

GraphCache::Entry &GraphCache::entry(int64_t program, const runtime::CallShape &shape) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->program == program && runtime::sameCallClass(it->shape, shape)) {
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front();
    }
  if (entries_.size() >= kEntries)
    entries_.pop_back();
  Entry &made = entries_.emplace_front();
  made.program = program;
  made.shape = shape;
  return made;
}

GraphCache::Action GraphCache::next(Entry &e) {
  if (e.graph)
    return Action::Replay;
  if (e.disabled)
    return Action::Eager;
  return e.calls++ == 1 ? Action::Capture : Action::Eager;
}

void GraphCache::invalidate(int64_t program) {
  for (Entry &e : entries_)
    if ((program < 0 || e.program == program) && e.graph) {
      e.graph.reset();
      e.calls = 0;
    }
}

} // namespace dsc::cuda
