//===- KernelAbiGen.cpp - The kernel ABI, generated from the ds ODS ---------===//
//
// What: the TableGen backends behind `dsc-tblgen -gen-kernel-abi-*`. Every
// op of the ds dialect with `isKernel = 1` (DeepSeekBase.td) is one kernel of
// the plan's vocabulary; its parameters are the op's attributes plus the
// `kernelParams` it derives from types (e.g. compress_kv's `ratio` from its
// !ds.kv_cache result). From that one declaration this file writes:
//   -gen-kernel-abi-header  runtime/include/dsc/abi/KernelParams.h: one POD
//                           struct per kernel (NVRTC-includable; the CUDA
//                           kernels take it as one __grid_constant__
//                           argument), the KernelId enum, and host-side the
//                           std::variant KernelParams with name lookup;
//   -gen-kernel-abi-fbs     runtime/schema/kernel_params.fbs: one table per
//                           kernel and the union plan.fbs stores;
//   -gen-kernel-abi-fb-conv runtime/lib/KernelParamsFb.inc: pack/unpack
//                           between the structs and the FlatBuffers tables;
//   -gen-kernel-abi-lowering (build tree) the ds op -> struct conversion
//                           passes/LowerToPlan.cpp uses.
// The first three are checked in (the runtime builds without MLIR) and the
// test kernel-abi-up-to-date fails when the ODS changed and they were not
// refreshed (`ninja dsc-kernel-abi`).
//
// Invariants: kernels are ordered by mnemonic (KernelId 1..N, 0 = none), the
// fbs union in the same order, so adding a kernel renumbers the union: that
// is a plan schema change (bump kPlanSchemaVersion). Field names are the ODS
// names (snake_case), one name per concept across kernels.
//===----------------------------------------------------------------------===//
#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"

#include <string>
#include <vector>

using namespace llvm;

namespace {

/// The kinds of kernel parameter the ABI knows.
enum class Kind { Int, Float, Bool, Enum, Rope, Array };

struct EnumCase {
  std::string symbol;
  int64_t value = 0;
};

struct Field {
  std::string name;    ///< ODS name (snake_case)
  Kind kind = Kind::Int;
  std::string cppDefault; ///< initialiser in the struct ("" = zero)
  std::string enumName;   ///< Kind::Enum: C++ / fbs enum name
  std::string getter;     ///< lowering: how to read it off `op` (derived params)
  bool derived = false;
  bool optionalAttr = false; ///< the attribute may be absent (Unit, Optional, DefaultValued)
  std::string attrGetter;    ///< lowering: op.<getter>Attr() for attribute params
  std::string summary;
  std::string attrKind; ///< the attribute's ODS def (e.g. "UnitAttr")
};

struct Kernel {
  std::string mnemonic;  ///< e.g. "rms_norm"
  std::string camel;     ///< e.g. "RmsNorm"
  std::string opClass;   ///< e.g. "RmsNormOp"
  std::string summary;
  std::vector<Field> fields;
};

struct EnumDecl {
  std::string name;
  std::vector<EnumCase> cases;
};

std::string camelOf(StringRef snake) {
  std::string out;
  bool upper = true;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? char(toupper(c)) : c;
    upper = false;
  }
  return out;
}

