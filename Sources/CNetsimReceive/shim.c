#define _GNU_SOURCE
#include "CNetsimReceive.h"

#include <errno.h>

#ifdef __linux__
#include <string.h>
#include <sys/socket.h>
#include <time.h>

int cnetsim_receive_times_enable(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

uint64_t cnetsim_socket_cookie(int fd) {
    uint64_t cookie = 0;
    socklen_t length = sizeof cookie;
    if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &length) != 0) return 0;
    return cookie;
}

int cnetsim_socket_cookie_option(void) { return SO_COOKIE; }

static int64_t nanoseconds(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

ssize_t cnetsim_receive_timed(int fd, void *buffer, size_t length, int64_t *arrived_ns) {
    struct iovec vector = { .iov_base = buffer, .iov_len = length };
    union { char space[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space };
    *arrived_ns = -1;
    ssize_t count = recvmsg(fd, &message, MSG_DONTWAIT);
    if (count <= 0) return count;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_TIMESTAMPNS) continue;
        struct timespec stamp;
        memcpy(&stamp, CMSG_DATA(header), sizeof stamp);
        // The stamp is wall-clock time; the monotonic clock is the event loop's. The offset
        // between the two, read now, moves only by NTP's slewing: nanoseconds over a read.
        int64_t real = (int64_t)stamp.tv_sec * 1000000000 + stamp.tv_nsec;
        int64_t monotonic = nanoseconds(CLOCK_MONOTONIC);
        *arrived_ns = real - (nanoseconds(CLOCK_REALTIME) - monotonic);
    }
    return count;
}

#else
int cnetsim_receive_times_enable(int fd) { (void)fd; errno = ENOSYS; return -1; }
uint64_t cnetsim_socket_cookie(int fd) { (void)fd; return 0; }
int cnetsim_socket_cookie_option(void) { return -1; }
ssize_t cnetsim_receive_timed(int fd, void *buffer, size_t length, int64_t *arrived_ns) {
    (void)fd; (void)buffer; (void)length; *arrived_ns = -1; errno = ENOSYS; return -1;
}
#endif
