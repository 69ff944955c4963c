#define _GNU_SOURCE
#include "CNetsimSplice.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/epoll.h>
#endif

// Linux only: splice(2), F_SETPIPE_SZ and epoll. Elsewhere every call but dup and close fails
// with ENOSYS, and the relay keeps every connection on its copying path.

long netsim_splice(int from, int to, size_t length) {
#ifdef __linux__
    ssize_t moved = splice(from, NULL, to, NULL, length, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    return moved < 0 ? -errno : (long)moved;
#else
    (void)from; (void)to; (void)length;
    return -ENOSYS;
#endif
}

int netsim_pipe(int fds[2], int size) {
#ifdef __linux__
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return -errno;
    int capacity = fcntl(fds[1], F_SETPIPE_SZ, size);
    if (capacity < 0) capacity = fcntl(fds[1], F_GETPIPE_SZ);
    if (capacity < 0) {
        int error = errno;
        close(fds[0]);
        close(fds[1]);
        return -error;
    }
    return capacity;
#else
    (void)fds; (void)size;
    return -ENOSYS;
#endif
}

int netsim_dup(int fd) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    return copy < 0 ? -errno : copy;
}

void netsim_close(int fd) { close(fd); }

int netsim_epoll_create(void) {
#ifdef __linux__
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    return epoll < 0 ? -errno : epoll;
#else
    return -ENOSYS;
#endif
}

int netsim_epoll_arm(int epoll, int fd, uint32_t events, uint64_t data, int add) {
#ifdef __linux__
    struct epoll_event event = { .events = events | EPOLLONESHOT, .data.u64 = data };
    return epoll_ctl(epoll, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event) == 0 ? 0 : -errno;
#else
    (void)epoll; (void)fd; (void)events; (void)data; (void)add;
    return -ENOSYS;
#endif
}

int netsim_epoll_remove(int epoll, int fd) {
#ifdef __linux__
    struct epoll_event event = { 0 };
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, &event) == 0 ? 0 : -errno;
#else
    (void)epoll; (void)fd;
    return -ENOSYS;
#endif
}

int netsim_epoll_wait(int epoll, uint64_t *data, uint32_t *events, int capacity, int timeout) {
#ifdef __linux__
    struct epoll_event ready[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epoll, ready, capacity, timeout);
    if (count < 0) return -errno;
    for (int i = 0; i < count; i++) {
        data[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
#else
    (void)epoll; (void)data; (void)events; (void)capacity; (void)timeout;
    return -ENOSYS;
#endif
}
