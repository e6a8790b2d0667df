//===- dsc-kernel-bench.cpp - Time one kernel entry against its byte bound ===//
//
// What: the kernel mode of issue 11: times one decode kernel of
// codegen/kernels at shapes given on the command line, on random operands,
// and prints one JSON object: microseconds per call (CUDA-graph replays of
// back-to-back launches, tools/common/KernelHarness.h), the bytes the call
// must move, the bandwidth that makes, and its fraction of the
// device-to-device copy bandwidth measured in the same run (the rate
// dsc-bench's roofline uses).
//   dsc-kernel-bench linear-fp8|linear-fp4 --m M --n N --k K [--splits S]
//                    [--gemv lanes|slots|tiles|wg|rows] [--graph-calls C] [--replays R]
//   dsc-kernel-bench moe-up|moe-down --m T --n I --k D [--topk k] [...]
//   dsc-kernel-bench stream --n ROWS --k ROW_BYTES --pattern 0..3 --depth 1|2|4|8|16
//     (codegen/kernels/stream_probe.cu: the GEMVs' weight access patterns,
//     no arithmetic; bytes = ROWS * ROW_BYTES)
//   dsc-kernel-bench chain --n LAUNCHES --k WIDTH [--pdl on|off]
//   Every mode: [--define NAME=VALUE[,NAME=VALUE...]] compiles the kernels
//   with those -D knobs (e.g. DSC_ROW_PREFETCH_STEPS=4, row_gemv.cuh), so
//   one binary times a knob's settings side by side.
//     (the floor of a dependent launch: LAUNCHES dsc_rms_norm_fast launches
//     on one row of WIDTH bf16 in one graph, each reading what the one
//     before wrote, as programmatic dependent launches or plain ones;
//     microseconds per launch. A decode step is ~150 such dependent steps.)
// A call is what the runtime launches for the step (runtime/cuda/
// GemvLaunch.h quantizedGemv, CudaAdaptersDense.cpp moeExpertsFast): the
// same entries, grids, K splits (S: 0 = the runtime's choice) and
// activation path (quantised in every block while quantizeInBlocks says so,
// else a global act_quant launch first), so its time includes those
// launches. linear-*: bytes = weights + their UE8M0 scales (+ the split-K
// partials written and read); moe-*: T tokens, each routed to k distinct FP4
// experts (of 2k) plus the FP8 shared expert, bytes = the chosen experts'
// weights and scales, each once. The weights rotate over enough copies that
// no call finds its weights in L2 (at least 2 x 50 MB per graph pass); the
// activations are the same every call, as in decode.
// Why: the whole-model runs say where a decode step's time goes (ncu), not
// how far one kernel is from its bound at a chosen shape.
// Invariants: plain launches (no programmatic dependent launch) except chain
// --pdl on; correctness
// is the business of test/unit/cuda/kernels; exit 2 on a usage error, 1
// when the device or a launch fails (the message names it).
//===----------------------------------------------------------------------===//
#include "dsc/abi/KernelParams.h"
#include "dsc/abi/LaunchShapes.h"
#include "dsc/runtime/Backend.h"
#include "runtime/cuda/GemvLaunch.h"
#include "tools/common/CommandLine.h"
#include "tools/common/KernelHarness.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <deque>
#include <random>
#include <string>

