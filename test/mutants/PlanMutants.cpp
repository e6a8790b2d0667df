//===- PlanMutants.cpp - dsc-plan-mutants: a plan mutation campaign --------===//
//
// What: issue 15's proof for plans. Takes a plan file and its checkpoint and
// makes mutants of the plan, then does with each what a service would:
// parsePlan (identifier, FlatBuffers verifier, conversion, verifyPlan) and,
// for every mutant the verifier accepts, Engine::create on the CPU backend,
// a prefill of a few tokens and two decode steps, in a child process with a
// time limit and (release builds) an address-space limit. Two mutant kinds:
//   - field edits (schema-aware): the plan's schema (plan.bfbs, flatc
//     --schema -b of runtime/schema/plan.fbs) walks the buffer through every
//     table, struct, vector and union; every scalar present in it is a site
//     (named by its path, e.g. programs[1].launches[7].inputs[0]), and each
//     site takes the edge values of its type (0, 1, -1, v +- 1, 2v, v / 2,
//     the type's min and max, 2^31, 2^32 + 1, ...): the edit is written in
//     place, so every other byte stays valid;
//   - byte flips: one random byte XORed with a random non-zero mask.
// Outcomes per mutant: rejected by parsePlan, by Engine::create, by a run
// (a Status), ran; findings: a crash (a signal: SIGSEGV, SIGABRT from a
// sanitizer, ...), a hang (the time limit), an allocation refused by the
// limit (std::bad_alloc: the runtime asked for more than the bound), an
// escaped exception. Prints one line per finding, then a JSON summary.
// Exit 1 when there is a finding, 2 on a usage error.
// Why: the libFuzzer harness (test/fuzz/PlanFuzzer.cpp) stops at parse and
// memory planning; the plans that crashed the runtime verified and then ran.
// Bound: a mutant runs at most --seconds (default 20) and, outside ASan, in
// --max-gib of address space (default 16).
//   dsc-plan-mutants PLAN --weights CKPT --schema PLAN.bfbs [--values all|N]
//       [--sample N --seed S] [--byte-flips N] [--seconds T] [--max-gib G]
//       [--tokens N] [--findings FILE] [--shard I/N] [--only 'PATH = 0xHEX']
// --sample N: N field edits drawn at random (seeded) instead of all of them;
// --shard I/N: every N-th mutant from the I-th (parallel campaigns);
// --only: the one field edit of that name (a finding's line), with the
// rejection's message (a regression's reproducer).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/PlanFile.h"
#include "tools/common/CommandLine.h"

#include <flatbuffers/reflection.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define DSC_MUTANTS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DSC_MUTANTS_ASAN 1
#endif
#endif

namespace {

using namespace dsc::runtime;

/// One scalar of the buffer: where, its type and its path.
struct Site {
  size_t offset;
  reflection::BaseType type;
  std::string path;
};

/// Elements of one vector that become sites (spread over long vectors).
constexpr size_t kVectorSites = 48;

class SiteWalker {
public:
  SiteWalker(const reflection::Schema &schema, const uint8_t *base)
      : schema_(schema), base_(base) {}
  std::vector<Site> sites;

