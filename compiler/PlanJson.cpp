//===- PlanJson.cpp - A plan as JSON, through its FlatBuffers schema ------===//
//
// Parse the embedded schema (includes served from memory), verify the buffer
// with the schema's reflection data, GenerateText, then re-indent for
// reading (the values are FlatBuffers' own; only whitespace changes).
//===----------------------------------------------------------------------===//
#include "compiler/PlanJson.h"
#include "compiler/EmbeddedSchemas.h"

#include "dsc/runtime/PlanFile.h"

#include <flatbuffers/idl.h>
#include <flatbuffers/reflection.h>
#include <flatbuffers/util.h>
#include <nlohmann/json.hpp>

#include <mutex>

using namespace dsc;
namespace rt = dsc::runtime;

namespace {

/// The directory the embedded files live in, as the Parser sees them. Not a
/// path that can exist on disk (the hooks never look there).
constexpr std::string_view kVirtualDir = "<dsc-embedded-schema>";

/// The files the hooks serve during one parse; guarded by hookMutex.
std::span<const compiler::SchemaFile> servedFiles;
std::mutex hookMutex;

const compiler::SchemaFile *servedFile(const char *path) {
  std::string_view p(path);
  if (p.size() <= kVirtualDir.size() + 1 || !p.starts_with(kVirtualDir) ||
      p[kVirtualDir.size()] != '/')
    return nullptr;
  p.remove_prefix(kVirtualDir.size() + 1);
  for (const compiler::SchemaFile &file : servedFiles)
    if (file.name == p)
      return &file;
  return nullptr;
}

bool servedExists(const char *path) { return servedFile(path) != nullptr; }

bool servedLoad(const char *path, bool /*binary*/, std::string *dest) {
  const compiler::SchemaFile *file = servedFile(path);
  if (!file)
    return false;
  dest->assign(file->text);
  return true;
}

/// Parses `root` of `files` into `parser`, every include resolved among
/// `files`. The Parser's file hooks are process-wide: they point at the
/// embedded table only while the lock is held.
rt::Status parseSchema(flatbuffers::Parser &parser, std::span<const compiler::SchemaFile> files,
                       std::string_view root) {
  const compiler::SchemaFile *rootFile = nullptr;
  for (const compiler::SchemaFile &file : files)
    if (file.name == root)
      rootFile = &file;
  if (!rootFile) {
    std::string names;
    for (const compiler::SchemaFile &file : files)
      names += (names.empty() ? "" : ", ") + std::string(file.name);
    return rt::internalError("schema '" + std::string(root) + "' is not embedded (embedded: " +
                             (names.empty() ? std::string("none") : names) + ")");
  }
  std::string rootPath = std::string(kVirtualDir) + "/" + std::string(root);
  std::string text(rootFile->text);
  std::lock_guard<std::mutex> lock(hookMutex);
  servedFiles = files;
  flatbuffers::LoadFileFunction oldLoad = flatbuffers::SetLoadFileFunction(servedLoad);
  flatbuffers::FileExistsFunction oldExists = flatbuffers::SetFileExistsFunction(servedExists);
  bool ok = parser.Parse(text.c_str(), nullptr, rootPath.c_str());
  flatbuffers::SetLoadFileFunction(oldLoad);
  flatbuffers::SetFileExistsFunction(oldExists);
  servedFiles = {};
  if (!ok)
    return rt::internalError("embedded schema " + std::string(root) +
                             " does not parse: " + parser.error_);
  return rt::Status::ok();
}

flatbuffers::IDLOptions readableOptions() {
  flatbuffers::IDLOptions opts;
  opts.strict_json = true;
  opts.output_default_scalars_in_json = true;
  opts.output_enum_identifiers = true;
  opts.indent_step = 2;
  return opts;
}

using Json = nlohmann::ordered_json;

/// Nesting depth: 0 for a scalar, 1 + the deepest member otherwise.
int depthOf(const Json &v) {
  if (!v.is_structured())
    return 0;
  int deepest = 0;
  for (const Json &member : v)
    deepest = std::max(deepest, depthOf(member));
  return deepest + 1;
}

std::string compact(const Json &v) {
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto &[key, member] : v.items()) {
      out += (first ? "" : ", ") + Json(key).dump() + ": " + compact(member);
      first = false;
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + compact(v[i]);
    return out + "]";
  }
  return v.dump();
}

