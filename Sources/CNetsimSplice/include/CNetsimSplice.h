#ifndef CNETSIM_SPLICE_H
#define CNETSIM_SPLICE_H
#include <stddef.h>
#include <stdint.h>

/// splice(2) with SPLICE_F_MOVE|SPLICE_F_NONBLOCK: bytes moved, 0 at end of input, -errno on error
/// (-ENOSYS where the system has no splice).
long netsim_splice(int from, int to, size_t length);
/// A non-blocking, close-on-exec pipe sized with F_SETPIPE_SZ (kept at the default where the
/// size is refused): its capacity in bytes, or -errno.
int netsim_pipe(int fds[2], int size);
/// dup(2) with close-on-exec: the descriptor or -errno.
int netsim_dup(int fd);
void netsim_close(int fd);

enum {
    NETSIM_EPOLLIN = 0x001,
    NETSIM_EPOLLOUT = 0x004,
    NETSIM_EPOLLERR = 0x008,
    NETSIM_EPOLLHUP = 0x010,
    NETSIM_EPOLLRDHUP = 0x2000,
};

/// An epoll instance with close-on-exec, or -errno.
int netsim_epoll_create(void);
/// Adds (or, `add` 0, re-arms) `fd` one-shot for `events`, with `data` handed back by the wait.
int netsim_epoll_arm(int epoll, int fd, uint32_t events, uint64_t data, int add);
int netsim_epoll_remove(int epoll, int fd);
/// Waits (forever when `timeout` < 0) and fills `data`/`events`: the count, or -errno.
int netsim_epoll_wait(int epoll, uint64_t *data, uint32_t *events, int capacity, int timeout);

#endif