/// Collects the kernels (sorted by mnemonic) and the enums they use.
bool collect(const RecordKeeper &records, std::vector<Kernel> &kernels,
             std::vector<EnumDecl> &enums) {
  std::vector<const Record *> ops = records.getAllDerivedDefinitions("Op");
  for (const Record *def : ops) {
    if (!def->getValue("isKernel") || !def->getValueAsBit("isKernel"))
      continue;
    mlir::tblgen::Operator op(def);
    Kernel k;
    k.mnemonic = op.getOperationName().substr(op.getOperationName().find('.') + 1);
    k.opClass = op.getCppClassName().str();
    k.camel = StringRef(k.opClass).ends_with("Op") ? k.opClass.substr(0, k.opClass.size() - 2)
                                                   : camelOf(k.mnemonic);
    k.summary = op.getSummary().str();
    for (const mlir::tblgen::NamedAttribute &named : op.getAttributes()) {
      if (named.attr.isDerivedAttr())
        continue;
      mlir::tblgen::Attribute attr = named.attr;
      Field f;
      f.name = named.name.str();
      f.attrGetter = op.getGetterName(named.name) + "Attr";
      f.optionalAttr = attr.isOptional() || attr.hasDefaultValue();
      if (attr.hasDefaultValue()) {
        f.cppDefault = attr.getDefaultValue().str();
        attr = attr.getBaseAttr();
      }
      StringRef storage = attr.getStorageType();
      if (storage == "::mlir::IntegerAttr") {
        f.kind = attr.getDefName() == "BoolAttr" ? Kind::Bool : Kind::Int;
      } else if (storage == "::mlir::FloatAttr") {
        f.kind = Kind::Float;
      } else if (storage == "::mlir::UnitAttr" || storage == "::mlir::BoolAttr") {
        f.kind = Kind::Bool;
        f.optionalAttr = true;
      } else if (storage == "::mlir::DenseI64ArrayAttr") {
        f.kind = Kind::Array;
      } else if (storage == "::dsc::ds::RopeAttr") {
        f.kind = Kind::Rope;
      } else if (attr.isEnumAttr() || attr.getDef().isSubClassOf("EnumAttr")) {
        f.kind = Kind::Enum;
        const Record *info = attr.getDef().getValueAsDef("enum");
        f.enumName = info->getValueAsString("className").str();
        bool seen = false;
        for (const EnumDecl &e : enums)
          seen |= e.name == f.enumName;
        if (!seen) {
          EnumDecl e{f.enumName, {}};
          for (const Record *c : info->getValueAsListOfDefs("enumerants"))
            e.cases.push_back({c->getValueAsString("symbol").str(), c->getValueAsInt("value")});
          enums.push_back(std::move(e));
        }
      } else {
        PrintError(def->getLoc(), "kernel '" + k.mnemonic + "': attribute '" + f.name +
                                      "' has storage " + storage.str() +
                                      ", which the kernel ABI does not map");
        return false;
      }
      f.attrKind = attr.getDefName().str();
      f.summary = "attribute (" + f.attrKind + ")";
      k.fields.push_back(std::move(f));
    }
    for (const Record *p : def->getValueAsListOfDefs("kernelParams")) {
      Field f;
      f.name = p->getValueAsString("name").str();
      StringRef type = p->getValueAsString("type");
      if (type == "I64")
        f.kind = Kind::Int;
      else if (type == "F64")
        f.kind = Kind::Float;
      else if (type == "Bool")
        f.kind = Kind::Bool;
      else {
        PrintError(p->getLoc(), "kernel parameter type '" + type.str() + "' (expected I64, F64 "
                                "or Bool)");
        return false;
      }
      f.derived = true;
      f.getter = p->getValueAsString("getter").str();
      f.summary = p->getValueAsString("summary").str();
      k.fields.push_back(std::move(f));
    }
    kernels.push_back(std::move(k));
  }
  std::sort(kernels.begin(), kernels.end(),
            [](const Kernel &a, const Kernel &b) { return a.mnemonic < b.mnemonic; });
  return true;
}

const char *kHeaderNote =
    "// GENERATED by dsc-tblgen from dialects/DeepSeek/IR/DeepSeekOps.td: do not edit.\n"
    "// Refresh with `ninja dsc-kernel-abi` (test kernel-abi-up-to-date checks it).\n";

std::string cppType(const Field &f) {
  switch (f.kind) {
  case Kind::Int: return "long long";
  case Kind::Float: return "double";
  case Kind::Bool: return "bool";
  case Kind::Enum: return f.enumName;
  case Kind::Rope: return "Rope";
  case Kind::Array: return "KernelArray";
  }
  return "?";
}