  void table(const flatbuffers::Table &t, const reflection::Object &object,
             const std::string &path) {
    for (const reflection::Field *field : *object.fields()) {
      if (field->deprecated())
        continue;
      const std::string name = path + (path.empty() ? "" : ".") + field->name()->str();
      const reflection::BaseType bt = field->type()->base_type();
      if (flatbuffers::IsScalar(bt)) {
        if (const uint8_t *p = t.GetAddressOf(field->offset()))
          add(p, bt, name);
      } else if (bt == reflection::Obj) {
        const reflection::Object &sub = *schema_.objects()->Get(field->type()->index());
        if (sub.is_struct()) {
          if (const uint8_t *p = t.GetAddressOf(field->offset()))
            structAt(p, sub, name);
        } else if (const flatbuffers::Table *st = flatbuffers::GetFieldT(t, *field)) {
          table(*st, sub, name);
        }
      } else if (bt == reflection::Union) {
        const flatbuffers::Table *st = flatbuffers::GetFieldT(t, *field);
        if (!st)
          continue;
        const reflection::Object &sub = flatbuffers::GetUnionType(schema_, object, *field, t);
        table(*st, sub, name);
      } else if (bt == reflection::Vector) {
        vector(t, *field, name);
      }
      // Strings: their bytes are names; the verifier and lookups see them.
    }
  }

private:
  void add(const uint8_t *p, reflection::BaseType bt, std::string path) {
    sites.push_back({size_t(p - base_), bt, std::move(path)});
  }
  void structAt(const uint8_t *p, const reflection::Object &object, const std::string &path) {
    for (const reflection::Field *field : *object.fields()) {
      const std::string name = path + "." + field->name()->str();
      const reflection::BaseType bt = field->type()->base_type();
      if (flatbuffers::IsScalar(bt))
        add(p + field->offset(), bt, name);
      else if (bt == reflection::Obj)
        structAt(p + field->offset(), *schema_.objects()->Get(field->type()->index()), name);
    }
  }
  /// Indices 0.. of a vector of n: all when short, else kVectorSites spread.
  static std::vector<size_t> picks(size_t n) {
    std::vector<size_t> out;
    if (n <= kVectorSites) {
      for (size_t i = 0; i < n; ++i)
        out.push_back(i);
      return out;
    }
    for (size_t k = 0; k < kVectorSites; ++k)
      out.push_back(k * (n - 1) / (kVectorSites - 1));
    return out;
  }
  void vector(const flatbuffers::Table &t, const reflection::Field &field, const std::string &path) {
    const reflection::BaseType et = field.type()->element();
    const flatbuffers::VectorOfAny *v = flatbuffers::GetFieldAnyV(t, field);
    if (!v)
      return;
    const auto item = [&](size_t i) { return path + "[" + std::to_string(i) + "]"; };
    if (flatbuffers::IsScalar(et)) {
      const size_t size = flatbuffers::GetTypeSize(et);
      for (size_t i : picks(v->size()))
        add(v->Data() + i * size, et, item(i));
    } else if (et == reflection::Obj) {
      const reflection::Object &sub = *schema_.objects()->Get(field.type()->index());
      if (sub.is_struct()) {
        for (size_t i : picks(v->size()))
          structAt(v->Data() + i * size_t(sub.bytesize()), sub, item(i));
      } else {
        const auto *tables =
            reinterpret_cast<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>> *>(v);
        for (size_t i = 0; i < tables->size(); ++i) // every table: its own fields are sites
          table(*tables->Get(flatbuffers::uoffset_t(i)), sub, item(i));
      }
    }
  }
  const reflection::Schema &schema_;
  const uint8_t *base_;
};

/// The edge values of a site of type bt now holding `bits` (raw, zero-extended).
std::vector<uint64_t> edgeValues(reflection::BaseType bt, uint64_t bits) {
  std::vector<uint64_t> out;
  const size_t size = flatbuffers::GetTypeSize(bt);
  const uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
  if (bt == reflection::Bool) {
    out = {bits ? 0ull : 1ull, 2ull};
  } else if (bt == reflection::Float || bt == reflection::Double) {
    const double vals[] = {0.0, -1.0, 1e30, -1e30, std::nan(""), INFINITY, 1e-30};
    for (double d : vals) {
      uint64_t b = 0;
      if (size == 4) {
        const float f = float(d);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        b = u;
      } else {
        std::memcpy(&b, &d, 8);
      }
      out.push_back(b);
    }
  } else {
    const bool isSigned = bt == reflection::Byte || bt == reflection::Short ||
                          bt == reflection::Int || bt == reflection::Long;
    const int bits8 = int(8 * size);
    // The current value as a signed number of the type's width.
    int64_t v = int64_t(bits);
    if (isSigned && bits8 < 64 && (bits >> (bits8 - 1)) & 1)
      v = int64_t(bits | ~mask);
    const uint64_t maxU = isSigned ? (mask >> 1) : mask, minU = isSigned ? (mask >> 1) + 1 : 0;
    const uint64_t cand[] = {0,
                             1,
                             ~0ull,
                             uint64_t(v + 1),
                             uint64_t(v - 1),
                             uint64_t(v) * 2,
                             uint64_t(v / 2),
                             uint64_t(v) + 1000003,
                             maxU,
                             minU,
                             1ull << 31,
                             (1ull << 32) + 1,
                             1ull << 62};
    for (uint64_t c : cand)
      out.push_back(c & mask);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), bits & mask), out.end());
  return out;
}

