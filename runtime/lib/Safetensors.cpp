//===- Safetensors.cpp - Memory-mapped safetensors files ------------------===//
//
// Opens a file read-only, maps it, and validates the whole header before any
// tensor is handed out (rules listed in Safetensors.h). Every error message
// starts with "<path>: " and names the offending tensor.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Safetensors.h"

#include "dsc/runtime/InputFile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsc::runtime {

namespace {

/// The safetensors library refuses headers above 100 MB; so do we.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
/// Nesting a header may have: {name: {field: [dims]}} is three levels, the
/// metadata two. Checked on the text before parsing (issue 15: a 100,000-deep
/// value under the size cap overflowed the stack).
constexpr int kMaxHeaderDepth = 8;


std::string quoteName(std::string_view name) { return fmt::format("'{}'", name); }

/// What the header's text must satisfy before it is parsed: no NUL byte,
/// nesting at most kMaxHeaderDepth deep, and no top-level key twice (a parsed
/// object keeps one silently; the parser's own callback for this made n keys
/// O(n^2)). Strings are skipped with their escapes; what is not JSON is left
/// for the parser to report. Returns the problem, or ""; `keys` gets the
/// top-level keys as written (escapes undecoded).
///
/// NUL: JSON text holds none (in a string it must be escaped), but the parser
/// takes one for the end of its input, so `{...}<NUL><anything>` parsed as
/// `{...}` and the bytes after it went unchecked (fuzzing, issue 15: such a
/// tail made the duplicate-key count disagree and the diagnosis threw).
std::string checkHeaderText(const char *text, uint64_t size,
                            std::unordered_set<std::string_view> &keys) {
  if (const void *nul = std::memchr(text, '\0', size))
    return fmt::format("header has a NUL byte at byte {} of the header (JSON text holds none; "
                       "the safetensors header is padded with spaces)",
                       static_cast<const char *>(nul) - text);
  int depth = 0;
  bool expectKey = false; // the next string at depth 1 is a key
  for (uint64_t i = 0; i < size; ++i) {
    const char c = text[i];
    if (c == '"') {
      const uint64_t begin = ++i;
      for (; i < size && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      if (depth == 1 && expectKey) {
        const std::string_view key(text + begin, size_t(std::min(i, size) - begin));
        if (!keys.insert(key).second)
          return "tensor " + quoteName(std::string(key)) + " appears more than once in the header";
        expectKey = false;
      }
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxHeaderDepth)
        return fmt::format("header nests deeper than {} levels (at byte {} of the header)",
                           kMaxHeaderDepth, i);
      expectKey = depth == 1 && c == '{';
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    } else if (c == ',') {
      expectKey = depth == 1;
    }
  }
  return "";
}

} // namespace

