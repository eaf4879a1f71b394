/* SPDX-License-Identifier: MIT */
/*
 * A test server that answers with fixed bytes, however malformed, so that
 * tests/uv/http_client.sh can show what the example client makes of them:
 *
 *   http_canned_server RESPONSE...
 *
 * Listens on 127.0.0.1 (any free port, printed as "listening on
 * http://127.0.0.1:PORT/"), and answers "GET /N ..." with the bytes of the
 * N-th RESPONSE argument (from 1), then closes its side and waits briefly
 * for the client to close (a reset could destroy the answer). One
 * connection at a time; runs until killed.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

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

static void serve(int fd, int argc, char** argv)
{
    char req[4096];
    size_t len = 0;
    while (len < sizeof(req) - 1) {
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
    int n = 0;
    if (sscanf(req, "GET /%d ", &n) == 1 && n >= 1 && n < argc) {
        send_all(fd, argv[n], strlen(argv[n]));
    }
    shutdown(fd, SHUT_WR);
    while (recv(fd, req, sizeof(req), 0) > 0) {
    }
}

int main(int argc, char** argv)
{
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    if (ls < 0 || bind(ls, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(ls, 64) != 0
            || getsockname(ls, (struct sockaddr*)&a, &alen) != 0) {
        perror("http_canned_server");
        return 1;
    }
    printf("listening on http://127.0.0.1:%u/\n", (unsigned)ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        /* A client that neither sends nor closes does not stop the others
         * for long. */
        struct timeval tv = { 2, 0 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        serve(fd, argc, argv);
        close(fd);
    }
}