uint64_t readBits(const uint8_t *p, size_t size) {
  uint64_t b = 0;
  std::memcpy(&b, p, size); // little-endian host (FlatBuffers' byte order)
  return b;
}

/// One mutant: the plan bytes with `size` bytes at `offset` set to `bits`
/// (field edit) or XORed with `bits` (byte flip).
struct Mutant {
  size_t offset;
  size_t size;
  uint64_t bits;
  bool flip;
  std::string what;
};

enum Outcome { kParseRejected, kEngineRejected, kRunRejected, kRan, kCrash, kHang, kAllocRefused, kEscaped, kOutcomes };
const char *const kOutcomeNames[kOutcomes] = {"rejected_by_parse",  "rejected_by_engine",
                                              "rejected_by_run",    "ran",
                                              "crash",              "hang",
                                              "allocation_refused", "escaped_exception"};

struct Options {
  std::string weights;
  int seconds = 20;
  long long maxGib = 16;
  int tokens = 6;
  bool verbose = false; ///< --only: the rejection's message, the child's output
};

/// Set by SIGINT/SIGTERM: the campaign stops after the current mutant.
volatile std::sig_atomic_t gStop = 0;
extern "C" void stopCampaign(int) { gStop = 1; }

/// The child's work on an accepted plan; its exit code is the outcome.
int runChild(Plan plan, const Options &o) {
  try {
    EngineOptions options; // the declared bound: what the engine may plan for a session
    options.sessionMemoryLimit = uint64_t(o.maxGib) << 30;
    Expected<std::unique_ptr<Engine>> engine = Engine::create(std::move(plan), o.weights, options);
    if (!engine) {
      if (o.verbose)
        std::fprintf(stderr, "engine: %s\n", engine.status().message().c_str());
      return kEngineRejected;
    }
    std::unique_ptr<Session> session = (*engine)->newSession();
    std::vector<int32_t> ids;
    for (int i = 0; i < o.tokens; ++i)
      ids.push_back(int32_t(1 + 7 * i));
    auto rejected = [&](const Status &s) {
      if (o.verbose)
        std::fprintf(stderr, "run: %s\n", s.message().c_str());
      return kRunRejected;
    };
    if (Expected<HostTensor> r = session->prefill(ids); !r)
      return rejected(r.status());
    for (int step = 0; step < 2; ++step)
      if (Expected<HostTensor> r = session->decode(int32_t(3 + step)); !r)
        return rejected(r.status());
    return kRan;
  } catch (const std::bad_alloc &) {
    return kAllocRefused;
  } catch (...) {
    return kEscaped;
  }
}

