//===- KernelCompiler.cpp - CUDA kernels through NVRTC, with a cache ------===//
//
// Flow of compileKernel(name): look up the embedded source
// codegen/kernels/<name>.cu, build the option list, hash everything that
// changes the binary into the cache key, return a verified cache entry if
// there is one, else run NVRTC with every embedded header passed in memory
// and publish the result. See KernelCompiler.h and docs/codegen.md.
//===----------------------------------------------------------------------===//
#include "codegen/KernelCompiler.h"

#include "codegen/EmbeddedSources.h"
#include "codegen/KernelCache.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include <unistd.h>

#if DSC_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace dsc::codegen {

using runtime::Expected;
using runtime::Status;

namespace {

constexpr std::string_view kKernelPrefix = "codegen/kernels/";
constexpr std::string_view kKernelSuffix = ".cu";

/// Bumped when the key layout or the entry format changes.
constexpr std::string_view kCacheFormat = "dsc-kernel-cache-v2";

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view fileData(const embedded::EmbeddedFile &f) { return {f.data, f.size}; }

/// The embedded kernel template named `name`, or nullptr.
const embedded::EmbeddedFile *findKernel(const std::string &name) {
  const std::string wanted = std::string(kKernelPrefix) + name + std::string(kKernelSuffix);
  for (const auto *f = embedded::files(); f->name; ++f)
    if (wanted == f->name)
      return f;
  return nullptr;
}

/// Every embedded file NVRTC may #include: all but the .cu templates.
[[maybe_unused]] std::vector<const embedded::EmbeddedFile *> headers() {
  std::vector<const embedded::EmbeddedFile *> out;
  for (const auto *f = embedded::files(); f->name; ++f)
    if (!endsWith(f->name, kKernelSuffix))
      out.push_back(f);
  return out;
}

[[maybe_unused]] std::vector<std::string> buildOptions(const KernelCompileOptions &options) {
  std::vector<std::string> opts = {"--gpu-architecture=" + options.arch, "-default-device",
                                   "-std=c++17", "-lineinfo",
                                   // Resource usage (registers, spills) in the log.
                                   "--ptxas-options=-v"};
  for (const auto &[name, value] : options.defines)
    opts.push_back(value.empty() ? "-D" + name : "-D" + name + "=" + value);
  return opts;
}

#if DSC_HAVE_NVRTC

std::string nvrtcError(nvrtcResult r) { return nvrtcGetErrorString(r); }

/// Runs NVRTC. `name` is used for the program name and messages.
Expected<cache::Entry> runNvrtc(const std::string &name, const std::string &source,
                                const std::vector<std::string> &opts) {
  const auto hdrs = headers();
  std::vector<const char *> hdrData, hdrNames;
  for (const auto *h : hdrs) {
    hdrData.push_back(h->data);
    hdrNames.push_back(h->name);
  }
  nvrtcProgram prog = nullptr;
  const std::string progName = std::string(kKernelPrefix) + name + std::string(kKernelSuffix);
  nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), progName.c_str(),
                                     static_cast<int>(hdrs.size()), hdrData.data(),
                                     hdrNames.data());
  if (r != NVRTC_SUCCESS)
    return runtime::internalError("kernel '" + name + "': nvrtcCreateProgram: " + nvrtcError(r));
  struct Destroy {
    nvrtcProgram *p;
    ~Destroy() { nvrtcDestroyProgram(p); }
  } destroy{&prog};

  std::vector<const char *> optPtrs;
  for (const auto &o : opts)
    optPtrs.push_back(o.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(prog, static_cast<int>(optPtrs.size()), optPtrs.data());

  cache::Entry entry;
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    entry.log.resize(logSize);
    if (nvrtcGetProgramLog(prog, entry.log.data()) != NVRTC_SUCCESS)
      entry.log.clear();
    while (!entry.log.empty() && (entry.log.back() == '\0' || entry.log.back() == '\n'))
      entry.log.pop_back();
  }
  if (compiled != NVRTC_SUCCESS) {
    std::string options;
    for (const auto &o : opts)
      options += " " + o;
    return runtime::invalidArgument("kernel '" + name + "': NVRTC compilation failed (" +
                                    nvrtcError(compiled) + ", options:" + options + "):\n" +
                                    entry.log);
  }

  size_t ptxSize = 0;
  if ((r = nvrtcGetPTXSize(prog, &ptxSize)) != NVRTC_SUCCESS)
    return runtime::internalError("kernel '" + name + "': nvrtcGetPTXSize: " + nvrtcError(r));
  entry.ptx.resize(ptxSize);
  if (ptxSize && (r = nvrtcGetPTX(prog, entry.ptx.data())) != NVRTC_SUCCESS)
    return runtime::internalError("kernel '" + name + "': nvrtcGetPTX: " + nvrtcError(r));
  while (!entry.ptx.empty() && entry.ptx.back() == '\0')
    entry.ptx.pop_back();

  // compute_XX targets give PTX only: the CUBIN size is 0 (toolchain.md §2).
  size_t cubinSize = 0;
  if ((r = nvrtcGetCUBINSize(prog, &cubinSize)) != NVRTC_SUCCESS)
    return runtime::internalError("kernel '" + name + "': nvrtcGetCUBINSize: " + nvrtcError(r));
  entry.cubin.resize(cubinSize);
  if (cubinSize &&
      (r = nvrtcGetCUBIN(prog, reinterpret_cast<char *>(entry.cubin.data()))) != NVRTC_SUCCESS)
    return runtime::internalError("kernel '" + name + "': nvrtcGetCUBIN: " + nvrtcError(r));
  return entry;
}