constexpr size_t kLineWidth = 160;

void printReadable(const Json &v, size_t indent, size_t column, std::string &out) {
  // Scalars and containers of scalars always fit on one line, anything else
  // when it fits in kLineWidth columns.
  if (!v.is_structured() || v.empty() || depthOf(v) == 1) {
    out += compact(v);
    return;
  }
  std::string one = compact(v);
  if (column + one.size() <= kLineWidth) {
    out += one;
    return;
  }
  const std::string pad(indent + 2, ' ');
  out += v.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (const auto &[key, member] : v.items()) {
    if (!first)
      out += ",\n";
    first = false;
    out += pad;
    size_t start = pad.size();
    if (v.is_object()) {
      std::string k = Json(key).dump() + ": ";
      out += k;
      start += k.size();
    }
    printReadable(member, indent + 2, start, out);
  }
  out += "\n" + std::string(indent, ' ') + (v.is_object() ? "}" : "]");
}

} // namespace

std::span<const compiler::SchemaFile> compiler::embeddedPlanSchemas() {
  static const std::vector<SchemaFile> files = [] {
    std::vector<SchemaFile> out;
    for (const schemas::EmbeddedFile *f = schemas::files(); f->name; ++f)
      out.push_back({f->name, std::string_view(f->data, f->size)});
    return out;
  }();
  return files;
}

rt::Expected<std::string> compiler::flatbufferToJson(std::span<const uint8_t> buffer,
                                                     std::span<const SchemaFile> files,
                                                     std::string_view root) {
  flatbuffers::Parser parser(readableOptions());
  if (rt::Status status = parseSchema(parser, files, root); !status)
    return status;
  if (!parser.root_struct_def_)
    return rt::internalError("schema " + std::string(root) + " declares no root_type");
  // GenerateText trusts its input: check every offset against the schema
  // first (the reflection form of the schema drives the verifier).
  parser.Serialize();
  const reflection::Schema *schema = reflection::GetSchema(parser.builder_.GetBufferPointer());
  if (buffer.size() < 8 || !schema->root_table() ||
      !flatbuffers::Verify(*schema, *schema->root_table(), buffer.data(), buffer.size()))
    return rt::dataLoss("not a valid " + std::string(root) + " buffer (" +
                        std::to_string(buffer.size()) + " bytes): verification failed");
  std::string text;
  if (!flatbuffers::GenerateText(parser, buffer.data(), &text))
    return rt::internalError("FlatBuffers could not print the buffer as JSON");
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    return rt::internalError("FlatBuffers printed JSON that does not parse");
  std::string out;
  printReadable(json, 0, 0, out);
  out += "\n";
  return out;
}

rt::Expected<std::vector<uint8_t>> compiler::jsonToFlatbuffer(std::string_view json,
                                                              std::span<const SchemaFile> files,
                                                              std::string_view root) {
  flatbuffers::Parser parser(readableOptions());
  if (rt::Status status = parseSchema(parser, files, root); !status)
    return status;
  std::string text(json);
  if (!parser.ParseJson(text.c_str()))
    return rt::invalidArgument("JSON does not match " + std::string(root) + ": " + parser.error_);
  const uint8_t *data = parser.builder_.GetBufferPointer();
  return std::vector<uint8_t>(data, data + parser.builder_.GetSize());
}

rt::Expected<std::string> compiler::planToJson(const rt::Plan &plan) {
  rt::Plan stripped = plan;
  for (rt::Module &module : stripped.modules) {
    module.cubin.clear();
    module.ptx.clear();
  }
  std::vector<uint8_t> bytes = rt::serializePlan(stripped);
  return flatbufferToJson(bytes, embeddedPlanSchemas(), "plan.fbs");
}
