// hwloc, linked in from libhwloc.a (cmake/portable.cmake), asks libudev for the names
// of block devices, an operating-system device ferryd never looks at. These stand-ins say
// "no udev", which hwloc handles (it then reads sysfs alone), so the shipped ferryd needs no
// libudev on the host.

extern "C" {

struct udev;
struct udev_device;

udev* udev_new() { return nullptr; }
udev* udev_unref(udev*) { return nullptr; }
udev_device* udev_device_new_from_subsystem_sysname(udev*, const char*, const char*) {
  return nullptr;
}
udev_device* udev_device_unref(udev_device*) { return nullptr; }
const char* udev_device_get_property_value(udev_device*, const char*) { return nullptr; }
}
