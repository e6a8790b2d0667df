//===- EmbeddedSchemas.h - The plan schema text compiled into the binary --===//
//
// Generated at build time by codegen/EmbedSources.cmake from every
// runtime/schema/*.fbs (compiler/CMakeLists.txt globs the folder, so a new
// schema file that plan.fbs includes is embedded without a CMake edit). Each
// file is named by its file name ("plan.fbs"), as `include` statements of the
// folder name each other; data is NUL-terminated, size excludes the NUL.
// Internal to dsc_plan_json: PlanJson.h's embeddedPlanSchemas() is the API.
//===----------------------------------------------------------------------===//
#ifndef DSC_COMPILER_EMBEDDEDSCHEMAS_H
#define DSC_COMPILER_EMBEDDEDSCHEMAS_H

#include "codegen/EmbeddedFile.h"

DSC_DECLARE_EMBEDDED_FILES(dsc::compiler::schemas)

#endif // DSC_COMPILER_EMBEDDEDSCHEMAS_H
