#define _GNU_SOURCE
#include "CNetsimPacket.h"

#ifdef __linux__
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>

int cnetsim_ppoll(void *fds, unsigned long count, int64_t timeout_ns) {
    if (timeout_ns < 0) return ppoll((struct pollfd *)fds, (nfds_t)count, NULL, NULL);
    struct timespec timeout = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };
    return ppoll((struct pollfd *)fds, (nfds_t)count, &timeout, NULL);
}

int cnetsim_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

#else
#include <errno.h>
int cnetsim_ppoll(void *fds, unsigned long count, int64_t timeout_ns) { (void)fds; (void)count; (void)timeout_ns; errno = ENOSYS; return -1; }
int cnetsim_eventfd(void) { errno = ENOSYS; return -1; }
#endif
