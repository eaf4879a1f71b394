/* SPDX-License-Identifier: MIT */
/*
 * The process-wide log handler: the one place where the library's own
 * lines (misuse reports and unhandled errors of the default misuse
 * handler, the message before an out-of-memory abort, the default loop
 * dump, the libuv backend's warnings) leave the library. The handler and its data are one pair,
 * swapped and read under a mutex that is never held while a handler runs,
 * so that a handler may call the library (and even set the handler) and
 * nothing here allocates: the out-of-memory path reports through it.
 */
#include "common/log.h"

#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FutoInLogHandler g_handler = futoin_log_stderr;
static void* g_data;

void futoin_log_stderr(void* data, int kind, const char* line)
{
    (void)data;
    (void)kind;
    /* One call: stdio locks stderr for it, so that lines of different
     * threads do not mix. */
    fprintf(stderr, "%s\n", line);
}

FutoInLogHandler futoin_set_log_handler(FutoInLogHandler handler, void* data, void** prev_data)
{
    if (!handler) {
        handler = futoin_log_stderr;
        data = NULL;
    }
    pthread_mutex_lock(&g_lock);
    FutoInLogHandler prev = g_handler;
    void* pdata = g_data;
    g_handler = handler;
    g_data = data;
    pthread_mutex_unlock(&g_lock);
    if (prev_data) {
        *prev_data = pdata;
    }
    return prev;
}

FutoInLogHandler futoin__log_handler(void** data)
{
    pthread_mutex_lock(&g_lock);
    FutoInLogHandler h = g_handler;
    *data = g_data;
    pthread_mutex_unlock(&g_lock);
    return h;
}

void futoin_log_write(int kind, const char* line)
{
    if (!line) {
        return;
    }
    void* data;
    FutoInLogHandler h = futoin__log_handler(&data);
    h(data, kind, line);
}

void futoin__log_misuse(const char* info)
{
    /* The engine's reports are at most 255 characters; a longer info is
     * cut, never allocated for. */
    char line[512];
    snprintf(line, sizeof(line), "futoin: API misuse: %s", info);
    futoin_log_write(FUTOIN_LOG_MISUSE, line);
}

void futoin__log_unhandled(const char* report)
{
    char line[512];
    snprintf(line, sizeof(line), "futoin: %s", report);
    futoin_log_write(FUTOIN_LOG_WARNING, line);
}