namespace {

namespace cu = dsc::cuda;
using dsc::tools::kernelArgs;
using dsc::tools::KernelHarness;
using Launch = KernelHarness::Launch;

constexpr const char *kUsage =
    "usage: dsc-kernel-bench linear-fp8|linear-fp4 --m M --n N --k K [--splits S (0: the "
    "runtime's)]\n"
    "                        [--gemv lanes|slots|tiles|wg|rows] [--graph-calls C] [--replays R]\n"
    "       dsc-kernel-bench moe-up|moe-down --m TOKENS --n INTER --k DIM [--topk K] [--gemv "
    "...]\n"
    "       dsc-kernel-bench stream --n ROWS --k ROW_BYTES --pattern 0..3 --depth 1|2|4|8|16\n"
    "       dsc-kernel-bench chain --n LAUNCHES --k WIDTH [--pdl on|off]\n"
    "       every mode: [--define NAME=VALUE[,NAME=VALUE...]] (kernel compile-time knobs)\n";
/// Bytes of weights one graph pass streams at least (2 x the H200's L2).
constexpr long long kRotateBytes = 100ll << 20;

int usage(const std::string &message) {
  std::fprintf(stderr, "dsc-kernel-bench: error: %s\n%s", message.c_str(), kUsage);
  return 2;
}
int failure(const std::string &message) {
  std::fprintf(stderr, "dsc-kernel-bench: error: %s\n", message.c_str());
  return 1;
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

/// --define's knobs: NAME=VALUE pairs, comma-separated; NAME upper-case
/// letters, digits and '_', VALUE letters, digits, '_' or '-'.
std::vector<std::pair<std::string, std::string>> gDefines;
std::string parseDefines(const std::string &text) {
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    auto all = [](const std::string &v, auto ok) {
      return !v.empty() && std::all_of(v.begin(), v.end(), ok);
    };
    const std::string name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos ||
        !all(name, [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }) ||
        !all(value, [](char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '-'; }))
      return "--define takes NAME=VALUE[,NAME=VALUE...] (NAME upper-case), got '" + item + "'";
    gDefines.emplace_back(name, value);
    at = end + 1;
  }
  return "";
}

/// The knobs as given (JSON-safe: parseDefines admits no quote).
std::string definesText() {
  std::string out;
  for (const auto &[name, value] : gDefines)
    out += (out.empty() ? "" : ",") + name + "=" + value;
  return out;
}

/// Opens the GPU for launches and measures its copy bandwidth (every run's
/// limit); returns why not, or "".
std::string openDevice(std::unique_ptr<KernelHarness> &h, dsc::runtime::DeviceCopyBandwidth &copy) {
  std::string why;
  h = KernelHarness::open(why);
  if (!h)
    return why;
  h->setDefines(gDefines);
  auto bandwidth = dsc::runtime::measureDeviceCopyBandwidth();
  if (!bandwidth)
    return bandwidth.status().message();
  copy = *bandwidth;
  return "";
}

/// `stream`: one stream_probe.cu launch over a [rows, rowBytes] matrix.
template <class Count> int streamProbe(const dsc::tools::CommandLine &cl, Count &count) {
  long long rows = 0, rowBytes = 0, pattern = 0, depth = 0, replays = 0;
  for (const std::string &e :
       {count("--n", -1, 16, 1 << 22, rows), count("--k", -1, 512, 1 << 20, rowBytes),
        count("--pattern", -1, 0, 3, pattern), count("--depth", 8, 1, 16, depth),
        count("--replays", 20, 1, 10000, replays)})
    if (!e.empty())
      return usage(e);
  const long long rpw = pattern == 1 ? 8 : pattern == 2 ? 16 : 1;
  if (rowBytes % 512 != 0 || rows % rpw != 0)
    return usage("stream needs --k a multiple of 512 and --n of the pattern's rows per warp (" +
                 std::to_string(rpw) + ")");
  if (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16)
    return usage("--depth takes 1, 2, 4, 8 or 16");
  std::unique_ptr<KernelHarness> h;
  dsc::runtime::DeviceCopyBandwidth copy;
  if (std::string why = openDevice(h, copy); !why.empty())
    return failure(why);
  const dsc::runtime::DeviceCopyBandwidth *bandwidth = &copy;
  const long long bytes = rows * rowBytes, warps = rows / rpw;
  CUdeviceptr w = h->upload(nullptr, size_t(bytes)), out = h->upload(nullptr, size_t(warps) * 4);
  std::deque<long long> ints;
  std::deque<CUdeviceptr> ptrs;
  int pat = int(pattern);
  const std::string entry = "dsc_stream_probe_d" + std::to_string(depth);
  const unsigned grid = cu::gemvGrid(warps).x;
  std::vector<Launch> pass;
  for (int c = 0; c < 4; ++c)
    pass.push_back(Launch{"stream_probe", entry, grid, 1, cu::gemvBlock().x, 0,
                          kernelArgs(ptrs.emplace_back(w), ints.emplace_back(rows),
                                     ints.emplace_back(rowBytes), pat, ptrs.emplace_back(out))});
  if (!h->status())
    return failure(h->status().message());
  auto seconds = h->timeSequence(pass, int(replays));
  if (!seconds)
    return failure(seconds.status().message());
  const double perCall = *seconds / double(pass.size()), gbps = double(bytes) / perCall / 1e9;
  std::printf("{\"kernel\": \"stream\", \"entry\": \"%s\", \"pattern\": %lld, \"depth\": %lld, "
              "\"rows\": %lld, \"row_bytes\": %lld, \"grid\": %u, \"us_per_call\": %.3f, "
              "\"gbps\": %.1f, \"copy_gbps\": %.1f, \"fraction_of_copy\": %.3f}\n",
              entry.c_str(), pattern, depth, rows, rowBytes, grid, perCall * 1e6, gbps,
              bandwidth->gbps, gbps / bandwidth->gbps);
  return 0;
}

