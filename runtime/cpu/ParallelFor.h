//===- ParallelFor.h - A small std::thread parallel loop for CPU kernels --===//
//
// parallelFor(n, fn) calls fn(begin, end) on disjoint chunks covering [0, n)
// from up to cpuThreadCount() threads (1 runs inline): hardware_concurrency,
// or EngineOptions::cpuThreads through setCpuThreadCount (process-wide: the
// kernels are free functions; the count never changes results). Results must not depend on the chunking: each index is computed by
// exactly one call, and kernels keep every reduction inside one index, so the
// CPU backend is deterministic whatever the thread count.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_PARALLELFOR_H
#define DSC_RUNTIME_CPU_PARALLELFOR_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace dsc::cpu {

/// The requested thread count; 0 = hardware concurrency.
inline std::atomic<int64_t> &cpuThreadSetting() {
  static std::atomic<int64_t> threads{0};
  return threads;
}
/// Sets the CPU kernels' thread count (0: hardware concurrency).
inline void setCpuThreadCount(int64_t threads) {
  cpuThreadSetting().store(std::max<int64_t>(threads, 0));
}
inline int64_t cpuThreadCount() {
  if (int64_t n = cpuThreadSetting().load(); n > 0)
    return n;
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

/// fn(begin, end) over chunks of [0, n); `grain` is the smallest chunk worth a
/// thread.
template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
  if (n <= 0)
    return;
  int64_t threads = std::min<int64_t>(cpuThreadCount(), (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (threads <= 1) {
    fn(int64_t(0), n);
    return;
  }
  int64_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int64_t t = 1; t < threads; ++t) {
    int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin < end)
      pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(int64_t(0), std::min(n, chunk));
  for (std::thread &t : pool)
    t.join();
}

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_PARALLELFOR_H
