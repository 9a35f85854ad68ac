#pragma once
/// \file
/// Encodes and decodes a message from its one field list (`M::fields(m)`, a std::tie of
/// its members): integers little-endian, bools as one byte, strings and lists length-first,
/// nested structs field by field. A type outside this list (BindingOptions) brings its own
/// `put(Encoder&, const T&)` / `get(Decoder&, T&)`, found next to the type.

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ferry/wire/codec.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry::wire {

template <class T>
concept HasFields = requires(T& t) { T::fields(t); };

inline void put(Encoder& e, Magic) { e.raw({kMagic, sizeof kMagic - 1}); }
inline void put(Encoder& e, bool v) { e.u8(v ? 1 : 0); }
inline void put(Encoder& e, uint8_t v) { e.u8(v); }
inline void put(Encoder& e, uint16_t v) { e.u16(v); }
inline void put(Encoder& e, uint32_t v) { e.u32(v); }
inline void put(Encoder& e, int32_t v) { e.i32(v); }
inline void put(Encoder& e, std::string_view v) { e.str(v); }
inline void put(Encoder& e, const std::string& v) { e.str(v); }

template <HasFields T>
void put(Encoder& e, const T& m);

template <class T>
void put(Encoder& e, const std::vector<T>& v) {
  e.u32(static_cast<uint32_t>(v.size()));
  for (const auto& x : v) put(e, x);
}

template <HasFields T>
void put(Encoder& e, const T& m) {
  std::apply([&e](const auto&... f) { (put(e, f), ...); }, T::fields(m));
}

/// A foreign stream fails here, before any other field is looked at.
inline void get(Decoder& d, Magic) {
  if (d.raw(sizeof kMagic - 1) != std::string_view(kMagic, sizeof kMagic - 1)) d.fail();
}
inline void get(Decoder& d, bool& v) {
  uint8_t b = d.u8();
  if (b > 1) d.fail();
  v = b == 1;
}
inline void get(Decoder& d, uint8_t& v) { v = d.u8(); }
inline void get(Decoder& d, uint16_t& v) { v = d.u16(); }
inline void get(Decoder& d, uint32_t& v) { v = d.u32(); }
inline void get(Decoder& d, int32_t& v) { v = d.i32(); }
inline void get(Decoder& d, std::string& v) { v = d.str(); }
/// Points into the decoder's input: valid as long as the frame is.
inline void get(Decoder& d, std::string_view& v) { v = d.raw(d.u32()); }

template <HasFields T>
void get(Decoder& d, T& m);

template <class T>
void get(Decoder& d, std::vector<T>& v) {
  uint32_t n = d.u32();
  // Every element takes at least one byte: refuse counts the input cannot hold.
  if (!d.ok() || n > d.left()) return d.fail();
  v.clear();
  v.reserve(n);
  for (uint32_t i = 0; i < n && d.ok(); ++i) get(d, v.emplace_back());
}

template <HasFields T>
void get(Decoder& d, T& m) {
  std::apply([&d](auto&... f) { (get(d, f), ...); }, T::fields(m));
}

}  // namespace ferry::wire
