//===- EngramMultipliersTest.cpp - numpy default_rng reproduction ---------===//
//
// The multipliers and the numpy pieces under them against the released values
// (models README, reference-spec §7.3) and against numpy itself, run at test
// time through DSC_NUMPY_PYTHON.
//===----------------------------------------------------------------------===//
#include "EngramTestUtil.h"

#include "dsc/numerics/EngramLayout.h"
#include "dsc/numerics/EngramNumpyRandom.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <sstream>

using namespace dsc::numerics;
using dsc::test::engram::haveNumpy;
using dsc::test::engram::runPython;

namespace {

std::vector<std::vector<long long>> parseLines(const std::string &out) {
  std::vector<std::vector<long long>> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<long long> row;
    std::string tok;
    while (ls >> tok) // uint64 values keep their bits in the long long
      row.push_back(tok[0] == '-' ? std::stoll(tok) : (long long)std::stoull(tok));
    rows.push_back(row);
  }
  return rows;
}

} // namespace

TEST(EngramMultipliers, ReleasedConfig) {
  EXPECT_EQ(engramMultiplierBound(99092), 46539438283891);
  EXPECT_EQ(engramHashMultipliers(1, 99092, 4),
            (std::vector<int64_t>{76632096046245, 4839876093313, 35959672319349,
                                  73987337458391}));
  EXPECT_EQ(engramHashMultipliers(14, 99092, 4),
            (std::vector<int64_t>{67716810739261, 51510806800915, 30921347202721,
                                  82619226485591}));
}

TEST(EngramMultipliers, BoundEdges) {
  EXPECT_EQ(engramMultiplierBound(1), std::numeric_limits<int64_t>::max() / 2);
  EXPECT_EQ(engramMultiplierBound(int64_t(1) << 62), 1); // (1 // 2) -> max(1, 0)
  EXPECT_EQ(engramMultiplierBound(std::numeric_limits<int64_t>::max()), 1);
  EXPECT_EQ(engramHashMultipliers(3, int64_t(1) << 62, 3),
            (std::vector<int64_t>{1, 1, 1}));
}

TEST(EngramMultipliers, MatchNumpyForRandomLayers) {
  if (!haveNumpy())
    GTEST_SKIP() << "no numpy for " << DSC_NUMPY_PYTHON;
  // 1,000 layer ids, several compressed vocab sizes (3e9 takes numpy's 32-bit
  // Lemire path, 2^62 the rng == 0 path) and n-gram counts.
  const int64_t vocabs[] = {99092, 362, 524, 129280, 7, 1, 3000000000LL,
                            int64_t(1) << 62, 1LL << 40};
  std::mt19937_64 rng(20260521);
  struct Q {
    int64_t layer, vocab, n;
  };
  std::vector<Q> qs;
  for (int i = 0; i < 1000; ++i) {
    int64_t layer = i < 100 ? i : int64_t(rng() % (i % 3 == 0 ? 1000000000000ULL : 100000ULL));
    qs.push_back({layer, vocabs[i % 9], int64_t(1 + i % 6)});
  }
  std::ostringstream qss;
  for (const Q &q : qs)
    qss << "(" << q.layer << "," << q.vocab << "," << q.n << "),";
  std::string script = "import numpy as np\nM=np.iinfo(np.int64).max\nqs=[";
  script += qss.str();
  script += "]\nfor l,v,n in qs:\n"
            "  b=max(1,(M//v)//2)\n"
            "  m=np.random.default_rng(10007*l).integers(0,b,size=n,dtype=np.int64)*2+1\n"
            "  print(' '.join(str(int(x)) for x in m))\n";
  bool ok = false;
  auto rows = parseLines(runPython(script, &ok));
  ASSERT_TRUE(ok);
  ASSERT_EQ(rows.size(), qs.size());
  for (size_t i = 0; i < qs.size(); ++i) {
    std::vector<int64_t> got = engramHashMultipliers(qs[i].layer, qs[i].vocab, qs[i].n);
    std::vector<int64_t> want(rows[i].begin(), rows[i].end());
    ASSERT_EQ(got, want) << "layer " << qs[i].layer << " vocab " << qs[i].vocab
                         << " n " << qs[i].n;
  }
}