std::string defaultOf(const Field &f) {
  if (!f.cppDefault.empty()) {
    if (f.kind == Kind::Bool)
      return f.cppDefault == "true" || f.cppDefault == "1" ? " = true" : " = false";
    return " = " + f.cppDefault;
  }
  switch (f.kind) {
  case Kind::Int: return " = 0";
  case Kind::Float: return " = 0";
  case Kind::Bool: return " = false";
  case Kind::Enum: return " = " + f.enumName + "(0)";
  case Kind::Rope:
  case Kind::Array: return "";
  }
  return "";
}

bool emitHeader(raw_ostream &os, const std::vector<Kernel> &kernels,
                const std::vector<EnumDecl> &enums) {
  os << "//===- KernelParams.h - Typed parameters of every kernel -------------------===//\n"
     << kHeaderNote
     << "//\n"
        "// One POD struct per kernel of the plan's vocabulary (the ds ops with\n"
        "// isKernel): the op's attributes and the parameters it derives from types.\n"
        "// Includable by NVRTC (no standard headers on the device side); CUDA\n"
        "// kernels take their struct as one `const __grid_constant__` argument.\n"
        "// Host code gets `KernelParams`, a std::variant over all of them.\n"
        "//===----------------------------------------------------------------------===//\n"
        "#ifndef DSC_ABI_KERNELPARAMS_H\n#define DSC_ABI_KERNELPARAMS_H\n\n"
        "#include \"dsc/abi/KernelAbi.h\"\n\n"
        "#ifndef __CUDACC_RTC__\n#include <optional>\n#include <string_view>\n#include <variant>\n"
        "#endif\n\nnamespace dsc::abi {\n\n";
  for (const EnumDecl &e : enums) {
    os << "enum class " << e.name << " : unsigned char {";
    for (size_t i = 0; i < e.cases.size(); ++i)
      os << (i ? ", " : " ") << e.cases[i].symbol << " = " << e.cases[i].value;
    os << " };\n";
    os << "inline constexpr int k" << e.name << "Count = " << e.cases.size() << ";\n";
    os << "inline constexpr const char *" << "k" << e.name << "Names[] = {";
    for (size_t i = 0; i < e.cases.size(); ++i)
      os << (i ? ", " : "") << "\"" << e.cases[i].symbol << "\"";
    os << "};\n\n";
  }
  for (const Kernel &k : kernels) {
    os << "/// ds." << k.mnemonic << ": " << k.summary << "\n";
    os << "struct " << k.camel << "Params {\n";
    os << "  static constexpr const char *kName = \"" << k.mnemonic << "\";\n";
    for (const Field &f : k.fields) {
      os << "  " << cppType(f) << " " << f.name << defaultOf(f) << ";";
      os << (f.derived ? " ///< derived: " + f.summary : " ///< " + f.summary) << "\n";
    }
    os << "#ifndef __CUDACC_RTC__\n  bool operator==(const " << k.camel
       << "Params &) const = default;\n#endif\n";
    os << "};\n\n";
  }
  os << "/// The kernels in plan order (the fbs union's order); 0 is none.\n";
  os << "enum class KernelId : unsigned char {\n  None = 0,\n";
  for (size_t i = 0; i < kernels.size(); ++i)
    os << "  " << kernels[i].camel << " = " << i + 1 << ",\n";
  os << "};\ninline constexpr int kKernelCount = " << kernels.size() << ";\n\n";
  os << "#ifndef __CUDACC_RTC__\n";
  os << "/// The parameters of one kernel specialisation (monostate: none yet).\n";
  os << "using KernelParams = std::variant<std::monostate";
  for (const Kernel &k : kernels)
    os << ",\n                                  " << k.camel << "Params";
  os << ">;\n\n";
  os << "/// Kernel names by KernelId (index 0: \"\").\n";
  os << "inline constexpr const char *kKernelNames[] = {\"\"";
  for (const Kernel &k : kernels)
    os << ", \"" << k.mnemonic << "\"";
  os << "};\n\n";
  os << "/// The kernel the parameters belong to (\"\" for monostate).\n"
        "inline const char *kernelName(const KernelParams &p) { return kKernelNames[p.index()]; }\n"
        "inline KernelId kernelId(const KernelParams &p) { return KernelId(p.index()); }\n\n"
        "/// Default parameters of the kernel called `name`, or nullopt outside the vocabulary.\n"
        "inline std::optional<KernelParams> defaultParams(std::string_view name) {\n";
  for (const Kernel &k : kernels)
    os << "  if (name == \"" << k.mnemonic << "\") return KernelParams(" << k.camel
       << "Params{});\n";
  os << "  return std::nullopt;\n}\n#endif // __CUDACC_RTC__\n\n";
  os << "} // namespace dsc::abi\n\n#endif // DSC_ABI_KERNELPARAMS_H\n";
  return false;
}

