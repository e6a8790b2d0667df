//===- InputFileTest.cpp - Inputs that are regular files, opened without waiting ===//
//
// RegularFile::open / readRegularFile (dsc/runtime/InputFile.h): a regular
// file opens and reads whole; a FIFO without a writer, a character device
// (/dev/zero) and a directory are refused at once with InvalidArgument
// naming the path and the role; a missing file is NotFound; a file over the
// limit is refused before it is read. The FIFO case runs in a thread with a
// deadline, so a regression fails instead of hanging.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/InputFile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>

#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace dsc::runtime;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

fs::path scratchDir() {
  fs::path dir = fs::temp_directory_path() / ("dsc-inputfile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(InputFile, ReadsARegularFileWhole) {
  const fs::path path = scratchDir() / "ids.txt";
  std::ofstream(path) << "1 2 3\n";
  Expected<std::string> text = readRegularFile(path.string(), "id file", 100);
  ASSERT_TRUE(text) << text.status().message();
  EXPECT_EQ(*text, "1 2 3\n");
  Expected<RegularFile> file = RegularFile::open(path.string(), "id file");
  ASSERT_TRUE(file);
  EXPECT_EQ(file->size(), 6u);
  char c = 0;
  EXPECT_EQ(::read(file->fd(), &c, 1), 1) << "the descriptor reads (O_NONBLOCK cleared)";
  EXPECT_EQ(c, '1');
  char rest[8] = {};
  EXPECT_EQ(file->read(rest, 8).code(), StatusCode::DataLoss) << "5 bytes left, not 8";
}

TEST(InputFile, RefusesWhatIsNotARegularFileWithoutWaiting) {
  const fs::path fifo = scratchDir() / "fifo";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens the FIFO: a blocking open would never return.
  auto refused = std::async(std::launch::async, [&] {
    return readRegularFile(fifo.string(), "plan", 1 << 20).status();
  });
  ASSERT_EQ(refused.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the open waited on the FIFO";
  const Status s = refused.get();
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(fifo.string() + ": not a regular file (the plan"));
  for (const std::string &other : {std::string("/dev/zero"), scratchDir().string()}) {
    Expected<RegularFile> fd = RegularFile::open(other, "id file");
    ASSERT_FALSE(fd) << other;
    EXPECT_EQ(fd.status().code(), StatusCode::InvalidArgument) << other;
    EXPECT_THAT(fd.status().message(), HasSubstr(other + ": not a regular file"));
  }
  fs::remove(fifo);
}

TEST(InputFile, NamesAMissingFileAndAFileOverTheLimit) {
  const fs::path missing = scratchDir() / "missing.dscp";
  Expected<RegularFile> fd = RegularFile::open(missing.string(), "plan");
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.status().code(), StatusCode::NotFound);
  EXPECT_THAT(fd.status().message(), HasSubstr(missing.string() + ": cannot open plan"));
  const fs::path big = scratchDir() / "big.txt";
  std::ofstream(big) << std::string(101, '7');
  Expected<std::string> text = readRegularFile(big.string(), "id file", 100);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.status().code(), StatusCode::InvalidArgument);
  EXPECT_THAT(text.status().message(),
              HasSubstr("the id file holds 101 bytes, more than the 100 accepted"));
}

} // namespace
