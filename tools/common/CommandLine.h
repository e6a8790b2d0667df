//===- CommandLine.h - Option parsing shared by the runtime tools ----------===//
//
// dsc-run and dsc-bench link no LLVM, so they cannot use llvm::cl. Options are
// `--key value` or `--key=value` (from a known list), flags are bare
// `--name`, and one positional argument (the plan) is allowed.
//===----------------------------------------------------------------------===//
#ifndef DSC_TOOLS_COMMON_COMMANDLINE_H
#define DSC_TOOLS_COMMON_COMMANDLINE_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dsc::tools {

struct CommandLine {
  std::string positional;
  std::map<std::string, std::string> options;
  std::set<std::string> flags;
  std::string error; ///< non-empty: a usage error to print

  bool has(const std::string &key) const { return options.count(key) > 0; }
};

inline CommandLine parseCommandLine(int argc, char **argv, const std::vector<std::string> &valued,
                                    const std::vector<std::string> &flagNames = {}) {
  CommandLine cl;
  for (int i = 1; i < argc && cl.error.empty(); ++i) {
    std::string arg = argv[i];
    if (std::find(flagNames.begin(), flagNames.end(), arg) != flagNames.end()) {
      cl.flags.insert(arg);
    } else if (arg.rfind("--", 0) == 0) {
      std::string key = arg, value;
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        key = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        cl.error = arg + " needs a value";
        break;
      }
      if (std::find(valued.begin(), valued.end(), key) == valued.end())
        cl.error = "unknown option " + key;
      else
        cl.options[key] = value;
    } else if (cl.positional.empty()) {
      cl.positional = arg;
    } else {
      cl.error = "unexpected argument " + arg;
    }
  }
  return cl;
}

/// A non-negative decimal integer; `ok` false otherwise.
inline int64_t parseCount(const std::string &text, bool &ok) {
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  ok = !text.empty() && *end == '\0' && v >= 0;
  return v;
}

/// A tool's main: runs `body`, turning anything the standard library throws
/// (allocation failure) into "<tool>: error: internal error: ..." and exit 1.
/// Nothing the runtime reports is an exception.
template <typename Body> int guardedMain(const char *tool, Body body) {
  try {
    return body();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: internal error: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: error: internal error: unknown exception\n", tool);
  }
  return 1;
}

} // namespace dsc::tools

#endif // DSC_TOOLS_COMMON_COMMANDLINE_H