std::string fbsType(const Field &f) {
  switch (f.kind) {
  case Kind::Int: return "long";
  case Kind::Float: return "double";
  case Kind::Bool: return "bool";
  case Kind::Enum: return f.enumName;
  case Kind::Rope: return "Rope";
  case Kind::Array: return "KernelArray";
  }
  return "?";
}

bool emitFbs(raw_ostream &os, const std::vector<Kernel> &kernels,
             const std::vector<EnumDecl> &enums) {
  os << kHeaderNote
     << "//\n// kernel_params.fbs - the typed kernel parameters plan.fbs stores: one table per\n"
        "// kernel (runtime/include/dsc/abi/KernelParams.h is their C++ twin) and the\n"
        "// union KernelParams in KernelId order. Scalars are always written; a zero\n"
        "// may be elided and reads back as zero.\n\n"
        "namespace dsc.runtime.fb;\n\n";
  for (const EnumDecl &e : enums) {
    os << "enum " << e.name << " : ubyte {";
    for (size_t i = 0; i < e.cases.size(); ++i)
      os << (i ? ", " : " ") << e.cases[i].symbol << " = " << e.cases[i].value;
    os << " }\n\n";
  }
  os << "/// dsc::abi::Rope.\nstruct Rope {\n  dim: long;\n  theta: double;\n"
        "  original_seq_len: long;\n  factor: double;\n  beta_fast: double;\n"
        "  beta_slow: double;\n}\n\n"
        "/// dsc::abi::KernelArray: `count` values at `offset` of KernelSpec.constants.\n"
        "struct KernelArray {\n  offset: long;\n  count: long;\n}\n\n";
  for (const Kernel &k : kernels) {
    os << "/// ds." << k.mnemonic << "\ntable " << k.camel << "Params {";
    if (k.fields.empty())
      os << "}\n\n";
    else {
      os << "\n";
      for (const Field &f : k.fields)
        os << "  " << f.name << ": " << fbsType(f) << ";\n";
      os << "}\n\n";
    }
  }
  os << "union KernelParams {\n";
  for (size_t i = 0; i < kernels.size(); ++i)
    os << "  " << kernels[i].camel << "Params" << (i + 1 < kernels.size() ? "," : "") << "\n";
  os << "}\n";
  return false;
}

