/* SPDX-License-Identifier: MIT */
/*
 * Name lookups (getaddrinfo) that a cancel really lets go of.
 *
 * libuv runs uv_getaddrinfo() on its thread pool, and a lookup that already
 * runs cannot be withdrawn: the request stays active, and an active request
 * keeps uv_run() alive until it ends, which against a resolver that never
 * answers is the resolver's whole timeout (resolv.conf: timeout × attempts
 * × servers, 10 s by default). It also holds one of the pool's few threads.
 *
 * So a lookup runs getaddrinfo() on a thread of its own and hands the
 * result back through a uv_async_t. The async handle is what keeps the
 * loop alive while the step waits; a cancel closes it, and the thread, once
 * getaddrinfo() returns, frees what is left without touching the loop.
 *
 * Nobody waits for such a thread, yet each is joined once it has ended: a
 * finished thread puts itself on a process-wide list, which the next
 * lookup and the library's destructor (at exit) join. So a program that
 * exits after its lookups have ended leaves no thread memory behind for
 * valgrind to report; one whose cancelled lookup still runs at exit does.
 *
 *   loop thread                          lookup thread
 *   start: async init, refs = 2 ───────► getaddrinfo()
 *                                        lock; result; if !detached: send; unlock
 *   on_async: close, callback ◄───────── unref
 *   cancel: lock; detached = 1; unlock; close
 *   close callback: unref
 *
 * The lock makes "send" and "detached" exclusive: after a cancel has
 * unlocked, the thread never touches the handle. The last unref frees.
 *
 * Names that are not plain ASCII go to uv_getaddrinfo() as before, since
 * libuv converts them to ASCII (IDNA) first; so do lookups beyond
 * futoin__uv_lookup_threads_max running at once, or when no thread can be
 * created. Those keep the old bound: a cancelled lookup that already runs
 * keeps the loop alive until the resolver gives up.
 */
#include "uv_impl.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Atomic unsigned futoin__uv_lookup_threads_max = 32;
static _Atomic unsigned lookup_threads;

/* A lookup thread that has ended, to be joined. */
typedef struct Finished {
    pthread_t th;
    pid_t pid; /* the process it ran in */
    struct Finished* next;
} Finished;

static pthread_mutex_t finished_lock = PTHREAD_MUTEX_INITIALIZER;
static Finished* finished;

static void join_finished(void)
{
    /* Joining is only tidying up: when the list is busy, next time (and a
     * child of fork() may have inherited it locked). */
    if (pthread_mutex_trylock(&finished_lock) != 0) {
        return;
    }
    Finished* f = finished;
    finished = NULL;
    pthread_mutex_unlock(&finished_lock);
    pid_t self = getpid();
    while (f) {
        Finished* next = f->next;
        /* Past its last step: returns as soon as the thread is gone. A
         * child of fork() has the list but not the thread, and joining
         * it there would wait forever. */
        if (f->pid == self) {
            pthread_join(f->th, NULL);
        }
        free(f);
        f = next;
    }
}

#if defined(__GNUC__)
__attribute__((destructor)) static void join_finished_at_exit(void)
{
    join_finished();
}
#endif

struct FutoInUvLookup {
    uv_async_t async;     /* thread: hands the result to the loop */
    uv_getaddrinfo_t req; /* pool */
    FutoInUvLookupCb cb;  /* NULL once cancelled */
    void* data;
    pthread_mutex_t lock;
    _Atomic unsigned refs;
    uint8_t on_thread;
    uint8_t detached;     /* under lock */
    Finished* finished;   /* the thread's entry, handed over when it ends */
    int status;           /* under lock, libuv error */
    struct addrinfo* res; /* under lock */
    struct addrinfo hints;
    const char* service; /* into names, or NULL */
    char names[];        /* host, NUL, service, NUL */
};

unsigned futoin__uv_lookup_threads(void)
{
    return atomic_load(&lookup_threads);
}

