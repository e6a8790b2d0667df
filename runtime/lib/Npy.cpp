//===- Npy.cpp - NumPy .npy files ------------------------------------------===//
#include "dsc/runtime/Npy.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dsc::runtime {
namespace {

const char *descrOf(DType dtype) {
  switch (dtype) {
  case DType::F32: return "<f4";
  case DType::F64: return "<f8";
  case DType::I32: return "<i4";
  case DType::I64: return "<i8";
  case DType::U8: return "|u1";
  case DType::Bool: return "|b1";
  case DType::I8: return "|i1";
  default: return nullptr;
  }
}

std::optional<DType> dtypeOfDescr(const std::string &descr) {
  if (descr == "<f4") return DType::F32;
  if (descr == "<f8") return DType::F64;
  if (descr == "<i4") return DType::I32;
  if (descr == "<i8") return DType::I64;
  if (descr == "|u1") return DType::U8;
  if (descr == "|b1") return DType::Bool;
  if (descr == "|i1") return DType::I8;
  return std::nullopt;
}

} // namespace

Status writeNpy(const std::string &path, const HostTensor &tensor) {
  const char *descr = descrOf(tensor.dtype());
  if (!descr)
    return invalidArgument(path + ": cannot write dtype " + dtypeName(tensor.dtype()) + " as .npy");
  std::ostringstream dict;
  dict << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    dict << tensor.shape()[i] << (tensor.shape().size() == 1 ? "," : i + 1 < tensor.shape().size() ? ", " : "");
  dict << "), }";
  std::string header = dict.str();
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out)
      return notFound(path + ": cannot create file");
    out.write("\x93NUMPY\x01\x00", 8);
    uint16_t len = uint16_t(header.size());
    out.put(char(len & 0xff));
    out.put(char(len >> 8));
    out << header;
    out.write(reinterpret_cast<const char *>(tensor.bytes()), std::streamsize(tensor.byteSize()));
    if (!out)
      return dataLoss(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return dataLoss(path + ": cannot rename the temporary file into place");
  return Status::ok();
}

Expected<HostTensor> readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return notFound(path + ": cannot open");
  char magic[8];
  if (!in.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY")
    return dataLoss(path + ": not a .npy file");
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char *>(b), 2);
    headerLen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char *>(b), 4);
    headerLen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  }
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen))
    return dataLoss(path + ": truncated header");
  auto field = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return header.substr(colon + 1);
  };
  std::string descrField = field("descr");
  size_t q1 = descrField.find('\''), q2 = descrField.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos)
    return dataLoss(path + ": header has no descr");
  std::string descr = descrField.substr(q1 + 1, q2 - q1 - 1);
  std::optional<DType> dtype = dtypeOfDescr(descr);
  if (!dtype)
    return invalidArgument(path + ": unsupported dtype '" + descr + "'");
  if (field("fortran_order").find("True") != std::string::npos &&
      field("fortran_order").find("True") < field("fortran_order").find(','))
    return invalidArgument(path + ": Fortran-order arrays are not supported");
  std::string shapeField = field("shape");
  size_t open = shapeField.find('('), close = shapeField.find(')');
  if (open == std::string::npos || close == std::string::npos)
    return dataLoss(path + ": header has no shape");
  std::vector<int64_t> shape;
  std::stringstream dims(shapeField.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos)
      continue;
    char *end = nullptr;
    long long d = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || d < 0)
      return dataLoss(path + ": bad shape entry '" + item + "'");
    shape.push_back(d);
  }
  HostTensor tensor(*dtype, shape);
  if (!in.read(reinterpret_cast<char *>(tensor.bytes()), std::streamsize(tensor.byteSize())))
    return dataLoss(path + ": truncated data (expected " + std::to_string(tensor.byteSize()) +
                    " bytes)");
  return tensor;
}

} // namespace dsc::runtime
