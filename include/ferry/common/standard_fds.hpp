#pragma once
/// \file
/// The standard fds 0, 1 and 2, made safe before a program opens anything.

namespace ferry {

/// Opens /dev/null on each of fds 0, 1 and 2 that is closed, so that the next fd the
/// program opens (an eventfd, a socket) cannot become its stdin, stdout or stderr: a
/// shell's `<&-` would otherwise feed that fd to a rank, or write rank output into it.
/// Call first in main. Returns false when /dev/null cannot be opened (the fds stay closed).
bool reopen_closed_standard_fds();

}  // namespace ferry