static FutoInUvLookup* lookup_alloc(const char* host, const char* service,
        const struct addrinfo* hints, FutoInUvLookupCb cb, void* data)
{
    size_t hl = strlen(host);
    size_t sl = service ? strlen(service) : 0;
    FutoInUvLookup* l = calloc(1, sizeof(*l) + hl + 1 + sl + 1);
    if (!l) {
        return NULL;
    }
    memcpy(l->names, host, hl + 1);
    if (service) {
        memcpy(l->names + hl + 1, service, sl + 1);
        l->service = l->names + hl + 1;
    }
    if (hints) {
        l->hints.ai_flags = hints->ai_flags;
        l->hints.ai_family = hints->ai_family;
        l->hints.ai_socktype = hints->ai_socktype;
        l->hints.ai_protocol = hints->ai_protocol;
    }
    l->cb = cb;
    l->data = data;
    return l;
}

/* ---- libuv's pool ---- */

static void on_pool_done(uv_getaddrinfo_t* req, int status, struct addrinfo* res)
{
    FutoInUvLookup* l = req->data;
    if (l->cb) {
        l->cb(l->data, status, res);
    } else if (res) {
        uv_freeaddrinfo(res);
    }
    free(l);
}

static int start_on_pool(FutoInUv* uv, FutoInUvLookup* l)
{
    l->req.data = l;
    int err = uv_getaddrinfo(uv->uv, &l->req, on_pool_done, l->names, l->service, &l->hints);
    if (err) {
        free(l);
    }
    return err;
}

/* ---- a thread of its own ---- */

static void lookup_unref(FutoInUvLookup* l)
{
    if (atomic_fetch_sub(&l->refs, 1) != 1) {
        return;
    }
    if (l->res) {
        freeaddrinfo(l->res);
    }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* getaddrinfo()'s codes as libuv reports them (the same names in
 * error_info whichever way the lookup ran). */
static int gai_error(int r, int sys_errno)
{
    switch (r) {
    case 0:
        return 0;
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
        return UV_EAI_ADDRFAMILY;
#endif
    case EAI_AGAIN:
        return UV_EAI_AGAIN;
    case EAI_BADFLAGS:
        return UV_EAI_BADFLAGS;
    case EAI_FAIL:
        return UV_EAI_FAIL;
    case EAI_FAMILY:
        return UV_EAI_FAMILY;
    case EAI_MEMORY:
        return UV_EAI_MEMORY;
#ifdef EAI_NODATA
    case EAI_NODATA:
        return UV_EAI_NODATA;
#endif
    case EAI_NONAME:
        return UV_EAI_NONAME;
    case EAI_OVERFLOW:
        return UV_EAI_OVERFLOW;
    case EAI_SERVICE:
        return UV_EAI_SERVICE;
    case EAI_SOCKTYPE:
        return UV_EAI_SOCKTYPE;
    case EAI_SYSTEM:
        return sys_errno ? uv_translate_sys_error(sys_errno) : UV_EAI_FAIL;
    default:
        return UV_EAI_FAIL;
    }
}

static void* lookup_thread(void* arg)
{
    FutoInUvLookup* l = arg;
    struct addrinfo* res = NULL;
    errno = 0;
    int r = getaddrinfo(l->names, l->service, &l->hints, &res);
    int sys_errno = errno;
    pthread_mutex_lock(&l->lock);
    l->status = gai_error(r, sys_errno);
    l->res = r == 0 ? res : NULL;
    if (!l->detached) {
        uv_async_send(&l->async);
    }
    Finished* f = l->finished;
    pthread_mutex_unlock(&l->lock);
    lookup_unref(l);
    f->th = pthread_self();
    f->pid = getpid();
    pthread_mutex_lock(&finished_lock);
    f->next = finished;
    finished = f;
    pthread_mutex_unlock(&finished_lock);
    /* Last: a count of 0 means every lookup has freed its memory and its
     * thread is ready to be joined. */
    atomic_fetch_sub(&lookup_threads, 1);
    return NULL;
}

static void on_async_closed(uv_handle_t* h)
{
    lookup_unref(h->data);
}

