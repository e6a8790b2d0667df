//===- KernelCompilerTest.cpp - NVRTC kernel compilation and its cache ----===//
//
// Compiles codegen/kernels/selftest.cu (embedded) for sm_90a and checks the
// outputs, the cache (hits, keys, corrupted entries, concurrent publishers)
// and the error path. Needs no GPU; skipped when NVRTC is not in the build.
//===----------------------------------------------------------------------===//
#include "codegen/KernelCache.h"
#include "codegen/KernelCompiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace dsc::codegen;

namespace {

class KernelCompilerTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (nvrtcVersion().empty())
      GTEST_SKIP() << "NVRTC not available in this build";
    std::random_device rd;
    dir_ = fs::temp_directory_path() /
           ("dsc-codegen-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(dir_);
    opts_.cacheDir = dir_.string();
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty())
      fs::remove_all(dir_, ec);
  }
  fs::path dir_;
  KernelCompileOptions opts_;
};

bool isElf(const std::vector<uint8_t> &b) {
  return b.size() > 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

} // namespace

// The cache key's digest against FIPS 180-2's test vectors (the empty string
// hashed a null view: UBSan found a memcpy from null in the padding).
TEST(KernelCacheDigest, Sha256OfKnownVectors) {
  using dsc::codegen::cache::sha256Hex;
  EXPECT_EQ(sha256Hex(std::string_view()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(KernelSources, SelftestIsEmbedded) {
  const auto names = kernelSourceNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "selftest"), names.end());
  EXPECT_TRUE(hasKernelSource("selftest"));
  EXPECT_FALSE(hasKernelSource("common")); // .cuh headers are not kernels
  EXPECT_FALSE(hasKernelSource("no_such_kernel"));
}

TEST(KernelSources, UnknownKernelIsNotFound) {
  auto k = compileKernel("no_such_kernel");
  ASSERT_FALSE(k);
  EXPECT_NE(k.status().message().find("no_such_kernel"), std::string::npos);
}

TEST_F(KernelCompilerTest, SelftestCompilesForSm90a) {
  auto k = compileKernel("selftest", opts_);
  ASSERT_TRUE(k) << k.status().message();
  EXPECT_TRUE(isElf(k->cubin));
  EXPECT_NE(k->ptx.find(".entry dsc_selftest"), std::string::npos);
  EXPECT_NE(k->ptx.find("sm_90a"), std::string::npos);
  EXPECT_FALSE(k->fromCache);
  EXPECT_EQ(k->cacheKey.size(), 64u);
  EXPECT_TRUE(fs::exists(dir_ / k->cacheKey / "kernel.cubin"));
  EXPECT_TRUE(fs::exists(dir_ / k->cacheKey / "kernel.ptx"));
}

TEST_F(KernelCompilerTest, SecondCompileIsCacheHit) {
  auto a = compileKernel("selftest", opts_);
  ASSERT_TRUE(a) << a.status().message();
  auto b = compileKernel("selftest", opts_);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_FALSE(a->fromCache);
  EXPECT_TRUE(b->fromCache);
  EXPECT_EQ(a->cacheKey, b->cacheKey);
  EXPECT_EQ(a->cubin, b->cubin);
  EXPECT_EQ(a->ptx, b->ptx);
  EXPECT_EQ(a->log, b->log);
  // No temporary directories are left behind.
  for (const auto &e : fs::directory_iterator(dir_))
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << e.path();
}

TEST_F(KernelCompilerTest, DefinesAndArchChangeTheKey) {
  auto a = compileKernel("selftest", opts_);
  KernelCompileOptions o = opts_;
  o.defines = {{"SELFTEST_SCALE", "3.0f"}};
  auto b = compileKernel("selftest", o);
  o.defines = {{"SELFTEST_SCALE", "4.0f"}};
  auto c = compileKernel("selftest", o);
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(a->cacheKey, b->cacheKey);
  EXPECT_NE(b->cacheKey, c->cacheKey);
  EXPECT_FALSE(b->fromCache);
  EXPECT_NE(a->ptx, b->ptx); // the constant is in the code

  KernelCompileOptions p = opts_;
  p.arch = "compute_90a"; // PTX only
  auto d = compileKernel("selftest", p);
  ASSERT_TRUE(d) << d.status().message();
  EXPECT_NE(d->cacheKey, a->cacheKey);
  EXPECT_TRUE(d->cubin.empty());
  EXPECT_NE(d->ptx.find(".entry dsc_selftest"), std::string::npos);
}

TEST_F(KernelCompilerTest, CorruptedEntryIsRecompiled) {
  auto a = compileKernel("selftest", opts_);
  ASSERT_TRUE(a) << a.status().message();
  const fs::path entry = dir_ / a->cacheKey;

  // Truncated cubin: detected by the manifest, recompiled, entry repaired.
  fs::resize_file(entry / "kernel.cubin", 16);
  auto b = compileKernel("selftest", opts_);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_FALSE(b->fromCache);
  EXPECT_EQ(a->cubin, b->cubin);
  auto c = compileKernel("selftest", opts_);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->fromCache);

  // Missing file (a partial entry).
  fs::remove(entry / "kernel.ptx");
  auto d = compileKernel("selftest", opts_);
  ASSERT_TRUE(d) << d.status().message();
  EXPECT_FALSE(d->fromCache);
  EXPECT_EQ(a->ptx, d->ptx);
  EXPECT_TRUE(fs::exists(entry / "kernel.ptx"));
}

