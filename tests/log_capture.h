/* SPDX-License-Identifier: MIT */
/*
 * A log handler for tests (futoin_set_log_handler()): keeps the kind and
 * text of every line the library prints, up to LOG_CAPTURE_MAX of them
 * (n counts them all), so that a test asserts on what would have gone to
 * stderr. log_capture_start() installs it on a cleared record,
 * log_capture_stop() puts the default back.
 */
#ifndef FUTOIN_TEST_LOG_CAPTURE_H
#define FUTOIN_TEST_LOG_CAPTURE_H

#include <futoin/asynctool.h>

#include <stdio.h>
#include <string.h>

#define LOG_CAPTURE_MAX 64

typedef struct {
    int n;
    int kinds[LOG_CAPTURE_MAX];
    char lines[LOG_CAPTURE_MAX][256];
} Captured;

static inline void log_capture(void* data, int kind, const char* line)
{
    Captured* c = data;
    if (c->n < LOG_CAPTURE_MAX) {
        c->kinds[c->n] = kind;
        snprintf(c->lines[c->n], sizeof(c->lines[c->n]), "%s", line);
    }
    ++c->n;
}

static inline void log_capture_start(Captured* c)
{
    memset(c, 0, sizeof(*c));
    futoin_set_log_handler(log_capture, c, NULL);
}

static inline void log_capture_stop(void)
{
    futoin_set_log_handler(NULL, NULL, NULL);
}

#endif