static void on_async(uv_async_t* h)
{
    FutoInUvLookup* l = h->data;
    pthread_mutex_lock(&l->lock);
    int status = l->status;
    struct addrinfo* res = l->res;
    l->res = NULL;
    pthread_mutex_unlock(&l->lock);
    FutoInUvLookupCb cb = l->cb;
    l->cb = NULL;
    uv_close((uv_handle_t*)&l->async, on_async_closed);
    if (cb) {
        cb(l->data, status, res);
    } else if (res) {
        freeaddrinfo(res);
    }
}

/* Printable ASCII only: what libuv would pass to getaddrinfo() unchanged. */
static int plain_ascii(const char* s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; ++s) {
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f) {
            return 0;
        }
    }
    return 1;
}

static int take_thread_slot(void)
{
    unsigned n = atomic_load(&lookup_threads);
    do {
        if (n >= atomic_load(&futoin__uv_lookup_threads_max)) {
            return 0;
        }
    } while (!atomic_compare_exchange_weak(&lookup_threads, &n, n + 1));
    return 1;
}

/* 0 when the lookup runs on its own thread. Otherwise l was not touched
 * (on_thread 0), or it is closing and its memory goes with the close
 * callback (on_thread 1). */
static int start_on_thread(FutoInUv* uv, FutoInUvLookup* l)
{
    join_finished();
    if (!take_thread_slot()) {
        return -1;
    }
    l->finished = malloc(sizeof(*l->finished));
    if (!l->finished) {
        atomic_fetch_sub(&lookup_threads, 1);
        return -1;
    }
    if (pthread_mutex_init(&l->lock, NULL) != 0) {
        free(l->finished);
        l->finished = NULL;
        atomic_fetch_sub(&lookup_threads, 1);
        return -1;
    }
    if (uv_async_init(uv->uv, &l->async, on_async) != 0) {
        pthread_mutex_destroy(&l->lock);
        free(l->finished);
        l->finished = NULL;
        atomic_fetch_sub(&lookup_threads, 1);
        return -1;
    }
    l->async.data = l;
    l->on_thread = 1;
    atomic_store(&l->refs, 2);
    pthread_t th;
    if (pthread_create(&th, NULL, lookup_thread, l) != 0) {
        /* The handle's close callback drops both references. */
        atomic_store(&l->refs, 1);
        free(l->finished);
        l->finished = NULL;
        atomic_fetch_sub(&lookup_threads, 1);
        l->cb = NULL;
        uv_close((uv_handle_t*)&l->async, on_async_closed);
        return -1;
    }
    return 0;
}

int futoin__uv_lookup(FutoInUv* uv, const char* host, const char* service,
        const struct addrinfo* hints, FutoInUvLookupCb cb, void* data, FutoInUvLookup** out)
{
    *out = NULL;
    FutoInUvLookup* l = lookup_alloc(host, service, hints, cb, data);
    if (!l) {
        return UV_ENOMEM;
    }
    if (plain_ascii(host) && (!service || plain_ascii(service))) {
        if (start_on_thread(uv, l) == 0) {
            *out = l;
            return 0;
        }
        if (l->on_thread) {
            /* Closing: its memory goes with the close callback. */
            l = lookup_alloc(host, service, hints, cb, data);
            if (!l) {
                return UV_ENOMEM;
            }
        }
    }
    int err = start_on_pool(uv, l);
    if (!err) {
        *out = l;
    }
    return err;
}

void futoin__uv_lookup_cancel(FutoInUvLookup* l)
{
    if (!l->cb) {
        return; /* its callback has run: nothing is pending */
    }
    l->cb = NULL;
    if (!l->on_thread) {
        /* Withdraws it if still queued; the callback frees l either way. */
        uv_cancel((uv_req_t*)&l->req);
        return;
    }
    pthread_mutex_lock(&l->lock);
    l->detached = 1;
    pthread_mutex_unlock(&l->lock);
    uv_close((uv_handle_t*)&l->async, on_async_closed);
}