TEST_F(KernelCompilerTest, CacheDisabledAndUnusableCacheStillCompile) {
  KernelCompileOptions o = opts_;
  o.useCache = false;
  auto a = compileKernel("selftest", o);
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_FALSE(a->fromCache);
  EXPECT_TRUE(fs::is_empty(dir_));

  // A regular file where the cache directory should be.
  std::ofstream(dir_ / "file") << "x";
  o = opts_;
  o.cacheDir = (dir_ / "file" / "cache").string();
  auto b = compileKernel("selftest", o);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ(a->cubin, b->cubin);
}

TEST_F(KernelCompilerTest, ConcurrentProcessesShareOneCache) {
  // Two processes compile into the same empty cache; each writes its cubin.
  constexpr int kProcs = 2;
  pid_t pids[kProcs];
  for (int i = 0; i < kProcs; ++i) {
    pids[i] = ::fork();
    ASSERT_GE(pids[i], 0);
    if (pids[i] == 0) {
      auto k = compileKernel("selftest", opts_);
      if (!k)
        ::_exit(2);
      std::ofstream out(dir_ / ("out" + std::to_string(i)), std::ios::binary);
      out.write(reinterpret_cast<const char *>(k->cubin.data()), k->cubin.size());
      out << k->ptx;
      out.close();
      ::_exit(out ? 0 : 3);
    }
  }
  for (pid_t pid : pids) {
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);
  }
  auto read = [](const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string out0 = read(dir_ / "out0");
  EXPECT_FALSE(out0.empty());
  EXPECT_EQ(out0, read(dir_ / "out1"));

  auto k = compileKernel("selftest", opts_);
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->fromCache);
  size_t entries = 0;
  for (const auto &e : fs::directory_iterator(dir_))
    if (e.is_directory()) {
      ++entries;
      EXPECT_EQ(e.path().filename(), k->cacheKey); // no .tmp-* left over
    }
  EXPECT_EQ(entries, 1u);
}

TEST_F(KernelCompilerTest, SyntaxErrorReportsLogAndName) {
  const std::string src = "#include \"codegen/kernels/common.cuh\"\n"
                          "DSC_KERNEL void dsc_broken(float *x) { x[0] = undeclared_thing; }\n";
  auto k = compileSource("broken_kernel", src, opts_);
  ASSERT_FALSE(k);
  const std::string msg = k.status().message();
  EXPECT_NE(msg.find("broken_kernel"), std::string::npos) << msg;
  EXPECT_NE(msg.find("undeclared_thing"), std::string::npos) << msg; // NVRTC's log
  EXPECT_NE(msg.find("error"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_empty(dir_)); // failures are not cached
}

TEST_F(KernelCompilerTest, CompileKernelsReportsProgress) {
  std::vector<std::pair<size_t, size_t>> seen;
  auto ks = compileKernels({"selftest", "selftest"}, opts_,
                           [&](size_t done, size_t total, const std::string &name) {
                             EXPECT_EQ(name, "selftest");
                             seen.emplace_back(done, total);
                           });
  ASSERT_TRUE(ks) << ks.status().message();
  ASSERT_EQ(ks->size(), 2u);
  EXPECT_TRUE((*ks)[1].fromCache);
  EXPECT_EQ(seen, (std::vector<std::pair<size_t, size_t>>{{1, 2}, {2, 2}}));

  auto bad = compileKernels({"selftest", "no_such_kernel"}, opts_);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("no_such_kernel"), std::string::npos);

  ::testing::internal::CaptureStderr();
  auto again = compileKernels({"selftest"}, opts_, stderrCompileProgress(/*always=*/true));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "\rcompiling kernels: 1/1\n");
  ASSERT_TRUE(again);
}