/// `chain`: dependent launches of the decode's smallest real kernel (a norm
/// row: load, block reduction, store), ping-ponging between two rows.
template <class Count> int chainProbe(const dsc::tools::CommandLine &cl, Count &count) {
  long long launches = 0, width = 0, replays = 0;
  for (const std::string &e : {count("--n", -1, 2, 4096, launches),
                               count("--k", -1, 32, 1 << 16, width),
                               count("--replays", 20, 1, 10000, replays)})
    if (!e.empty())
      return usage(e);
  const std::string pdl = cl.has("--pdl") ? cl.options.at("--pdl") : "on";
  if (pdl != "on" && pdl != "off")
    return usage("--pdl takes on or off, got '" + pdl + "'");
  std::unique_ptr<KernelHarness> h;
  dsc::runtime::DeviceCopyBandwidth copy;
  if (std::string why = openDevice(h, copy); !why.empty())
    return failure(why);
  std::mt19937 rng(1);
  CUdeviceptr rows[2] = {h->upload(randomBf16(size_t(width), rng)),
                         h->upload(randomBf16(size_t(width), rng))};
  CUdeviceptr w = h->upload(randomBf16(size_t(width), rng));
  dsc::abi::RmsNormParams params{}; // outlives the sequence: timed below
  params.eps = 1e-6;
  std::deque<long long> ints;
  std::deque<CUdeviceptr> ptrs;
  std::vector<Launch> pass;
  for (long long i = 0; i < launches; ++i) {
    pass.push_back(Launch{"rms_norm", "dsc_rms_norm_fast", 1, 1,
                          unsigned(dsc::abi::kNormThreads), 0,
                          kernelArgs(params, ptrs.emplace_back(rows[i % 2]), ints.emplace_back(1),
                                     ints.emplace_back(width), ptrs.emplace_back(w),
                                     ptrs.emplace_back(rows[(i + 1) % 2]))});
    pass.back().dependent = pdl == "on";
  }
  if (!h->status())
    return failure(h->status().message());
  auto seconds = h->timeSequence(pass, int(replays));
  if (!seconds)
    return failure(seconds.status().message());
  std::printf("{\"kernel\": \"chain\", \"entry\": \"dsc_rms_norm_fast\", \"launches\": %lld, "
              "\"width\": %lld, \"pdl\": %s, \"us_per_launch\": %.3f}\n",
              launches, width, pdl == "on" ? "true" : "false",
              *seconds / double(launches) * 1e6);
  return 0;
}

