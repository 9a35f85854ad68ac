#pragma once
/// \file
/// Little-endian binary encoding of integers, strings and string lists for frames.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::wire {

/// Appends encoded values to a byte string.
class Encoder {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { fixed(v, 2); }
  void u32(uint32_t v) { fixed(v, 4); }
  void i32(int32_t v) { fixed(static_cast<uint32_t>(v), 4); }
  void u64(uint64_t v) { fixed(v, 8); }
  /// Length (u32) then bytes.
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void strs(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  /// Raw bytes with no length (for fixed magic).
  void raw(std::string_view s) { out_.append(s); }
  std::string& bytes() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void fixed(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

/// Reads values back; after any read past the end `ok()` is false and reads return zeros.
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  uint8_t u8() { return static_cast<uint8_t>(fixed(1)); }
  uint16_t u16() { return static_cast<uint16_t>(fixed(2)); }
  uint32_t u32() { return static_cast<uint32_t>(fixed(4)); }
  int32_t i32() { return static_cast<int32_t>(static_cast<uint32_t>(fixed(4))); }
  uint64_t u64() { return fixed(8); }
  std::string str() {
    uint32_t n = u32();
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::vector<std::string> strs() {
    uint32_t n = u32();
    std::vector<std::string> v;
    // Each string needs at least 4 bytes: refuse counts the input cannot hold.
    if (!ok_ || n > (in_.size() - pos_) / 4) {
      ok_ = false;
      return v;
    }
    v.reserve(n);
    for (uint32_t i = 0; i < n && ok_; ++i) v.push_back(str());
    return v;
  }
  std::string_view raw(size_t n) {
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    auto s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  /// Bytes not read yet.
  size_t left() const { return in_.size() - pos_; }
  /// Marks the input malformed (a value out of its range): ok() is false from now on.
  void fail() { ok_ = false; }

 private:
  uint64_t fixed(int n) {
    if (!ok_ || in_.size() - pos_ < static_cast<size_t>(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace ferry::wire
