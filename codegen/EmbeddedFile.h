//===- EmbeddedFile.h - A file compiled into the binary --------------------===//
//
// The entry type of every table codegen/EmbedSources.cmake generates (kernel
// sources for NVRTC, plan schemas for plan-json), and the declaration of one
// such table: DSC_DECLARE_EMBEDDED_FILES(ns) declares ns::files() (sorted by
// name, followed by a {nullptr} sentinel) and ns::fileCount(). Data is
// NUL-terminated; size excludes the NUL.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_EMBEDDEDFILE_H
#define DSC_CODEGEN_EMBEDDEDFILE_H

#include <cstddef>

namespace dsc::codegen {

struct EmbeddedFile {
  const char *name;
  const char *data;
  size_t size;
};

} // namespace dsc::codegen

#define DSC_DECLARE_EMBEDDED_FILES(NS)                                                          \
  namespace NS {                                                                                \
  using ::dsc::codegen::EmbeddedFile;                                                           \
  const EmbeddedFile *files();                                                                  \
  size_t fileCount();                                                                           \
  }

#endif // DSC_CODEGEN_EMBEDDEDFILE_H