Outcome runMutant(const std::vector<uint8_t> &bytes, const Options &o) {
  Expected<Plan> plan = parsePlan(bytes, "mutant.dscp");
  if (!plan) {
    if (o.verbose)
      std::fprintf(stderr, "parse: %s\n", plan.status().message().c_str());
    return kParseRejected;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("dsc-plan-mutants: fork");
    std::exit(1);
  }
  if (pid == 0) {
#ifndef DSC_MUTANTS_ASAN
    const rlim_t limit = rlim_t(o.maxGib) << 30;
    const rlimit as{limit, limit};
    setrlimit(RLIMIT_AS, &as);
#endif
    const int devnull = o.verbose ? -1 : open("/dev/null", O_WRONLY);
    if (devnull >= 0) { // the runtime's warnings are not the report
      dup2(devnull, 1);
      close(devnull);
    }
    alarm(unsigned(o.seconds));
    _exit(runChild(std::move(*plan), o));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return WTERMSIG(status) == SIGALRM ? kHang : kCrash;
  const int code = WEXITSTATUS(status);
  return code >= 0 && code < kOutcomes ? Outcome(code) : kCrash; // a sanitizer's exit code
}

/// --only on programs[P].values[V]...: the value's name, shape and the
/// launches that write and read it (where to look for the check missing).
void describeValue(const Plan &plan, const std::string &path) {
  size_t p = 0, v = 0;
  if (std::sscanf(path.c_str(), "programs[%zu].values[%zu]", &p, &v) != 2 ||
      p >= plan.programs.size() || v >= plan.programs[p].values.size())
    return;
  const Program &program = plan.programs[p];
  const ValueSlot &slot = program.values[v];
  std::string shape;
  for (int64_t d : slot.shape)
    shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  std::fprintf(stderr, "program '%s' value %zu '%s' [%s]:", program.name.c_str(), v,
               slot.name.c_str(), shape.c_str());
  for (size_t l = 0; l < program.launches.size(); ++l) {
    const Launch &launch = program.launches[l];
    const char *kernel = plan.kernels[size_t(launch.kernel)].name.c_str();
    for (int64_t in : launch.inputs)
      if (size_t(in) == v)
        std::fprintf(stderr, " read by launch %zu (%s)", l, kernel);
    for (int64_t out : launch.outputs)
      if (size_t(out) == v)
        std::fprintf(stderr, " written by launch %zu (%s)", l, kernel);
  }
  std::fprintf(stderr, "\n");
}

int usage(const std::string &message) {
  std::fprintf(stderr,
               "dsc-plan-mutants: error: %s\nusage: dsc-plan-mutants PLAN --weights CKPT --schema "
               "PLAN.bfbs [--sample N --seed S] [--byte-flips N] [--seconds T] [--max-gib G] "
               "[--tokens N] [--findings FILE] [--shard I/N] [--only 'PATH = 0xHEX']\n",
               message.c_str());
  return 2;
}

std::vector<uint8_t> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int run(int argc, char **argv) {
  using namespace dsc::tools;
  const CommandLine cl =
      parseCommandLine(argc, argv,
                       {"--weights", "--schema", "--sample", "--seed", "--byte-flips", "--seconds",
                        "--max-gib", "--tokens", "--findings", "--shard", "--only"});
  if (!cl.error.empty())
    return usage(cl.error);
  if (cl.positional.empty() || !cl.has("--weights") || !cl.has("--schema"))
    return usage("give PLAN, --weights and --schema");
  Options o;
  o.weights = cl.options.at("--weights");
  long long sample = -1, seed = 1, flips = 0, seconds = 20, maxGib = 16, tokens = 6;
  for (auto [key, out, lo, hi] : {std::tuple{"--sample", &sample, 0LL, 100000000LL},
                                  std::tuple{"--seed", &seed, 0LL, 1LL << 62},
                                  std::tuple{"--byte-flips", &flips, 0LL, 100000000LL},
                                  std::tuple{"--seconds", &seconds, 1LL, 3600LL},
                                  std::tuple{"--max-gib", &maxGib, 1LL, 1LL << 20},
                                  std::tuple{"--tokens", &tokens, 1LL, 4096LL}}) {
    if (!cl.has(key))
      continue;
    bool ok = false;
    *out = parseCount(cl.options.at(key), ok);
    if (!ok || *out < lo || *out > hi)
      return usage(std::string(key) + " takes an integer in [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "], got '" + cl.options.at(key) + "'");
  }
  o.seconds = int(seconds);
  o.maxGib = maxGib;
  o.tokens = int(tokens);

  const std::vector<uint8_t> plan = readAll(cl.positional);
  const std::vector<uint8_t> bfbs = readAll(cl.options.at("--schema"));
  flatbuffers::Verifier schemaCheck(bfbs.data(), bfbs.size());
  if (bfbs.empty() || !reflection::VerifySchemaBuffer(schemaCheck))
    return usage(cl.options.at("--schema") + ": not a FlatBuffers binary schema (flatc -b --schema)");
  if (!parsePlan(plan, cl.positional)) // the unmutated plan must be good
    return usage(cl.positional + ": " + parsePlan(plan, cl.positional).status().message());
  const reflection::Schema &schema = *reflection::GetSchema(bfbs.data());
  SiteWalker walker(schema, plan.data());
  walker.table(*flatbuffers::GetAnyRoot(plan.data()), *schema.root_table(), "");

  std::vector<Mutant> mutants;
  for (const Site &s : walker.sites) {
    const size_t size = flatbuffers::GetTypeSize(s.type);
    const uint64_t now = readBits(plan.data() + s.offset, size);
    for (uint64_t v : edgeValues(s.type, now))
      mutants.push_back({s.offset, size, v, false, s.path + " = 0x" + fmt::format("{:x}", v)});
  }
  const size_t fieldEdits = mutants.size();
  std::mt19937_64 rng{uint64_t(seed)};
  // A seeded order: any prefix of a campaign (stopped by SIGINT/SIGTERM: the
  // summary then counts what ran) is a sample of the whole set.
  std::shuffle(mutants.begin(), mutants.end(), rng);
  if (sample >= 0 && size_t(sample) < mutants.size())
    mutants.resize(size_t(sample));
  if (cl.has("--only")) { // one mutant by its name, e.g. "programs[0].values[3].shape[0] = 0x0"
    const std::string only = cl.options.at("--only");
    std::erase_if(mutants, [&](const Mutant &m) { return m.what != only; });
    if (mutants.empty())
      return usage("--only: no field edit named '" + only + "'");
    o.verbose = true;
    flips = 0;
    describeValue(*parsePlan(plan, cl.positional), only);
  }
  for (long long i = 0; i < flips; ++i) {
    const size_t at = size_t(rng() % plan.size());
    const uint64_t mask = 1 + rng() % 255;
    mutants.push_back({at, 1, mask, true, "byte " + std::to_string(at) + " ^= 0x" + fmt::format("{:x}", mask)});
  }

  if (cl.has("--shard")) { // I/N: the mutants whose index is I modulo N
    const std::string v = cl.options.at("--shard");
    const size_t slash = v.find('/');
    bool ok1 = false, ok2 = false;
    const long long i = slash == std::string::npos ? -1 : parseCount(v.substr(0, slash), ok1);
    const long long n = slash == std::string::npos ? 0 : parseCount(v.substr(slash + 1), ok2);
    if (!ok1 || !ok2 || n < 1 || i < 0 || i >= n)
      return usage("--shard takes I/N with 0 <= I < N, got '" + v + "'");
    std::vector<Mutant> mine;
    for (size_t k = size_t(i); k < mutants.size(); k += size_t(n))
      mine.push_back(std::move(mutants[k]));
    mutants = std::move(mine);
  }
  std::FILE *findings = cl.has("--findings") ? std::fopen(cl.options.at("--findings").c_str(), "w") : nullptr;
  long long counts[kOutcomes] = {};
  std::vector<uint8_t> bytes = plan;
  std::signal(SIGINT, stopCampaign);
  std::signal(SIGTERM, stopCampaign);
  size_t done = 0;
  for (size_t i = 0; i < mutants.size() && !gStop; ++i, ++done) {
    const Mutant &m = mutants[i];
    uint64_t bits = m.bits;
    if (m.flip)
      bits ^= plan[m.offset];
    std::memcpy(bytes.data() + m.offset, &bits, m.size);
    const Outcome r = runMutant(bytes, o);
    std::memcpy(bytes.data() + m.offset, plan.data() + m.offset, m.size);
    ++counts[r];
    if (r >= kCrash) {
      std::printf("FINDING %s: %s\n", kOutcomeNames[r], m.what.c_str());
      if (findings)
        std::fprintf(findings, "%s\t%s\n", kOutcomeNames[r], m.what.c_str());
      std::fflush(nullptr);
    }
    if ((i + 1) % 1000 == 0) {
      std::fprintf(stderr, "dsc-plan-mutants: %zu of %zu:", i + 1, mutants.size());
      for (int k = 0; k < kOutcomes; ++k)
        std::fprintf(stderr, " %s %lld", kOutcomeNames[k], counts[k]);
      std::fprintf(stderr, "\n");
    }
  }
  if (findings)
    std::fclose(findings);
  std::printf("{\"plan\": \"%s\", \"sites\": %zu, \"field_edits\": %zu, \"byte_flips\": %lld, "
              "\"mutants\": %zu, \"stopped_early\": %s",
              cl.positional.c_str(), walker.sites.size(), fieldEdits, flips, done,
              done < mutants.size() ? "true" : "false");
  long long bad = 0;
  for (int k = 0; k < kOutcomes; ++k) {
    std::printf(", \"%s\": %lld", kOutcomeNames[k], counts[k]);
    if (k >= kCrash)
      bad += counts[k];
  }
  std::printf(", \"seconds_per_mutant\": %d, \"max_gib\": %lld, \"asan\": %s}\n", o.seconds, o.maxGib,
#ifdef DSC_MUTANTS_ASAN
              "true"
#else
              "false"
#endif
  );
  return bad ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  return dsc::tools::guardedMain("dsc-plan-mutants", [&] { return run(argc, argv); });
}
