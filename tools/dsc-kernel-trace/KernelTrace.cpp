//===- KernelTrace.cpp - A kernel timeline of any CUDA program (CUPTI) -----===//
//
// What: a CUDA injection library (libdsc-kernel-trace.so). The driver loads
// it at cuInit when CUDA_INJECTION64_PATH names it, and from then on every
// kernel the process runs, graph replays included, is recorded through
// CUPTI's activity API: name, start and end (ns, the GPU's timestamps),
// stream, the correlation id of the launching API call (one id per graph
// launch: the kernels of one decode step share it), graph id and node id.
// At exit the records go to DSC_KERNEL_TRACE (a CSV file; default
// kernel-trace.csv), one kernel per line.
// Why: the device image has no Nsight Systems, and ncu times kernels one by
// one with the launch serialised, so a decode step's critical path (which
// kernels wait on which, the gaps between dependent kernels in a graph with
// programmatic dependent launch) cannot be seen otherwise. The
// timeline is summarised by scripts/kernel-trace-summary.py (docs/bench.md).
// Invariants: no dsc code is linked in; the traced program is unchanged
// (CUPTI adds a little time per kernel: compare steps only between traced
// runs). Records that CUPTI drops are counted and reported at exit.
// Usage (on the device):
//   CUDA_INJECTION64_PATH=$PWD/libdsc-kernel-trace.so DSC_KERNEL_TRACE=t.csv \
//   LD_LIBRARY_PATH=/usr/local/cuda/lib64 dsc-bench PLAN --backend cuda ...
//===----------------------------------------------------------------------===//
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Record {
  std::string name;
  unsigned long long start, end;
  unsigned stream, correlation, graph;
  unsigned long long node;
  int gridX, blockX;
};

std::mutex gMutex;
std::vector<Record> gRecords;
size_t gDropped = 0;
constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                              size_t validSize) {
  (void)size;
  CUpti_Activity *record = nullptr;
  std::vector<Record> batch;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(record);
    batch.push_back(Record{k->name ? k->name : "?", k->start, k->end, k->streamId,
                           k->correlationId, k->graphId, k->graphNodeId, k->gridX, k->blockX});
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped);
  std::free(buffer);
  std::lock_guard<std::mutex> lock(gMutex);
  gDropped += dropped;
  gRecords.insert(gRecords.end(), batch.begin(), batch.end());
}

void writeTrace() {
  cuptiActivityFlushAll(1);
  const char *path = std::getenv("DSC_KERNEL_TRACE");
  if (!path || !*path)
    path = "kernel-trace.csv";
  std::lock_guard<std::mutex> lock(gMutex);
  FILE *f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "dsc-kernel-trace: cannot write %s\n", path);
    return;
  }
  std::fprintf(f, "name,start_ns,end_ns,stream,correlation,graph,node,grid_x,block_x\n");
  for (const Record &r : gRecords)
    std::fprintf(f, "%s,%llu,%llu,%u,%u,%u,%llu,%d,%d\n", r.name.c_str(), r.start, r.end,
                 r.stream, r.correlation, r.graph, r.node, r.gridX, r.blockX);
  std::fclose(f);
  std::fprintf(stderr, "dsc-kernel-trace: %zu kernels to %s (%zu records dropped)\n",
               gRecords.size(), path, gDropped);
}

} // namespace

/// The driver's entry point for an injection library (CUDA_INJECTION64_PATH).
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "dsc-kernel-trace: CUPTI activity tracing unavailable\n");
    return 0;
  }
  std::atexit(writeTrace);
  return 1;
}
