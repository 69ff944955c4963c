#ifndef CNETSIM_PACKET_H
#define CNETSIM_PACKET_H

// The Linux calls the packet path needs that Swift's Glibc module does not import (GNU
// extensions, declared only with _GNU_SOURCE): ppoll, for a nanosecond wait on the TUN devices;
// eventfd, to wake that wait when the shell stops. (Spawning is CNetsimSpawn's.)

#include <stdint.h>

/// ppoll(2) on `count` descriptors; `timeout_ns` < 0 waits forever.
int cnetsim_ppoll(void *fds, unsigned long count, int64_t timeout_ns);

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), or -1 with errno.
int cnetsim_eventfd(void);

#endif