#endif // DSC_HAVE_NVRTC

Expected<CompiledKernel> compile(const std::string &name, const std::string &source,
                                 const KernelCompileOptions &options) {
#if !DSC_HAVE_NVRTC
  (void)source;
  (void)options;
  return runtime::unavailable("kernel '" + name + "': NVRTC not available in this build");
#else
  if (options.arch.empty())
    return runtime::invalidArgument("kernel '" + name + "': empty GPU architecture");
  for (const auto &[def, value] : options.defines)
    if (def.empty() || def.find_first_of(" \t\n=") != std::string::npos)
      return runtime::invalidArgument("kernel '" + name + "': bad define name '" + def + "'");
  const std::vector<std::string> opts = buildOptions(options);

  // Key: everything that changes the binary (DeepGEMM's habit). The kernel
  // name is included because it is the NVRTC program name (in -lineinfo).
  cache::KeyBuilder key;
  key.add(kCacheFormat).add(nvrtcVersion()).add(options.arch).add(name).add(source);
  for (const auto *h : headers())
    key.add(h->name).add(fileData(*h));
  key.add(std::to_string(opts.size()));
  for (const auto &o : opts)
    key.add(o);
  CompiledKernel out;
  out.cacheKey = key.digest();

  const std::string cacheDir =
      options.useCache ? (options.cacheDir.empty() ? cache::defaultCacheDir() : options.cacheDir)
                       : std::string();
  if (!cacheDir.empty()) {
    if (auto hit = cache::load(cacheDir, out.cacheKey)) {
      out.cubin = std::move(hit->cubin);
      out.ptx = std::move(hit->ptx);
      out.log = std::move(hit->log);
      out.entries = parsePtxasResources(out.log);
      out.fromCache = true;
      return out;
    }
  }

  auto entry = runNvrtc(name, source, opts);
  if (!entry)
    return entry.status();
  if (!cacheDir.empty())
    (void)cache::publish(cacheDir, out.cacheKey, *entry); // unusable cache: not an error
  out.cubin = std::move(entry->cubin);
  out.ptx = std::move(entry->ptx);
  out.log = std::move(entry->log);
  out.entries = parsePtxasResources(out.log);
  return out;
#endif
}

} // namespace

namespace {

/// The integer just before `suffix` in `line` (e.g. "Used 32 registers"), or -1.
int numberBefore(std::string_view line, std::string_view suffix) {
  size_t at = line.find(suffix);
  if (at == std::string_view::npos)
    return -1;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ')
    --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9')
    --begin;
  if (begin == end)
    return -1;
  return std::atoi(std::string(line.substr(begin, end - begin)).c_str());
}

/// The text between the first pair of single quotes after `marker`, or "".
std::string quotedAfter(std::string_view line, std::string_view marker) {
  size_t at = line.find(marker);
  if (at == std::string_view::npos)
    return "";
  size_t open = line.find('\'', at + marker.size());
  size_t close = open == std::string_view::npos ? open : line.find('\'', open + 1);
  if (close == std::string_view::npos)
    return "";
  return std::string(line.substr(open + 1, close - open - 1));
}

} // namespace

