// The throughput ceiling of a relay on this machine, without netsim: the least a userspace TCP
// relay can do, in C. One thread per direction, blocking sockets, TCP_NODELAY.
//   copy:   read(2) into a 1 MiB buffer, write(2) it out (two copies per byte, as netsim and socat)
//   splice: splice(2) socket -> pipe (F_SETPIPE_SZ 1 MiB) -> socket (no copy through user space)
// Usage: ceiling_relay copy|splice LISTEN_PORT UPSTREAM_PORT   (127.0.0.1 only; runs until killed)
// Used by ceiling.py (docs/benchmarks.md, "What a bare relay reaches"); not part of netsim.
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int splice_mode;
static const size_t chunk = 1 << 20;

struct direction { int from, to; int *finished; };

static void forward_by_splice(int from, int to) {
    int pipefd[2];
    if (pipe2(pipefd, 0) != 0) { perror("pipe2"); return; }
    if (fcntl(pipefd[0], F_SETPIPE_SZ, (int)chunk) < 0) perror("F_SETPIPE_SZ");
    for (;;) {
        ssize_t n = splice(from, NULL, pipefd[1], NULL, chunk, SPLICE_F_MOVE);
        if (n <= 0) break;
        while (n > 0) {
            ssize_t m = splice(pipefd[0], NULL, to, NULL, (size_t)n, SPLICE_F_MOVE);
            if (m <= 0) goto done;
            n -= m;
        }
    }
done:
    close(pipefd[0]);
    close(pipefd[1]);
}

static void forward_by_copy(int from, int to) {
    char *buffer = malloc(chunk);
    for (;;) {
        ssize_t n = read(from, buffer, chunk);
        if (n <= 0) break;
        for (char *p = buffer; n > 0;) {
            ssize_t m = write(to, p, (size_t)n);
            if (m <= 0) goto done;
            n -= m;
            p += m;
        }
    }
done:
    free(buffer);
}

static void *forward(void *argument) {
    struct direction d = *(struct direction *)argument;
    free(argument);
    if (splice_mode) forward_by_splice(d.from, d.to); else forward_by_copy(d.from, d.to);
    shutdown(d.to, SHUT_WR);
    // The second direction to finish closes both sockets.
    if (__atomic_add_fetch(d.finished, 1, __ATOMIC_SEQ_CST) == 2) { close(d.from); close(d.to); free(d.finished); }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "copy") && strcmp(argv[1], "splice"))) {
        fprintf(stderr, "usage: %s copy|splice LISTEN_PORT UPSTREAM_PORT\n", argv[0]);
        return 64;
    }
    splice_mode = strcmp(argv[1], "splice") == 0;
    int one = 1, listener = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in upstream = address;
    upstream.sin_port = htons(atoi(argv[3]));
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 16)) { perror("listen"); return 1; }
    for (;;) {
        int client = accept(listener, NULL, NULL);
        if (client < 0) continue;
        int server = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(server, (struct sockaddr *)&upstream, sizeof upstream)) { close(client); close(server); continue; }
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int *finished = calloc(1, sizeof *finished);
        struct direction *up = malloc(sizeof *up), *down = malloc(sizeof *down);
        *up = (struct direction){ client, server, finished };
        *down = (struct direction){ server, client, finished };
        pthread_t a, b;
        pthread_create(&a, NULL, forward, up);
        pthread_create(&b, NULL, forward, down);
        pthread_detach(a);
        pthread_detach(b);
    }
}
