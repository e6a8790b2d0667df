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
//   dsc-kernel-bench moe-up|moe-down --m T --n I --k D [--topk k] [--gemv ...]
// (S: K splits, default the runtime's choice; the grid is the runtime's).
// linear-*: the decode GEMV of the `linear` template with the activation
// quantised in the block (the runtime's decode path), bytes = weights + their
// UE8M0 scales; S > 1 adds dsc_linear_splitk_reduce_fast's partial reads.
// moe-up / moe-down: the MoE up (w1, w3 and swiglu) and down steps of T
// tokens, each routed to k distinct FP4 experts plus the FP8 shared expert
// (the `moe_experts` template as moeExpertsFast launches it), bytes = the
// chosen experts' weights and scales, each once.
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
#include <algorithm>
#include <random>
#include <string>

namespace {

constexpr const char *kUsage =
    "usage: dsc-kernel-bench linear-fp8|linear-fp4 --m M --n N --k K [--splits S (0: the runtime's)]\n"
    "                        [--gemv lanes|tiles] [--graph-launches L] [--replays R]\n"
    "       dsc-kernel-bench moe-up|moe-down --m TOKENS --n INTER --k DIM [--topk K] [--gemv ...]\n";

int usage(const std::string &message) {
  std::fprintf(stderr, "dsc-kernel-bench: error: %s\n%s", message.c_str(), kUsage);
  return 2;
}

/// Random bytes: E2M1 pairs (any), E4M3 codes without NaN (no 0x7f / 0xff),
/// or UE8M0 scales near 1.
enum class Fill { Fp4, Fp8, Scale };
std::vector<uint8_t> randomBytes(size_t n, Fill fill, std::mt19937 &rng) {
  std::uniform_int_distribution<int> byte(0, 255), scale(120, 130);
  std::vector<uint8_t> v(n);
  for (uint8_t &b : v)
    b = fill == Fill::Scale ? uint8_t(scale(rng))
                            : uint8_t(byte(rng) & (fill == Fill::Fp8 ? 0xf7 : 0xff));
  return v;
}

/// bf16 values of magnitude [1, 2), both signs.
std::vector<uint16_t> randomBf16(size_t n, std::mt19937 &rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v)
    x = uint16_t(0x3f80 ^ (byte(rng) & 0x807f));
  return v;
}

int printResult(const std::string &kernel, const std::string &entry, const std::string &device,
                long long M, long long N, long long K, long long splits, unsigned grid,
                double seconds, long long bytes, double copyGbps) {
  const double gbps = double(bytes) / seconds / 1e9;
  std::printf("{\"kernel\": \"%s\", \"entry\": \"%s\", \"device\": \"%s\", \"m\": %lld, \"n\": %lld, "
              "\"k\": %lld, \"splits\": %lld, \"grid\": %u, \"us_per_launch\": %.3f, "
              "\"bytes\": %lld, \"gbps\": %.1f, \"copy_gbps\": %.1f, \"fraction_of_copy\": %.3f}\n",
              kernel.c_str(), entry.c_str(), device.c_str(), M, N, K, splits, grid, seconds * 1e6,
              bytes, gbps, copyGbps, gbps / copyGbps);
  return 0;
}

int launchError(const dsc::runtime::Status &s) {
  std::fprintf(stderr, "dsc-kernel-bench: error: %s\n", s.message().c_str());
  return 1;
}