std::vector<KernelEntryResources> parsePtxasResources(const std::string &log) {
  // ptxas -v prints, per function (NVRTC 13):
  //   ptxas info    : Compiling entry function 'k' for 'sm_90a'
  //   ptxas info    : Function properties for k
  //   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
  // Device (non-entry) functions get "Function properties for f" only.
  std::vector<KernelEntryResources> out;
  KernelEntryResources *current = nullptr;
  std::istringstream in(log);
  std::string lineStr;
  while (std::getline(in, lineStr)) {
    std::string_view line = lineStr;
    // ptxas lines; older ptxas indents the stack-frame line instead.
    if (line.substr(0, 5) != "ptxas" && (line.empty() || (line[0] != ' ' && line[0] != '\t')))
      continue;
    if (std::string name = quotedAfter(line, "Compiling entry function "); !name.empty()) {
      out.push_back({});
      out.back().entry = name;
      current = &out.back();
      continue;
    }
    if (size_t at = line.find("Function properties for "); at != std::string_view::npos) {
      std::string_view fn = line.substr(at + std::string_view("Function properties for ").size());
      while (!fn.empty() && (fn.back() == ' ' || fn.back() == '\r' || fn.back() == ':'))
        fn.remove_suffix(1);
      current = nullptr;
      for (auto &e : out)
        if (e.entry == fn)
          current = &e;
      continue;
    }
    if (!current)
      continue;
    if (int n = numberBefore(line, " registers"); n >= 0)
      current->registers = n;
    if (int n = numberBefore(line, " bytes stack frame"); n >= 0)
      current->stackFrameBytes = n;
    if (int n = numberBefore(line, " bytes spill stores"); n >= 0)
      current->spillStoreBytes = n;
    if (int n = numberBefore(line, " bytes spill loads"); n >= 0)
      current->spillLoadBytes = n;
    if (int n = numberBefore(line, " bytes smem"); n >= 0)
      current->sharedBytes = n;
  }
  return out;
}

bool hasKernelSource(const std::string &name) { return findKernel(name) != nullptr; }

std::vector<std::string> kernelSourceNames() {
  std::vector<std::string> names;
  for (const auto *f = embedded::files(); f->name; ++f) {
    std::string_view n = f->name;
    if (n.substr(0, kKernelPrefix.size()) == kKernelPrefix && endsWith(n, kKernelSuffix))
      names.emplace_back(n.substr(kKernelPrefix.size(),
                                  n.size() - kKernelPrefix.size() - kKernelSuffix.size()));
  }
  return names;
}

Expected<CompiledKernel> compileKernel(const std::string &name,
                                       const KernelCompileOptions &options) {
  const auto *f = findKernel(name);
  if (!f)
    return runtime::notFound("kernel '" + name + "': no template codegen/kernels/" + name +
                             ".cu in this build");
  return compile(name, std::string(fileData(*f)), options);
}

Expected<CompiledKernel> compileSource(const std::string &name, const std::string &source,
                                       const KernelCompileOptions &options) {
  return compile(name, source, options);
}

std::string nvrtcVersion() {
#if DSC_HAVE_NVRTC
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "";
  return std::to_string(major) + "." + std::to_string(minor);
#else
  return "";
#endif
}

std::string defaultKernelCacheDir() { return cache::defaultCacheDir(); }

CompileProgress stderrCompileProgress(bool always) {
  if (!always && !::isatty(STDERR_FILENO))
    return {};
  return [](size_t done, size_t total, const std::string &) {
    std::fprintf(stderr, "\rcompiling kernels: %zu/%zu", done, total);
    if (done == total)
      std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

Expected<std::vector<CompiledKernel>> compileKernels(const std::vector<std::string> &names,
                                                     const KernelCompileOptions &options,
                                                     const CompileProgress &progress) {
  std::vector<CompiledKernel> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    auto k = compileKernel(names[i], options);
    if (!k)
      return k.status();
    out.push_back(std::move(*k));
    if (progress)
      progress(i + 1, names.size(), names[i]);
  }
  return out;
}

} // namespace dsc::codegen
