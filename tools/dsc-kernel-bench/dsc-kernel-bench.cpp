//===- dsc-kernel-bench.cpp - Time one kernel entry against its byte bound ===//
//
// What: the kernel mode of issue 11: times one kernel of codegen/kernels at
// shapes given on the command line, on random operands, and prints one JSON
// object: microseconds per launch (CUDA-graph replays of back-to-back
// launches, tools/common/KernelHarness.h), the bytes the launch must read,
// the bandwidth that makes, and its fraction of the device-to-device copy
// bandwidth measured in the same run (dsc-bench's roofline rate).
//   dsc-kernel-bench linear-fp8|linear-fp4 --m M --n N --k K [--splits S]
//                    [--gemv lanes|tiles] [--graph-launches L] [--replays R]
// (S: K splits, default the runtime's choice; the grid is the runtime's).
// linear-*: the decode GEMV of the `linear` template with the activation
// quantised in the block (the runtime's decode path), bytes = weights + their
// UE8M0 scales; S > 1 adds dsc_linear_splitk_reduce_fast's partial reads.
// Why: the whole-model runs say where a decode step's time goes (ncu), not
// how far one kernel is from its bound at a chosen shape; a kernel under
// change needs that number on its own.
// Invariants: correctness is the business of test/unit/cuda/kernels (the
// same entries against the CPU reference); exit 2 on a usage error, 1 when
// the device or a launch fails (the message names it).
//===----------------------------------------------------------------------===//
#include "dsc/abi/LaunchShapes.h"
#include "dsc/runtime/Backend.h"
#include "runtime/cuda/GemvLaunch.h"
#include "tools/common/CommandLine.h"
#include "tools/common/KernelHarness.h"

#include <cstdio>
#include <random>
#include <string>