bool emitFbConversion(raw_ostream &os, const std::vector<Kernel> &kernels,
                      const std::vector<EnumDecl> &enums) {
  os << kHeaderNote
     << "// KernelParamsFb.inc - dsc::abi::KernelParams <-> the fbs union (included by\n"
        "// runtime/lib/PlanFile.cpp after plan_generated.h, in namespace\n"
        "// dsc::runtime, where `fb` is dsc::runtime::fb).\n\n";
  // Pack.
  os << "/// Writes `p` as its table; `type` receives the union tag.\n"
        "inline ::flatbuffers::Offset<void> packKernelParams(::flatbuffers::FlatBufferBuilder &b,\n"
        "                                                  const abi::KernelParams &p,\n"
        "                                                  fb::KernelParams &type) {\n"
        "  switch (p.index()) {\n";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Kernel &k = kernels[i];
    os << "  case " << i + 1 << ": {\n";
    os << "    const auto &v = std::get<abi::" << k.camel << "Params>(p);\n";
    os << "    (void)v;\n";
    os << "    fb::" << k.camel << "ParamsBuilder t(b);\n";
    for (const Field &f : k.fields) {
      switch (f.kind) {
      case Kind::Int:
      case Kind::Float:
      case Kind::Bool:
        os << "    t.add_" << f.name << "(v." << f.name << ");\n";
        break;
      case Kind::Enum:
        os << "    t.add_" << f.name << "(fb::" << f.enumName << "(v." << f.name << "));\n";
        break;
      case Kind::Rope:
        os << "    fb::Rope " << f.name << "(v." << f.name << ".dim, v." << f.name
           << ".theta, v." << f.name << ".original_seq_len, v." << f.name << ".factor, v."
           << f.name << ".beta_fast, v." << f.name << ".beta_slow);\n";
        os << "    t.add_" << f.name << "(&" << f.name << ");\n";
        break;
      case Kind::Array:
        os << "    fb::KernelArray " << f.name << "(v." << f.name << ".offset, v." << f.name
           << ".count);\n";
        os << "    t.add_" << f.name << "(&" << f.name << ");\n";
        break;
      }
    }
    os << "    type = fb::KernelParams::" << k.camel << "Params;\n";
    os << "    return t.Finish().Union();\n  }\n";
  }
  os << "  default:\n    type = fb::KernelParams::NONE;\n    return 0;\n  }\n}\n\n";
  // Unpack.
  os << "/// Reads the union member `table` of tag `type`; errors name `where`.\n"
        "inline Expected<abi::KernelParams> unpackKernelParams(fb::KernelParams type,\n"
        "                                                      const void *table,\n"
        "                                                      const std::string &where) {\n"
        "  if (type != fb::KernelParams::NONE && !table)\n"
        "    return dataLoss(where + \"parameters of kind \" + std::to_string(int(type)) +\n"
        "                    \" without their table\");\n"
        "  switch (type) {\n"
        "  case fb::KernelParams::NONE:\n    return abi::KernelParams();\n";
  for (const Kernel &k : kernels) {
    os << "  case fb::KernelParams::" << k.camel << "Params: {\n";
    os << "    const auto *t = static_cast<const fb::" << k.camel << "Params *>(table);\n";
    os << "    (void)t;\n";
    os << "    abi::" << k.camel << "Params v;\n";
    for (const Field &f : k.fields) {
      switch (f.kind) {
      case Kind::Int:
      case Kind::Float:
      case Kind::Bool:
        os << "    v." << f.name << " = t->" << f.name << "();\n";
        break;
      case Kind::Enum:
        os << "    if (int(t->" << f.name << "()) >= abi::k" << f.enumName << "Count)\n"
           << "      return dataLoss(where + \"" << k.mnemonic << " parameter '" << f.name
           << "' is \" + std::to_string(int(t->" << f.name << "())) + \", expected below \" +\n"
           << "                      std::to_string(abi::k" << f.enumName << "Count));\n";
        os << "    v." << f.name << " = abi::" << f.enumName << "(t->" << f.name << "());\n";
        break;
      case Kind::Rope:
        os << "    if (const fb::Rope *r = t->" << f.name << "())\n"
           << "      v." << f.name << " = abi::Rope{r->dim(), r->theta(), "
              "r->original_seq_len(), r->factor(), r->beta_fast(), r->beta_slow()};\n"
           << "    else\n      return dataLoss(where + \"" << k.mnemonic << " parameter '"
           << f.name << "' is missing\");\n";
        break;
      case Kind::Array:
        os << "    if (const fb::KernelArray *a = t->" << f.name << "())\n"
           << "      v." << f.name << " = abi::KernelArray{a->offset(), a->count()};\n";
        break;
      }
    }
    os << "    return abi::KernelParams(v);\n  }\n";
  }
  os << "  }\n  return dataLoss(where + \"unknown kernel parameter kind \" + "
        "std::to_string(int(type)) +\n"
        "                  \" (a plan from a newer dsc?)\");\n}\n";
  return false;
}

