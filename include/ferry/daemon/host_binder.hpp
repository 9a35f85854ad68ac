#pragma once
/// \file
/// HostBinder moved to the binding part: include "ferry/binding/host_binder.hpp". This
/// forwarding header only keeps src/daemon/daemon.cpp building until its include names the
/// new path; delete it then.

#include "ferry/binding/host_binder.hpp"
