#pragma once
/// \file
/// Owners for what hwloc allocates: topologies, bitmaps and the strings its *_asprintf
/// functions return. Each is freed on every path, failed loads and early returns included.

#include <hwloc.h>

#include <cstdlib>
#include <memory>

namespace ferry {

struct HwlocTopologyDestroy {
  void operator()(hwloc_topology_t topology) const { hwloc_topology_destroy(topology); }
};
/// Owns a topology from hwloc_topology_init() on, loaded or not.
using HwlocTopologyPtr = std::unique_ptr<hwloc_topology, HwlocTopologyDestroy>;

struct HwlocBitmapFree {
  void operator()(hwloc_bitmap_t bitmap) const { hwloc_bitmap_free(bitmap); }
};
/// Owns a bitmap (cpuset, nodeset) from hwloc_bitmap_alloc() or hwloc_bitmap_dup().
using HwlocBitmapPtr = std::unique_ptr<hwloc_bitmap_s, HwlocBitmapFree>;

/// A new empty bitmap; null when out of memory.
inline HwlocBitmapPtr new_hwloc_bitmap() { return HwlocBitmapPtr(hwloc_bitmap_alloc()); }

struct HwlocStringFree {
  void operator()(char* text) const { std::free(text); }
};
/// Owns a string hwloc allocated with malloc (hwloc_bitmap_list_asprintf and friends).
using HwlocStringPtr = std::unique_ptr<char, HwlocStringFree>;

}  // namespace ferry
