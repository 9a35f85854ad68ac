#include "ferry/wire/binding_options.hpp"

namespace ferry {
namespace {

// Devices a host can name; a larger count is a corrupt message.
constexpr uint32_t kMaxDevices = 4096;

}  // namespace

void put(wire::Encoder& e, const BindingOptions& b) {
  e.u8(static_cast<uint8_t>(b.bind_to));
  e.u8(static_cast<uint8_t>(b.map_by));
  e.i32(b.pe);
  e.i32(b.cpus_per_rank);
  e.i32(b.devices_per_rank);
  e.u8(b.bind_mem ? 1 : 0);
  e.u8(b.isolate_devices ? 1 : 0);
  e.u8(b.report_bindings ? 1 : 0);
  e.u32(static_cast<uint32_t>(b.devices.size()));
  for (int dev : b.devices) e.i32(dev);
  e.u32(static_cast<uint32_t>(b.rank_slots.size()));
  for (const auto& slots : b.rank_slots) e.str(slots);
}

void get(wire::Decoder& d, BindingOptions& b) {
  const uint8_t bind_to = d.u8(), map_by = d.u8();
  if (bind_to > static_cast<uint8_t>(BindTo::kSocket) ||
      map_by > static_cast<uint8_t>(MapBy::kSocket))
    d.fail();
  b.bind_to = static_cast<BindTo>(bind_to);
  b.map_by = static_cast<MapBy>(map_by);
  b.pe = d.i32();
  b.cpus_per_rank = d.i32();
  b.devices_per_rank = d.i32();
  b.bind_mem = d.u8() != 0;
  b.isolate_devices = d.u8() != 0;
  b.report_bindings = d.u8() != 0;
  const uint32_t n = d.u32();
  if (n > kMaxDevices || n > d.left() / 4) return d.fail();
  b.devices.clear();
  for (uint32_t i = 0; i < n; ++i) b.devices.push_back(d.i32());
  const uint32_t slots = d.u32();
  if (slots > d.left() / 4) return d.fail();
  b.rank_slots.clear();
  for (uint32_t i = 0; i < slots; ++i) b.rank_slots.push_back(d.str());
}

}  // namespace ferry
