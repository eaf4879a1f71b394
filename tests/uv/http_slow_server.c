/* SPDX-License-Identifier: MIT */
/*
 * A test server for tests/uv/http_client_recipe.sh: slow answers, no
 * answer at all, and a count of the requests it holds at once, so that the
 * script can check the example client's bound on requests in flight:
 *
 *   http_slow_server
 *
 * Listens on 127.0.0.1 (any free port, printed as "listening on
 * http://127.0.0.1:PORT/"), a thread per connection, one request per
 * connection, and answers
 *   GET /wait/MS  200 "ok" after MS milliseconds (a slow backend);
 *   GET /never    nothing: it reads until the client closes;
 *   GET /max      200 "max M held H": M, the greatest number of requests
 *                 held at once since the previous /max, and H, the number
 *                 held now; the count starts again from H. Not counted
 *                 itself.
 * A request is held from when its head has been read until the server
 * starts its answer (or, for /never, until the client closes). The count
 * goes down before the answer is sent, so a client that waits for an
 * answer before it sends its next request is never counted twice. Runs
 * until killed.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_held;
static int g_max;

static void held_add(int d)
{
    pthread_mutex_lock(&g_lock);
    g_held += d;
    if (g_held > g_max) {
        g_max = g_held;
    }
    pthread_mutex_unlock(&g_lock);
}

static void send_all(int fd, const char* p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) {
            return;
        }
        p += k;
        n -= (size_t)k;
    }
}

static void answer(int fd, const char* body)
{
    char buf[256];
    int n = snprintf(buf, sizeof(buf),
            "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", strlen(body),
            body);
    send_all(fd, buf, (size_t)n);
}

/* Reads until the client closes (or fails). */
static void drain(int fd)
{
    char buf[4096];
    while (recv(fd, buf, sizeof(buf), 0) > 0) {
    }
}

static void serve(int fd)
{
    char req[4096];
    size_t len = 0;
    for (;;) {
        if (len == sizeof(req) - 1) {
            return;
        }
        ssize_t k = recv(fd, req + len, sizeof(req) - 1 - len, 0);
        if (k <= 0) {
            return;
        }
        len += (size_t)k;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n")) {
            break;
        }
    }
    unsigned ms = 0;
    if (strncmp(req, "GET /max ", 9) == 0) {
        char body[64];
        pthread_mutex_lock(&g_lock);
        snprintf(body, sizeof(body), "max %d held %d", g_max, g_held);
        g_max = g_held;
        pthread_mutex_unlock(&g_lock);
        answer(fd, body);
    } else if (strncmp(req, "GET /never ", 11) == 0) {
        held_add(1);
        drain(fd);
        held_add(-1);
        return;
    } else if (sscanf(req, "GET /wait/%u ", &ms) == 1 && ms <= 600000) {
        held_add(1);
        struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) != 0) {
        }
        held_add(-1);
        answer(fd, "ok");
    } else {
        static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        send_all(fd, nf, sizeof(nf) - 1);
    }
    /* Closes its side, then waits for the client to close (closing first
     * with unread bytes could reset the connection and lose the answer). */
    shutdown(fd, SHUT_WR);
    drain(fd);
}

static void* conn_thread(void* p)
{
    int fd = (int)(intptr_t)p;
    serve(fd);
    close(fd);
    return NULL;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    if (ls < 0 || bind(ls, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(ls, 128) != 0
            || getsockname(ls, (struct sockaddr*)&a, &alen) != 0) {
        perror("http_slow_server");
        return 1;
    }
    printf("listening on http://127.0.0.1:%u/\n", (unsigned)ntohs(a.sin_port));
    fflush(stdout);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &attr, conn_thread, (void*)(intptr_t)fd) != 0) {
            close(fd);
        }
    }
}