/// moe-up / moe-down: T tokens routed to topk distinct experts of E = 2 *
/// topk (only the chosen ones are read) plus the shared expert.
int runMoe(dsc::tools::KernelHarness &h, bool upStep, bool lanes, long long T, long long I,
           long long D, long long k, int perGraph, int replays, double copyGbps,
           const std::string &device) {
  namespace cu = dsc::cuda;
  using dsc::tools::kernelArgs;
  std::mt19937 rng(2);
  const long long E = 2 * k, slots = T * (k + 1);
  std::vector<int> ids(size_t(T * k));
  for (long long t = 0; t < T; ++t)
    for (long long j = 0; j < k; ++j)
      ids[size_t(t * k + j)] = int((t + 2 * j) % E); // distinct within a token
  std::vector<float> weights(size_t(T * k), 1.0f / float(k));
  // up: w1, w3 [E, I, D/2] + [E, I, D/32], shared s1, s3 [I, D] + [ceil(I/32), D/32];
  // down: w2 [E, D, I/2] + [E, D, I/32], shared s2 [D, I] + [ceil(D/32), I/32].
  const long long rowsOut = upStep ? I : D, width = upStep ? D : I;
  const long long routed = E * rowsOut * (width / 2), routedScales = E * rowsOut * (width / 32);
  const long long shared = rowsOut * width, sharedScales = ((rowsOut + 31) / 32) * (width / 32);
  const int mats = upStep ? 2 : 1;
  std::vector<CUdeviceptr> w, ws, s, ss;
  for (int m = 0; m < mats; ++m) {
    w.push_back(h.upload(randomBytes(size_t(routed), Fill::Fp4, rng)));
    ws.push_back(h.upload(randomBytes(size_t(routedScales), Fill::Scale, rng)));
    s.push_back(h.upload(randomBytes(size_t(shared), Fill::Fp8, rng)));
    ss.push_back(h.upload(randomBytes(size_t(sharedScales), Fill::Scale, rng)));
  }
  CUdeviceptr ip = h.upload(ids), wp = h.upload(weights), none = 0;
  CUdeviceptr x = h.upload(randomBf16(size_t(upStep ? T * D : slots * I), rng));
  CUdeviceptr out = h.upload(nullptr, size_t(slots * (upStep ? I * 2 : D * 4)));
  const unsigned grid =
      lanes ? cu::gemvGrid(slots * cu::ceilDiv(rowsOut, cu::kLaneTileRows)).x
            : cu::tileGrid(slots * cu::ceilDiv(rowsOut, 16)).x;
  const size_t smem = cu::quantBytes(upStep ? T : slots, width) + cu::kCombineBytes;
  const std::string entry = std::string("dsc_moe_experts_") + (upStep ? "up" : "down") +
                            (lanes ? "_lanes" : "_fast");
  // Each token reads its k experts and the shared one (distinct within a
  // token; tokens may share experts, counted once: at most E routed).
  const long long chosen = std::min(E, T * k);
  const long long bytes = mats * (chosen * (routed + routedScales) / E + shared + sharedScales);
  dsc::runtime::Expected<double> seconds = 0.0;
  if (upStep) {
    dsc::abi::MoeExpertsParams p{};
    p.swiglu_limit = 10.0;
    seconds = h.timeLaunches("moe_experts", entry, grid, cu::gemvBlock().x, smem,
                             kernelArgs(p, x, none, none, T, D, I, w[0], ws[0], w[1], ws[1], s[0],
                                        ss[0], s[1], ss[1], ip, wp, k, E, out),
                             perGraph, replays);
  } else {
    seconds = h.timeLaunches("moe_experts", entry, grid, cu::gemvBlock().x, smem,
                             kernelArgs(x, none, none, T, I, D, w[0], ws[0], s[0], ss[0], ip, k, E,
                                        out),
                             perGraph, replays);
  }
  if (!seconds)
    return launchError(seconds.status());
  return printResult(upStep ? "moe-up" : "moe-down", entry, device, T, I, D, 1, grid, *seconds,
                     bytes, copyGbps);
}

