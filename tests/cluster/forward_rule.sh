# shellcheck shell=bash
# forward_allow BRIDGE / forward_revoke BRIDGE: let traffic between the ports of one of
# the test cluster's bridges through this machine's iptables FORWARD chain, and take
# that back.
#
# Why: a running dockerd sets the FORWARD policy to DROP and loads br_netfilter, so
# frames bridged between two namespaces (rank to rank, gloo, MPICH) pass FORWARD and are
# dropped there, while SSH from the root namespace (not forwarded) still works. One rule
# per bridge, marked with a comment, inserted on `up` and deleted on `down`; nothing
# else of the machine's firewall is touched. Without iptables there is no dockerd
# either, and nothing to do.

_forward_rule_args() {
  echo "FORWARD -i $1 -o $1 -m comment --comment ferry-test-bridge-$1 -j ACCEPT"
}

forward_allow() {
  command -v iptables >/dev/null 2>&1 || return 0
  # A kernel without netfilter (iptables cannot list the chain) filters nothing either.
  iptables -S FORWARD >/dev/null 2>&1 || return 0
  # shellcheck disable=SC2046 # word splitting of the rule is intended
  iptables -C $(_forward_rule_args "$1") 2>/dev/null && return 0
  # shellcheck disable=SC2046
  iptables -I $(_forward_rule_args "$1")
}

forward_revoke() {
  command -v iptables >/dev/null 2>&1 || return 0
  # shellcheck disable=SC2046
  while iptables -D $(_forward_rule_args "$1") 2>/dev/null; do :; done
}
