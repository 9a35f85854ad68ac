#pragma once
/// \file
/// How BindingOptions travel inside a HostSpec: their fields' layout, in the wire part (which
/// uses binding's options struct; binding itself knows nothing of the wire). The message
/// codec calls these (found by argument-dependent lookup).

#include "ferry/binding/options.hpp"
#include "ferry/wire/codec.hpp"

namespace ferry {

void put(wire::Encoder& e, const BindingOptions& b);
/// An enum value this release does not know marks the decoder failed.
void get(wire::Decoder& d, BindingOptions& b);

}  // namespace ferry