int run(int argc, char **argv) {
  using namespace dsc::tools;
  const CommandLine cl = parseCommandLine(
      argc, argv,
      {"--m", "--n", "--k", "--splits", "--gemv", "--graph-launches", "--replays", "--topk"});
  if (!cl.error.empty())
    return usage(cl.error);
  const std::string kernel = cl.positional;
  const bool moe = kernel == "moe-up" || kernel == "moe-down";
  if (kernel != "linear-fp8" && kernel != "linear-fp4" && !moe)
    return usage(kernel.empty() ? "which kernel? (linear-fp8, linear-fp4, moe-up, moe-down)"
                                : "unknown kernel '" + kernel +
                                      "' (linear-fp8, linear-fp4, moe-up, moe-down)");
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
  long long M = 0, N = 0, K = 0, splits = 0, perGraph = 0, replays = 0, topk = 0;
  for (const std::string &e :
       {count("--m", -1, 1, 64, M), count("--n", -1, 1, 1 << 20, N),
        count("--k", -1, 32, 1 << 16, K), count("--splits", 0, 0, 64, splits),
        count("--graph-launches", 20, 1, 1000, perGraph), count("--replays", 20, 1, 10000, replays),
        count("--topk", 6, 1, 64, topk)})
    if (!e.empty())
      return usage(e);
  if (K % 32 != 0)
    return usage("--k must be a multiple of 32 (the scale blocks), got " + std::to_string(K));
  if (moe && N % 32 != 0)
    return usage("--n (the experts' inter width) must be a multiple of 32, got " +
                 std::to_string(N));
  const std::string gemv = cl.has("--gemv") ? cl.options.at("--gemv") : "lanes";
  if (gemv != "lanes" && gemv != "tiles")
    return usage("--gemv takes lanes or tiles, got '" + gemv + "'");
  const bool fp4 = kernel == "linear-fp4", lanes = gemv == "lanes";
  namespace cu = dsc::cuda;
  // The activation rows each launch quantises in its blocks: the down step's
  // are the token's k + 1 expert rows of width I.
  const long long quantRows = kernel == "moe-down" ? M * (topk + 1) : M;
  const long long quantWidth = kernel == "moe-down" ? N : K;
  if (cu::quantBytes(quantRows, quantWidth) + cu::kCombineBytes > 227 * 1024) // per block, H200
    return usage("--m x --k too large: the activation's codes and scales (" +
                 std::to_string(cu::quantBytes(quantRows, quantWidth)) +
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
  if (moe)
    return runMoe(*h, kernel == "moe-up", lanes, M, N, K, topk, int(perGraph), int(replays),
                  bandwidth->gbps, bandwidth->device);
  // Random operands: bf16 activations, E4M3 / E2M1 codes (no NaN), UE8M0 scales near 1.
  std::mt19937 rng(1);
  const std::vector<uint16_t> x = randomBf16(size_t(M * K), rng);
  const long long weightBytes = fp4 ? N * K / 2 : N * K;
  const long long scaleBytes = (fp4 ? N : (N + 31) / 32) * (K / 32);
  const std::vector<uint8_t> w = randomBytes(size_t(weightBytes), fp4 ? Fill::Fp4 : Fill::Fp8, rng);
  const std::vector<uint8_t> ws = randomBytes(size_t(scaleBytes), Fill::Scale, rng);
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
  if (!seconds)
    return launchError(seconds.status());
  double total = *seconds;
  long long bytes = weightBytes + scaleBytes;
  if (splits > 1) {
    long long MN = M * N;
    auto reduce = h->timeLaunches("linear", "dsc_linear_splitk_reduce_fast",
                                  cu::gridFor(MN).x, cu::block1().x, 0,
                                  kernelArgs(partial, splits, MN, y), int(perGraph), int(replays));
    if (!reduce)
      return launchError(reduce.status());
    total += *reduce;
    bytes += 2 * splits * MN * 4; // the partials written, then read
  }
  return printResult(kernel, entry, bandwidth->device, M, N, K, splits, grid, total, bytes,
                     bandwidth->gbps);
}

} // namespace

int main(int argc, char **argv) {
  return dsc::tools::guardedMain("dsc-kernel-bench", [&] { return run(argc, argv); });
}
