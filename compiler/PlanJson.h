//===- PlanJson.h - A plan as JSON, through its FlatBuffers schema --------===//
//
// dsc-compile --emit=plan-json prints the plan as FlatBuffers' schema-driven
// JSON: the schema text of runtime/schema/*.fbs is embedded at build time
// (compiler/CMakeLists.txt, every .fbs of that folder), parsed by
// flatbuffers::Parser, and the serialised plan is printed by
// flatbuffers::GenerateText. So the JSON names every field as plan.fbs does
// and follows schema changes without code here; `flatc -b plan.fbs x.json`
// turns it back into a plan (minus what was left out, below).
//
// `include "x.fbs";` statements resolve among the embedded files only (next
// to the including file, as flatc resolves them), never on disk: the Parser's
// file hooks are pointed at the embedded table for the duration of one parse
// (so one thread at a time; the hooks are restored afterwards).
//
// Readable on purpose (for people and FileCheck): default-valued scalars are
// printed (a launch always shows "fusion" and "replay"), enums by name, and a
// container goes on one line when it holds only scalars (a shape, a record
// layout, the token map) or fits in 160 columns (a launch, a value slot, a
// fusion, a kernel parameter).
// Kernel binaries are left out: every KernelSpec's `cubin` and `ptx` are
// emptied before printing (`"cubin": []`, `"ptx": ""`; their sizes are in
// --report=json's `kernels`).
//===----------------------------------------------------------------------===//
#ifndef DSC_COMPILER_PLANJSON_H
#define DSC_COMPILER_PLANJSON_H

#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsc::compiler {

/// One schema file, named as an `include` statement names it.
struct SchemaFile {
  std::string_view name;
  std::string_view text;
};

/// runtime/schema/*.fbs as embedded at build time, sorted by name.
std::span<const SchemaFile> embeddedPlanSchemas();

/// `buffer` (verified against the schema first: any bytes are safe) as
/// readable JSON, with `root` (one of `files`) as the schema's root file.
/// Fails with a message naming the schema file (parse error) or the buffer.
runtime::Expected<std::string> flatbufferToJson(std::span<const uint8_t> buffer,
                                                std::span<const SchemaFile> files,
                                                std::string_view root);

/// JSON (as flatbufferToJson prints it, or written by hand) back to a
/// buffer of the schema rooted at `root`.
runtime::Expected<std::vector<uint8_t>> jsonToFlatbuffer(std::string_view json,
                                                         std::span<const SchemaFile> files,
                                                         std::string_view root);

/// The plan as JSON through the embedded plan.fbs, cubin and ptx left out.
runtime::Expected<std::string> planToJson(const runtime::Plan &plan);

} // namespace dsc::compiler

#endif // DSC_COMPILER_PLANJSON_H
