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
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/wire/codec.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry::wire {

template <class T>
concept HasFields = requires(T& t) {
  T::fields(t);
};

inline void put(Encoder& e, Magic) { e.raw({kMagic, sizeof kMagic - 1}); }
inline void put(Encoder& e, bool v) { e.u8(v ? 1 : 0); }
inline void put(Encoder& e, uint8_t v) { e.u8(v); }
inline void put(Encoder& e, uint16_t v) { e.u16(v); }
inline void put(Encoder& e, uint32_t v) { e.u32(v); }
inline void put(Encoder& e, int32_t v) { e.i32(v); }
inline void put(Encoder& e, uint64_t v) { e.u64(v); }
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
inline void get(Decoder& d, uint64_t& v) { v = d.u64(); }
inline void get(Decoder& d, std::string& v) { v = d.str(); }
/// Points into the decoder's input: valid as long as the frame is.
inline void get(Decoder& d, std::string_view& v) { v = d.raw(d.u32()); }

template <HasFields T>
void get(Decoder& d, T& m);

/// The fewest bytes a `T` takes on the wire, so a list's count can be checked against what
/// is left before anything is allocated for it.
template <class T>
constexpr size_t min_wire_size();

template <class Tuple, size_t... I>
constexpr size_t sum_min_wire_size(std::index_sequence<I...>) {
  return (size_t{0} + ... + min_wire_size<std::remove_cvref_t<std::tuple_element_t<I, Tuple>>>());
}

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
constexpr size_t min_wire_size() {
  if constexpr (std::is_same_v<T, Magic>)
    return sizeof kMagic - 1;
  else if constexpr (std::is_integral_v<T>)
    return sizeof(T);
  else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> ||
                     IsVector<T>::value)
    return 4;  // the length
  else if constexpr (HasFields<T>) {
    using Tuple = decltype(T::fields(std::declval<T&>()));
    return sum_min_wire_size<Tuple>(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
  } else
    return 1;  // a type with its own put/get: at least a byte
}

template <class T>
void get(Decoder& d, std::vector<T>& v) {
  uint32_t n = d.u32();
  // Refuse counts the input cannot hold, before reserving room for them: a 16 MiB frame
  // must not make ferryd allocate gigabytes.
  if (!d.ok() || n > d.left() / min_wire_size<T>()) return d.fail();
  v.clear();
  v.reserve(n);
  for (uint32_t i = 0; i < n && d.ok(); ++i) get(d, v.emplace_back());
}

template <HasFields T>
void get(Decoder& d, T& m) {
  std::apply([&d](auto&... f) { (get(d, f), ...); }, T::fields(m));
}

}  // namespace ferry::wire
