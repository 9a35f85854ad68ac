#pragma once
/// \file
/// A port for the job's rendezvous (MASTER_PORT's default), found by ferryd on its host.

#include <cstdint>
#include <string_view>

namespace ferry {

/// A TCP port that is free on this host now and that no outgoing connection will take before
/// the rank binds it: one outside the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`, where connect(2) and bind(2) to port 0 pick theirs) and
/// not reserved by the administrator (`net.ipv4.ip_local_reserved_ports`). A port the kernel
/// picks (inside that range) only when none outside could be bound; 0 when none could be had.
uint16_t find_free_port();

/// Whether `port` is in `reserved`, the text of `ip_local_reserved_ports` ("8080,9000-9100").
bool port_is_reserved(uint16_t port, std::string_view reserved);

}  // namespace ferry