bool emitLowering(raw_ostream &os, const std::vector<Kernel> &kernels,
                  const std::vector<EnumDecl> &enums) {
  os << kHeaderNote
     << "// KernelParamsLowering.inc - ds kernel op -> dsc::abi::KernelParams (included\n"
        "// by passes/LowerToPlan.cpp inside namespace dsc::ds). Array attributes are\n"
        "// appended to `constants` (KernelSpec::constants).\n\n";
  os << "/// The parameters of a kernel op, or nullopt for an op that is no kernel.\n"
        "inline std::optional<::dsc::abi::KernelParams>\n"
        "lowerKernelParams(::mlir::Operation *operation, std::vector<int64_t> &constants) {\n"
        "  (void)constants;\n";
  for (const Kernel &k : kernels) {
    os << "  if (auto op = ::llvm::dyn_cast<" << k.opClass << ">(operation)) {\n";
    os << "    ::dsc::abi::" << k.camel << "Params p;\n";
    for (const Field &f : k.fields) {
      if (f.derived) {
        std::string getter = f.getter;
        for (size_t at = getter.find("$_op"); at != std::string::npos; at = getter.find("$_op"))
          getter.replace(at, 4, "op");
        os << "    p." << f.name << " = (" << getter << ");\n";
        continue;
      }
      std::string read = "op." + f.attrGetter + "()";
      std::string guard = f.optionalAttr ? "    if (auto a = " + read + ")\n  " : "";
      std::string a = f.optionalAttr ? "a" : read;
      switch (f.kind) {
      case Kind::Int:
        os << guard << "    p." << f.name << " = " << a << ".getValue().getSExtValue();\n";
        break;
      case Kind::Float:
        os << guard << "    p." << f.name << " = " << a << ".getValueAsDouble();\n";
        break;
      case Kind::Bool:
        if (f.attrKind == "UnitAttr")
          os << "    p." << f.name << " = bool(" << read << ");\n";
        else
          os << guard << "    p." << f.name << " = " << a << ".getValue();\n";
        break;
      case Kind::Enum:
        os << guard << "    p." << f.name << " = ::dsc::abi::" << f.enumName << "(" << a
           << ".getValue());\n";
        break;
      case Kind::Rope:
        os << "    p." << f.name << " = lowerRope(" << read << ");\n";
        break;
      case Kind::Array:
        os << "    {\n      auto values = " << read << ".asArrayRef();\n"
           << "      p." << f.name << " = ::dsc::abi::KernelArray{int64_t(constants.size()), "
              "int64_t(values.size())};\n"
           << "      constants.insert(constants.end(), values.begin(), values.end());\n    }\n";
        break;
      }
    }
    os << "    return ::dsc::abi::KernelParams(p);\n  }\n";
  }
  os << "  return std::nullopt;\n}\n";
  return false;
}

enum class Action { Header, Fbs, FbConversion, Lowering };

cl::opt<Action> action(
    cl::desc("what to generate"),
    cl::values(clEnumValN(Action::Header, "gen-kernel-abi-header", "KernelParams.h"),
               clEnumValN(Action::Fbs, "gen-kernel-abi-fbs", "kernel_params.fbs"),
               clEnumValN(Action::FbConversion, "gen-kernel-abi-fb-conv", "KernelParamsFb.inc"),
               clEnumValN(Action::Lowering, "gen-kernel-abi-lowering",
                          "KernelParamsLowering.inc")));

} // namespace

/// The TableGen entry point of dsc-tblgen.
bool dscTableGenMain(raw_ostream &os, const RecordKeeper &records) {
  std::vector<Kernel> kernels;
  std::vector<EnumDecl> enums;
  if (!collect(records, kernels, enums))
    return true;
  switch (action) {
  case Action::Header: return emitHeader(os, kernels, enums);
  case Action::Fbs: return emitFbs(os, kernels, enums);
  case Action::FbConversion: return emitFbConversion(os, kernels, enums);
  case Action::Lowering: return emitLowering(os, kernels, enums);
  }
  return true;
}
