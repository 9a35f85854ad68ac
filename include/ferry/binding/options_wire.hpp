#pragma once
/// \file
/// How BindingOptions travel inside a HostSpec: the binding part owns its fields' layout,
/// the wire part only calls these (found by argument-dependent lookup).

#include "ferry/binding/options.hpp"
#include "ferry/wire/codec.hpp"

namespace ferry {

void put(wire::Encoder& e, const BindingOptions& b);
/// An enum value this release does not know marks the decoder failed.
void get(wire::Decoder& d, BindingOptions& b);

}  // namespace ferry