int run(int argc, char **argv) {
  using namespace dsc::tools;
  const CommandLine cl = parseCommandLine(
      argc, argv,
      {"--m", "--n", "--k", "--splits", "--gemv", "--graph-calls", "--replays", "--topk",
       "--pattern", "--depth", "--pdl", "--define"});
  if (!cl.error.empty())
    return usage(cl.error);
  if (cl.has("--define"))
    if (std::string e = parseDefines(cl.options.at("--define")); !e.empty())
      return usage(e);
  const std::string kernel = cl.positional;
  const bool moe = kernel == "moe-up" || kernel == "moe-down";
  if (kernel != "linear-fp8" && kernel != "linear-fp4" && kernel != "stream" &&
      kernel != "chain" && !moe)
    return usage(kernel.empty()
                     ? "which kernel? (linear-fp8, linear-fp4, moe-up, moe-down, stream, chain)"
                     : "unknown kernel '" + kernel +
                           "' (linear-fp8, linear-fp4, moe-up, moe-down, stream, chain)");
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
  if (kernel == "stream")
    return streamProbe(cl, count);
  if (kernel == "chain")
    return chainProbe(cl, count);
  long long M = 0, N = 0, K = 0, splits = 0, calls = 0, replays = 0, topk = 0;
  for (const std::string &e :
       {count("--m", -1, 1, 64, M), count("--n", -1, 1, 1 << 20, N),
        count("--k", -1, 32, 1 << 16, K), count("--splits", 0, 0, 64, splits),
        count("--graph-calls", 0, 0, 1000, calls), count("--replays", 20, 1, 10000, replays),
        count("--topk", 6, 1, 64, topk)})
    if (!e.empty())
      return usage(e);
  if (K % 32 != 0)
    return usage("--k must be a multiple of 32 (the scale blocks), got " + std::to_string(K));
  if (moe && N % 32 != 0)
    return usage("--n (the experts' inter width) must be a multiple of 32, got " +
                 std::to_string(N));
  const std::string gemv = cl.has("--gemv") ? cl.options.at("--gemv") : "lanes";
  using dsc::runtime::GemvKernels;
  if (gemv != "lanes" && gemv != "slots" && gemv != "tiles" && gemv != "wg" && gemv != "rows")
    return usage("--gemv takes lanes, slots, tiles, wg or rows, got '" + gemv + "'");
  const GemvKernels family = gemv == "lanes"   ? GemvKernels::Lanes
                             : gemv == "slots" ? GemvKernels::Slots
                             : gemv == "wg"    ? GemvKernels::Warpgroups
                             : gemv == "rows"  ? GemvKernels::Rows
                                               : GemvKernels::Tiles;
  if (family == GemvKernels::Warpgroups && K % 128 != 0)
    return usage("--gemv wg needs --k a multiple of 128, got " + std::to_string(K));
  const std::string suffix = family == GemvKernels::Tiles ? "_fast" : "_" + gemv;
  const bool up = kernel == "moe-up";

  std::unique_ptr<KernelHarness> h;
  dsc::runtime::DeviceCopyBandwidth copy;
  if (std::string why = openDevice(h, copy); !why.empty())
    return failure(why);
  const dsc::runtime::DeviceCopyBandwidth *bandwidth = &copy;
  std::mt19937 rng(1);
  // Every value a launch's argument array points at lives here (never moves).
  std::deque<long long> ints;
  std::deque<CUdeviceptr> ptrs;
  auto I64 = [&](long long v) -> long long & { return ints.emplace_back(v); };
  auto P = [&](CUdeviceptr v) -> CUdeviceptr & { return ptrs.emplace_back(v); };
  dsc::abi::MoeExpertsParams moeParams{};
  moeParams.swiglu_limit = 10.0;
  std::string entry;
  long long bytesPerCall = 0, copies = 1;
  unsigned grid = 0, moeBlock = 0;
  std::vector<Launch> steps;
  if (!moe) {
    const bool fp4 = kernel == "linear-fp4";
    if (splits == 0) // the runtime's choice
      splits = cu::gemvFamilySplits(family, N, K);
    grid = cu::gemvItemGrid(family, cu::ceilDiv(N, cu::gemvItemRows(family)) *
                                        cu::ceilDiv(M, cu::gemvItemActRows(family)) * splits)
               .x;
    const bool shared = cu::gemvQuantInBlocks(family, grid, M, K, splits);
    const long long weightBytes = fp4 ? N * K / 2 : N * K;
    const long long scaleBytes = (fp4 ? N : (N + 31) / 32) * (K / 32);
    bytesPerCall = weightBytes + scaleBytes + (splits > 1 ? 2 * splits * M * N * 4 : 0);
    copies = std::max(1LL, std::min(64LL, kRotateBytes / (weightBytes + scaleBytes) + 1));
    CUdeviceptr x = h->upload(randomBf16(size_t(M * K), rng));
    CUdeviceptr y = h->upload(nullptr, size_t(M * N) * 2);
    CUdeviceptr partial = h->upload(nullptr, size_t(splits * M * N) * 4);
    CUdeviceptr codes = h->upload(nullptr, size_t(M * K)),
                scales = h->upload(nullptr, size_t(M * (K / 32)) * 4);
    entry = std::string("dsc_linear_") + (fp4 ? "fp4" : "fp8") + suffix;
    for (long long c = 0; c < copies; ++c) {
      CUdeviceptr w = h->upload(randomBytes(size_t(weightBytes), fp4 ? Fill::Fp4 : Fill::Fp8, rng));
      CUdeviceptr s = h->upload(randomBytes(size_t(scaleBytes), Fill::Scale, rng));
      if (!shared)
        steps.push_back(Launch{"linear", "dsc_linear_act_quant_fast", cu::gemvGrid(M * (K / 32)).x,
                               1, cu::gemvBlock().x, 0,
                               kernelArgs(P(x), I64(M), I64(K), P(codes), P(scales))});
      steps.push_back(
          Launch{"linear", entry, grid, 1, cu::gemvFamilyBlock(family).x,
                 cu::gemvLaunchSmem(family, shared, M, K, splits),
                 kernelArgs(P(shared ? x : 0), P(shared ? 0 : codes), P(shared ? 0 : scales),
                            I64(M), I64(K), P(w), P(s), I64(N), P(y), I64(splits), P(partial))});
      if (splits > 1)
        steps.push_back(Launch{"linear", "dsc_linear_splitk_reduce_fast", cu::gridFor(M * N).x, 1,
                               cu::block1().x, 0,
                               kernelArgs(P(partial), I64(splits), I64(M * N), P(y))});
    }
  } else {
    const long long T = M, I = N, D = K, k = topk, E = 2 * topk, slots = T * (k + 1);
    std::vector<int> ids(size_t(T * k));
    for (long long t = 0; t < T; ++t)
      for (long long j = 0; j < k; ++j)
        ids[size_t(t * k + j)] = int((t + 2 * j) % E); // distinct within a token
    // up: w1, w3 [E, I, D/2] + [E, I, D/32], shared s1, s3 [I, D] + [ceil(I/32), D/32];
    // down: w2 [E, D, I/2] + [E, D, I/32], shared s2 [D, I] + [ceil(D/32), I/32].
    const long long rowsOut = up ? I : D, width = up ? D : I, rows = up ? T : slots;
    const long long routed = E * rowsOut * (width / 2), routedScales = E * rowsOut * (width / 32);
    const long long sharedW = rowsOut * width, sharedScales = ((rowsOut + 31) / 32) * (width / 32);
    const long long mats = up ? 2 : 1, chosen = std::min(E, T * k);
    bytesPerCall = mats * (chosen * (routed + routedScales) / E + sharedW + sharedScales);
    copies = std::max(1LL, std::min(64LL, kRotateBytes / bytesPerCall + 1));
    const cu::MoeStepShape shape = cu::moeStepShape(family, up, T, k, rowsOut);
    grid = shape.grid.x;
    moeBlock = shape.block.x;
    // The runtime's activation path (its test uses the tiles' grid for both).
    const bool shared = cu::moeQuantInBlocks(family, slots, rowsOut, rows, width);
    CUdeviceptr ip = h->upload(ids),
                wp = h->upload(std::vector<float>(size_t(T * k), 1.0f / float(k)));
    CUdeviceptr x = h->upload(randomBf16(size_t(rows * width), rng));
    CUdeviceptr out = h->upload(nullptr, size_t(slots * (up ? I * 2 : D * 4)));
    CUdeviceptr codes = h->upload(nullptr, size_t(rows * width)),
                scales = h->upload(nullptr, size_t(rows * (width / 32)) * 4);
    entry = std::string("dsc_moe_experts_") + (up ? "up" : "down") + suffix;
    for (long long c = 0; c < copies; ++c) {
      CUdeviceptr w[2] = {0, 0}, ws[2] = {0, 0}, s[2] = {0, 0}, ss[2] = {0, 0};
      for (long long m = 0; m < mats; ++m) {
        w[m] = h->upload(randomBytes(size_t(routed), Fill::Fp4, rng));
        ws[m] = h->upload(randomBytes(size_t(routedScales), Fill::Scale, rng));
        s[m] = h->upload(randomBytes(size_t(sharedW), Fill::Fp8, rng));
        ss[m] = h->upload(randomBytes(size_t(sharedScales), Fill::Scale, rng));
      }
      if (!shared)
        steps.push_back(Launch{"moe_experts", "dsc_moe_experts_act_quant_fast",
                               cu::gemvGrid(rows * (width / 32)).x, 1, cu::gemvBlock().x, 0,
                               kernelArgs(P(x), I64(rows), I64(width), P(codes), P(scales))});
      const size_t smem = cu::moeLaunchSmem(family, shared, rows, width, up ? 2 : 1);
      CUdeviceptr &xq = P(shared ? x : 0), &cq = P(shared ? 0 : codes),
                  &sq = P(shared ? 0 : scales);
      if (up)
        steps.push_back(Launch{"moe_experts", entry, grid, 1, moeBlock, smem,
                               kernelArgs(moeParams, xq, cq, sq, I64(T), I64(D), I64(I), P(w[0]),
                                          P(ws[0]), P(w[1]), P(ws[1]), P(s[0]), P(ss[0]), P(s[1]),
                                          P(ss[1]), P(ip), P(wp), I64(k), I64(E), P(out))});
      else
        steps.push_back(Launch{"moe_experts", entry, grid, 1, moeBlock, smem,
                               kernelArgs(xq, cq, sq, I64(T), I64(I), I64(D), P(w[0]), P(ws[0]),
                                          P(s[0]), P(ss[0]), P(ip), I64(k), I64(E), P(out))});
    }
  }
  if (!h->status())
    return failure(h->status().message());
  // One graph pass: every copy once, repeated so that a pass holds at least
  // --graph-calls calls (default: 20 or the copies, whichever is more).
  const long long passes = std::max(1LL, ((calls ? calls : 20) + copies - 1) / copies);
  std::vector<Launch> pass;
  for (long long r = 0; r < passes; ++r)
    pass.insert(pass.end(), steps.begin(), steps.end());
  auto seconds = h->timeSequence(pass, int(replays));
  if (!seconds)
    return failure(seconds.status().message());
  const double perCall = *seconds / double(passes * copies);
  const double gbps = double(bytesPerCall) / perCall / 1e9;
  std::printf(
      "{\"kernel\": \"%s\", \"entry\": \"%s\", \"device\": \"%s\", \"m\": %lld, \"n\": %lld, "
      "\"k\": %lld, \"splits\": %lld, \"grid\": %u, \"launches_per_call\": %zu, "
      "\"weight_copies\": %lld, \"us_per_call\": %.3f, \"bytes\": %lld, \"gbps\": %.1f, "
      "\"copy_gbps\": %.1f, \"fraction_of_copy\": %.3f, \"defines\": \"%s\"}\n",
      kernel.c_str(), entry.c_str(), bandwidth->device.c_str(), M, N, K, moe ? 1LL : splits, grid,
      steps.size() / size_t(copies), copies, perCall * 1e6, bytesPerCall, gbps, bandwidth->gbps,
      gbps / bandwidth->gbps, definesText().c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return dsc::tools::guardedMain("dsc-kernel-bench", [&] { return run(argc, argv); });
}