int64_t TensorView::numElements() const {
  // A zero dimension first: the other dimensions of a zero-size tensor may
  // multiply past INT64_MAX (open accepts [2^63 - 1, 2, 0], as the
  // safetensors library does), which overflowed here (UB; fuzzing, issue 15).
  // Without a zero, every partial product is at most the tensor's byte size.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile &&other) noexcept
    : path_(std::move(other.path_)), mapping_(other.mapping_),
      mappingSize_(other.mappingSize_), tensors_(std::move(other.tensors_)),
      index_(std::move(other.index_)), metadata_(std::move(other.metadata_)) {
  other.mapping_ = nullptr;
  other.mappingSize_ = 0;
}

SafetensorsFile &SafetensorsFile::operator=(SafetensorsFile &&other) noexcept {
  if (this != &other) {
    if (mapping_)
      ::munmap(mapping_, mappingSize_);
    path_ = std::move(other.path_);
    mapping_ = other.mapping_;
    mappingSize_ = other.mappingSize_;
    tensors_ = std::move(other.tensors_);
    index_ = std::move(other.index_);
    metadata_ = std::move(other.metadata_);
    other.mapping_ = nullptr;
    other.mappingSize_ = 0;
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_)
    ::munmap(mapping_, mappingSize_);
}

const TensorView *SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Expected<SafetensorsFile> SafetensorsFile::open(const std::string &path) {
  const std::string where = path + ": ";

  Expected<RegularFile> fd = RegularFile::open(path, "safetensors file"); // never waits on a FIFO
  if (!fd)
    return fd.status();
  const uint64_t fileSize = fd->size();
  if (fileSize < 8)
    return dataLoss(fmt::format(
        "{}truncated: {} bytes, too short for the 8-byte header length",
        where, fileSize));

  SafetensorsFile file;
  file.path_ = path;
  void *map = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd->fd(), 0);
  if (map == MAP_FAILED)
    return failedPrecondition(where + "mmap failed: " + std::strerror(errno));
  file.mapping_ = map;
  file.mappingSize_ = fileSize;
  const auto *base = static_cast<const std::byte *>(map);

  // Header length: little-endian u64.
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | std::to_integer<uint64_t>(base[i]);
  if (headerLen < 2 || headerLen > kMaxHeaderBytes || headerLen > fileSize - 8)
    return dataLoss(fmt::format(
        "{}bad header length {} (file has {} bytes, so at most {}; limit {})",
        where, headerLen, fileSize, fileSize - 8,
        std::min<uint64_t>(fileSize - 8, kMaxHeaderBytes)));
  const uint64_t dataStart = 8 + headerLen;
  const uint64_t dataSize = fileSize - dataStart;

  // Checked, then parsed into sorted maps: O(n log n) in the tensors (an
  // insertion-ordered tree and the parser's callback each made a header of
  // n tensors O(n^2): 100,000 tensors took 30 s; issue 15).
  const char *text = reinterpret_cast<const char *>(base + 8);
  std::unordered_set<std::string_view> written;
  if (std::string problem = checkHeaderText(text, headerLen, written); !problem.empty())
    return dataLoss(where + problem);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + headerLen);
  } catch (const nlohmann::json::exception &e) {
    return dataLoss(where + "header is not valid JSON: " + e.what());
  }
  if (!header.is_object())
    return dataLoss(where + "header is not a JSON object");
  if (header.size() != written.size()) { // two spellings of one name ("a", "\u0061") became one
    std::unordered_set<std::string> names; // decoded: the full parse accepted each spelling
    std::string twice;
    for (std::string_view raw : written) {
      // Never throws: a key that does not decode on its own is left out.
      const nlohmann::json decoded = nlohmann::json::parse("\"" + std::string(raw) + "\"",
                                                           nullptr, /*allow_exceptions=*/false);
      if (!decoded.is_string())
        continue;
      if (std::string name = decoded.get<std::string>();
          !names.insert(name).second && (twice.empty() || name < twice))
        twice = name;
    }
    return dataLoss(fmt::format("{}{} top-level keys are written but {} are distinct: tensor {} "
                                "appears twice, spelled with escapes",
                                where, written.size(), header.size(), quoteName(twice)));
  }

  struct Range {
    uint64_t begin, end;
    size_t tensor;
  };
  std::vector<Range> ranges;
  std::vector<TensorView> views;
  for (auto &[name, entry] : header.items()) {
    const std::string tensor = where + "tensor " + quoteName(name) + ": ";
    if (name == "__metadata__") {
      if (!entry.is_object())
        return dataLoss(where + "__metadata__ is not an object");
      for (auto &[key, value] : entry.items()) {
        if (!value.is_string())
          return dataLoss(where + "__metadata__ entry " + quoteName(key) +
                          " is not a string");
        file.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object())
      return dataLoss(tensor + "entry is not an object");
    for (auto &[key, value] : entry.items()) {
      (void)value;
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        return dataLoss(tensor + "unknown field " + quoteName(key));
    }
    if (!entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      return dataLoss(tensor +
                      "needs the fields dtype, shape and data_offsets");

    const auto &dtypeJson = entry["dtype"];
    if (!dtypeJson.is_string())
      return dataLoss(tensor + "dtype is not a string");
    std::optional<DType> dtype =
        parseDType(dtypeJson.get_ref<const std::string &>());
    if (!dtype)
      return dataLoss(tensor + "unknown dtype " +
                      quoteName(dtypeJson.get_ref<const std::string &>()));

    const auto &shapeJson = entry["shape"];
    if (!shapeJson.is_array())
      return dataLoss(tensor + "shape is not an array");
    TensorView view;
    view.name = name;
    view.dtype = *dtype;
    uint64_t numElements = 1;
    bool overflow = false;
    for (const auto &dim : shapeJson) {
      if (!dim.is_number_unsigned())
        return dataLoss(tensor + "shape " + shapeJson.dump() +
                        " has an entry that is not a non-negative integer");
      uint64_t d = dim.get<uint64_t>();
      if (d > static_cast<uint64_t>(INT64_MAX))
        return dataLoss(tensor + "shape " + shapeJson.dump() + " is too large");
      overflow |= __builtin_mul_overflow(numElements, d, &numElements);
      view.shape.push_back(static_cast<int64_t>(d));
    }
    uint64_t byteSize = 0;
    overflow |= __builtin_mul_overflow(numElements, dtypeSize(*dtype), &byteSize);

    const auto &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      return dataLoss(tensor + "data_offsets " + offsets.dump() +
                      " is not a pair of non-negative integers");
    const uint64_t begin = offsets[0].get<uint64_t>();
    const uint64_t end = offsets[1].get<uint64_t>();
    if (begin > end)
      return dataLoss(fmt::format("{}data_offsets [{}, {}] has begin > end",
                                  tensor, begin, end));
    if (end > dataSize)
      return dataLoss(fmt::format(
          "{}data_offsets [{}, {}] run past the data section ({} bytes); the "
          "file is truncated or the offsets are wrong",
          tensor, begin, end, dataSize));
    if (overflow || byteSize != end - begin)
      return dataLoss(fmt::format(
          "{}shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}",
          tensor, shapeJson.dump(), dtypeName(*dtype),
          overflow ? std::string("more than 2^64") : std::to_string(byteSize),
          begin, end, end - begin));

    view.dataBegin = begin;
    view.dataEnd = end;
    view.bytes = {base + dataStart + begin, static_cast<size_t>(end - begin)};
    ranges.push_back({begin, end, views.size()});
    views.push_back(std::move(view));
  }

  // Overlap check on the byte ranges, in offset order. Zero-size ranges hold
  // no bytes and so cannot overlap anything.
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const Range &a, const Range &b) {
                     return a.begin < b.begin;
                   });
  const Range *previous = nullptr;
  for (const Range &r : ranges) {
    if (r.begin == r.end)
      continue;
    if (previous && r.begin < previous->end)
      return dataLoss(fmt::format(
          "{}tensor {} (bytes [{}, {})) overlaps tensor {} (bytes [{}, {}))",
          where, quoteName(views[r.tensor].name), r.begin, r.end,
          quoteName(views[previous->tensor].name), previous->begin,
          previous->end));
    previous = &r;
  }

  file.tensors_.reserve(views.size());
  for (const Range &r : ranges) {
    file.index_.emplace(views[r.tensor].name, file.tensors_.size());
    file.tensors_.push_back(std::move(views[r.tensor]));
  }
  return file;
}

} // namespace dsc::runtime
