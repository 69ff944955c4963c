// The throughput ceiling of a relay on this machine, without netsim: the least a userspace TCP
// relay can do, in C. One thread per direction, blocking sockets, TCP_NODELAY.
//   copy:   read(2) into a 1 MiB buffer, write(2) it out (two copies per byte, as netsim and socat)
//   splice: splice(2) socket -> pipe (F_SETPIPE_SZ 1 MiB) -> socket (no copy through user space)
//   pipelined: copy, but a reader thread and a writer thread per direction, handing over 4 buffers
//           of 1 MiB in turn, so a read overlaps the write before it (does a 4th runnable thread
//           help on 2 cores?)
//   lowat:  copy, with SO_RCVLOWAT at 128 KiB (or $CEILING_LOWAT bytes) on each read side and a
//           1 ms SO_RCVTIMEO, so a read waits for a batch of segments instead of waking for each
//           one (as a NIC coalesces interrupts), and a tail under the mark is read within 1 ms
// Usage: ceiling_relay copy|splice|pipelined|lowat LISTEN_PORT UPSTREAM_PORT   (127.0.0.1 only; runs until killed)
// Used by ceiling.py (docs/benchmarks.md, "What a bare relay reaches"); not part of netsim.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum mode { COPY, SPLICE, PIPELINED, LOWAT };
static enum mode mode;
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
    if (mode == LOWAT) {
        const char *mark = getenv("CEILING_LOWAT");
        int lowat = mark ? atoi(mark) : 128 << 10;
        struct timeval patience = { .tv_sec = 0, .tv_usec = 1000 };
        if (setsockopt(from, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat)) perror("SO_RCVLOWAT");
        setsockopt(from, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    }
    for (;;) {
        ssize_t n = read(from, buffer, chunk);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;  // lowat: nothing within 1 ms
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

// pipelined: a ring of buffers, filled by the reader (this direction's thread), emptied by a writer.
enum { slots = 4 };
struct ring {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char *buffer[slots];
    ssize_t length[slots];  // bytes in a filled slot; 0 = end of stream
    unsigned filled, emptied;  // slots handed over so far by each side
    int to;
};

static void *write_ring(void *argument) {
    struct ring *r = argument;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        while (r->emptied == r->filled) pthread_cond_wait(&r->changed, &r->lock);
        pthread_mutex_unlock(&r->lock);
        unsigned slot = r->emptied % slots;
        ssize_t n = r->length[slot];
        int failed = n <= 0;
        for (char *p = r->buffer[slot]; n > 0;) {
            ssize_t m = write(r->to, p, (size_t)n);
            if (m <= 0) { failed = 1; break; }
            n -= m;
            p += m;
        }
        pthread_mutex_lock(&r->lock);
        r->emptied += 1;
        pthread_cond_signal(&r->changed);
        pthread_mutex_unlock(&r->lock);
        if (failed) return NULL;
    }
}

static void forward_pipelined(int from, int to) {
    struct ring r = { .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER, .to = to };
    for (int i = 0; i < slots; i++) r.buffer[i] = malloc(chunk);
    pthread_t writer;
    pthread_create(&writer, NULL, write_ring, &r);
    for (ssize_t n = 1; n > 0;) {
        pthread_mutex_lock(&r.lock);
        while (r.filled - r.emptied == slots) pthread_cond_wait(&r.changed, &r.lock);
        pthread_mutex_unlock(&r.lock);
        unsigned slot = r.filled % slots;
        n = read(from, r.buffer[slot], chunk);
        r.length[slot] = n;
        pthread_mutex_lock(&r.lock);
        r.filled += 1;
        pthread_cond_signal(&r.changed);
        pthread_mutex_unlock(&r.lock);
    }
    pthread_join(writer, NULL);
    for (int i = 0; i < slots; i++) free(r.buffer[i]);
}

static void *forward(void *argument) {
    struct direction d = *(struct direction *)argument;
    free(argument);
    if (mode == SPLICE) forward_by_splice(d.from, d.to);
    else if (mode == PIPELINED) forward_pipelined(d.from, d.to);
    else forward_by_copy(d.from, d.to);
    shutdown(d.to, SHUT_WR);
    // The second direction to finish closes both sockets.
    if (__atomic_add_fetch(d.finished, 1, __ATOMIC_SEQ_CST) == 2) { close(d.from); close(d.to); free(d.finished); }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "copy") && strcmp(argv[1], "splice") && strcmp(argv[1], "pipelined") && strcmp(argv[1], "lowat"))) {
        fprintf(stderr, "usage: %s copy|splice|pipelined|lowat LISTEN_PORT UPSTREAM_PORT\n", argv[0]);
        return 64;
    }
    mode = !strcmp(argv[1], "splice") ? SPLICE : !strcmp(argv[1], "pipelined") ? PIPELINED : !strcmp(argv[1], "lowat") ? LOWAT : COPY;
    signal(SIGPIPE, SIG_IGN);  // a write to a closed peer is an error return, not the end of the relay
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
