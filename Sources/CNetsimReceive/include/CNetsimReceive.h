#ifndef CNETSIM_RECEIVE_H
#define CNETSIM_RECEIVE_H

// What the relay needs to count an injected delay from when the kernel received the bytes
// rather than from when its event loop got round to reading them: the kernel's receive time
// of TCP data (SO_TIMESTAMPNS, delivered as a control message by recvmsg(2), which SwiftNIO's
// stream channels do not call; CMSG_* are macros Swift does not import) and a socket's
// identity (SO_COOKIE). Linux only; elsewhere every call fails with ENOSYS.

#include <stdint.h>
#include <sys/types.h>

/// Asks the kernel to stamp what `fd` receives (SO_TIMESTAMPNS). 0, or -1 with errno.
int cnetsim_receive_times_enable(int fd);

/// The socket's cookie (SO_COOKIE): unique for the life of the system; 0 when unknown.
uint64_t cnetsim_socket_cookie(int fd);

/// SO_COOKIE's option name (for asking a SwiftNIO channel the same question), or -1.
int cnetsim_socket_cookie_option(void);

/// recvmsg(2) without blocking. On success `*arrived_ns` is the kernel's receive time of the
/// last segment read, on the CLOCK_MONOTONIC timeline, or -1 when the kernel gave none.
/// Returns the byte count, 0 at EOF, or -1 with errno (EAGAIN when nothing is waiting).
ssize_t cnetsim_receive_timed(int fd, void *buffer, size_t length, int64_t *arrived_ns);

#endif
