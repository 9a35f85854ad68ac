#pragma once
// The sync part's tests: a fresh cache folder, a file's bytes, and tree entries made by hand.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/tree.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry::sync_test {

/// `PREFIX-NAME` under the test's temporary folder, removed if a run before left it.
inline std::string fresh(const std::string& prefix, const std::string& name) {
  std::string dir = ::testing::TempDir() + prefix + "-" + name;
  if (std::filesystem::exists(dir)) FileCache::remove_copy(dir);
  return dir;
}

/// An empty folder `PREFIX-NAME` under the test's temporary folder (one a run before left is
/// removed first).
inline std::string empty_dir(const std::string& prefix, const std::string& name) {
  std::string dir = ::testing::TempDir() + prefix + "-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A file with these bytes, its folders made first.
inline void write_file(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::trunc) << bytes;
}

inline std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A file of the tree with these bytes (its size and SHA-256).
inline TreeEntry file(const std::string& path, const std::string& bytes, uint32_t mode = 0644) {
  TreeEntry e;
  e.path = path;
  e.kind = TreeEntry::Kind::kFile;
  e.mode = mode;
  e.size = bytes.size();
  e.hash = *bytes_sha256(bytes);
  return e;
}

inline TreeEntry dir(const std::string& path, uint32_t mode = 0755) {
  TreeEntry e;
  e.path = path;
  e.kind = TreeEntry::Kind::kDirectory;
  e.mode = mode;
  return e;
}

}  // namespace ferry::sync_test