TEST(EngramNumpyRandom, SeedSequenceAndPcg64MatchNumpy) {
  if (!haveNumpy())
    GTEST_SKIP() << "no numpy for " << DSC_NUMPY_PYTHON;
  const uint64_t seeds[] = {0, 1, 10007, 140098, 0xFFFFFFFFULL, 0x100000000ULL,
                            0xDEADBEEFCAFEF00DULL, ~0ULL};
  std::ostringstream sss;
  for (uint64_t s : seeds)
    sss << s << ",";
  std::string script = "import numpy as np\nfor s in [";
  script += sss.str();
  script += "]:\n"
            "  ss=np.random.SeedSequence(s)\n"
            "  print(' '.join(str(int(x)) for x in ss.pool))\n"
            "  print(' '.join(str(int(x)) for x in ss.generate_state(9, np.uint32)))\n"
            "  print(' '.join(str(int(x)) for x in ss.generate_state(4, np.uint64)))\n"
            "  print(' '.join(str(int(x)) for x in np.random.PCG64(s).random_raw(16)))\n"
            // Six entropy words: exercises the mixing of words past the pool.
            "big=sum(w<<(32*i) for i,w in enumerate([1,2,3,4,5,0xFFFFFFFF]))\n"
            "print(' '.join(str(int(x)) for x in np.random.SeedSequence(big).generate_state(5,np.uint32)))\n";
  bool ok = false;
  auto rows = parseLines(runPython(script, &ok));
  ASSERT_TRUE(ok);
  ASSERT_EQ(rows.size(), 4 * std::size(seeds) + 1);
  size_t r = 0;
  for (uint64_t s : seeds) {
    numpy_random::SeedSequence ss(s);
    std::vector<uint64_t> pool(ss.pool().begin(), ss.pool().end());
    auto asU = [](const std::vector<long long> &v) {
      return std::vector<uint64_t>(v.begin(), v.end());
    };
    EXPECT_EQ(pool, asU(rows[r++])) << "pool, seed " << s;
    auto st32 = ss.generateState32(9);
    EXPECT_EQ(std::vector<uint64_t>(st32.begin(), st32.end()), asU(rows[r++])) << s;
    EXPECT_EQ(ss.generateState64(4), asU(rows[r++])) << s;
    numpy_random::Pcg64 g(ss);
    std::vector<uint64_t> raw;
    for (int i = 0; i < 16; ++i)
      raw.push_back(g.next64());
    EXPECT_EQ(raw, asU(rows[r++])) << "random_raw, seed " << s;
  }
  numpy_random::SeedSequence big(std::vector<uint32_t>{1, 2, 3, 4, 5, 0xFFFFFFFFu});
  auto st = big.generateState32(5);
  std::vector<uint64_t> want(rows[r].begin(), rows[r].end());
  EXPECT_EQ(std::vector<uint64_t>(st.begin(), st.end()), want);
}

TEST(EngramNumpyRandom, IntegersInt64MatchNumpy) {
  if (!haveNumpy())
    GTEST_SKIP() << "no numpy for " << DSC_NUMPY_PYTHON;
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Q {
    uint64_t seed;
    int64_t low, high;
  };
  // Every branch of numpy's bounded uint64 fill: rng == 0, 32-bit Lemire
  // (with next32 buffering across draws), rng == 2^32-1, 64-bit Lemire with
  // rejections (ranges just above 2^63), the full range is not reachable
  // with endpoint=False.
  const Q qs[] = {{5, 0, 1},           {5, -3, 4},        {6, 0, 1000},
                  {7, 0, int64_t(1) << 32}, {8, 10, (int64_t(1) << 32) + 11},
                  {9, 0, (int64_t(1) << 32) + 1}, {10, kMin, kMax},
                  {11, -1, kMax},      {12, kMin / 2 - 7, kMax / 2 + 9},
                  {13, 0, 46539438283891}, {14, 0, 3},   {15, -(int64_t(1) << 40), 77}};
  std::ostringstream iss;
  for (const Q &q : qs)
    iss << "(" << q.seed << "," << q.low << "," << q.high << "),";
  std::string script = "import numpy as np\nfor s,l,h in [";
  script += iss.str();
  script += "]:\n  print(' '.join(str(int(x)) for x in "
            "np.random.default_rng(s).integers(l,h,size=25,dtype=np.int64)))\n";
  bool ok = false;
  auto rows = parseLines(runPython(script, &ok));
  ASSERT_TRUE(ok);
  ASSERT_EQ(rows.size(), std::size(qs));
  for (size_t i = 0; i < std::size(qs); ++i) {
    auto got = numpy_random::defaultRngIntegersInt64(qs[i].seed, qs[i].low, qs[i].high, 25);
    EXPECT_EQ(got, std::vector<int64_t>(rows[i].begin(), rows[i].end()))
        << "seed " << qs[i].seed << " [" << qs[i].low << ", " << qs[i].high << ")";
  }
}