namespace {

constexpr const char *kUsage =
    "usage: dsc-kernel-bench linear-fp8|linear-fp4 --m M --n N --k K [--splits S (0: the runtime's)]\n"
    "                        [--gemv lanes|tiles] [--graph-launches L] [--replays R]\n";

int usage(const std::string &message) {
  std::fprintf(stderr, "dsc-kernel-bench: error: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int run(int argc, char **argv) {
  using namespace dsc::tools;
  const CommandLine cl = parseCommandLine(
      argc, argv, {"--m", "--n", "--k", "--splits", "--gemv", "--graph-launches", "--replays"});
  if (!cl.error.empty())
    return usage(cl.error);
  const std::string kernel = cl.positional;
  if (kernel != "linear-fp8" && kernel != "linear-fp4")
    return usage(kernel.empty() ? "which kernel? (linear-fp8, linear-fp4)"
                                : "unknown kernel '" + kernel + "' (linear-fp8, linear-fp4)");
  auto count = [&](const char *key, long long fallback, long long lo, long long hi,
                   long long &out) -> std::string {
    auto it = cl.options.find(key);
    if (it == cl.options.end()) {
      if (fallback < 0)
        return std::string(key) + " is required";
      out = fallback;
      return "";
    }
    bool ok = false;
    out = parseCount(it->second, ok);
    if (!ok || out < lo || out > hi)
      return std::string(key) + " takes an integer in [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "], got '" + it->second + "'";
    return "";
  };
  long long M = 0, N = 0, K = 0, splits = 0, perGraph = 0, replays = 0;
  for (const std::string &e :
       {count("--m", -1, 1, 64, M), count("--n", -1, 1, 1 << 20, N),
        count("--k", -1, 32, 1 << 16, K), count("--splits", 0, 0, 64, splits),
        count("--graph-launches", 20, 1, 1000, perGraph), count("--replays", 20, 1, 10000, replays)})
    if (!e.empty())
      return usage(e);
  if (K % 32 != 0)
    return usage("--k must be a multiple of 32 (the scale blocks), got " + std::to_string(K));
  const std::string gemv = cl.has("--gemv") ? cl.options.at("--gemv") : "lanes";
  if (gemv != "lanes" && gemv != "tiles")
    return usage("--gemv takes lanes or tiles, got '" + gemv + "'");
  const bool fp4 = kernel == "linear-fp4", lanes = gemv == "lanes";
  namespace cu = dsc::cuda;
  if (cu::quantBytes(M, K) + cu::kCombineBytes > 227 * 1024) // the H200's shared memory per block
    return usage("--m x --k too large: the activation's codes and scales (" +
                 std::to_string(cu::quantBytes(M, K)) +
                 " bytes) must fit one block's shared memory (the decode path)");
  if (splits == 0) // the runtime's choice (GemvLaunch.h)
    splits = lanes ? cu::laneSplits(N, K) : cu::gemvSplits(N, K);

  std::string why;
  std::unique_ptr<KernelHarness> h = KernelHarness::open(why);
  if (!h) {
    std::fprintf(stderr, "dsc-kernel-bench: error: %s\n", why.c_str());
    return 1;
  }
  auto bandwidth = dsc::runtime::measureDeviceCopyBandwidth();
  if (!bandwidth) {
    std::fprintf(stderr, "dsc-kernel-bench: error: %s\n", bandwidth.status().message().c_str());
    return 1;
  }
  // Random operands: bf16 activations, E4M3 / E2M1 codes (no NaN), UE8M0 scales near 1.
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> byte(0, 255), scale(120, 130);
  std::vector<uint16_t> x(size_t(M * K));
  for (uint16_t &v : x)
    v = uint16_t(0x3f80 ^ (byte(rng) & 0x807f)); // |v| in [1, 2), both signs
  const long long weightBytes = fp4 ? N * K / 2 : N * K;
  const long long scaleBytes = (fp4 ? N : (N + 31) / 32) * (K / 32);
  std::vector<uint8_t> w(static_cast<size_t>(weightBytes)), ws(static_cast<size_t>(scaleBytes));
  for (uint8_t &v : w)
    v = uint8_t(byte(rng) & (fp4 ? 0xff : 0xf7)); // E4M3: never 0x7f / 0xff
  for (uint8_t &v : ws)
    v = uint8_t(scale(rng));
  CUdeviceptr xp = h->upload(x), wp = h->upload(w), sp = h->upload(ws);
  CUdeviceptr y = h->upload(nullptr, size_t(M * N) * 2);
  CUdeviceptr partial = h->upload(nullptr, size_t(splits * M * N) * 4), none = 0;
  // The runtime's geometry (GemvLaunch.h quantizedGemv): warps of lane items
  // or blocks of 16-row tiles, the activation quantised in shared memory.
  const unsigned grid =
      lanes ? cu::gemvGrid(cu::ceilDiv(N, cu::kLaneTileRows) * cu::ceilDiv(M, 8) * splits).x
            : cu::tileGrid(cu::ceilDiv(N, 16) * cu::ceilDiv(M, 8) * splits).x;
  const unsigned block = cu::gemvBlock().x;
  const size_t smem = cu::quantBytes(M, K) + cu::kCombineBytes;
  const std::string entry = std::string("dsc_linear_") + (fp4 ? "fp4" : "fp8") +
                            (lanes ? "_lanes" : "_fast");
  auto seconds = h->timeLaunches("linear", entry, grid, block, smem,
                                 kernelArgs(xp, none, none, M, K, wp, sp, N, y, splits, partial),
                                 int(perGraph), int(replays));
  if (!seconds) {
    std::fprintf(stderr, "dsc-kernel-bench: error: %s\n", seconds.status().message().c_str());
    return 1;
  }
  double total = *seconds;
  long long bytes = weightBytes + scaleBytes;
  if (splits > 1) {
    long long MN = M * N;
    auto reduce = h->timeLaunches("linear", "dsc_linear_splitk_reduce_fast",
                                  cu::gridFor(MN).x, cu::block1().x, 0,
                                  kernelArgs(partial, splits, MN, y), int(perGraph), int(replays));
    if (!reduce) {
      std::fprintf(stderr, "dsc-kernel-bench: error: %s\n", reduce.status().message().c_str());
      return 1;
    }
    total += *reduce;
    bytes += 2 * splits * MN * 4; // the partials written, then read
  }
  const double gbps = double(bytes) / total / 1e9;
  std::printf("{\"kernel\": \"%s\", \"entry\": \"%s\", \"device\": \"%s\", \"m\": %lld, \"n\": %lld, "
              "\"k\": %lld, \"splits\": %lld, \"grid\": %u, \"us_per_launch\": %.3f, "
              "\"bytes\": %lld, \"gbps\": %.1f, \"copy_gbps\": %.1f, \"fraction_of_copy\": %.3f}\n",
              kernel.c_str(), entry.c_str(), bandwidth->device.c_str(), M, N, K, splits, grid,
              total * 1e6, bytes, gbps, bandwidth->gbps, gbps / bandwidth->gbps);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return dsc::tools::guardedMain("dsc-kernel-bench", [&] { return run(argc, argv); });
}
