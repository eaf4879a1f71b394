/* SPDX-License-Identifier: MIT */
/* JS README example "External event wait": a step that is completed later
 * by an event-loop callback, and a step whose external event never comes,
 * so its 1 s timeout fires. */
#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>

#include <stdio.h>

/* ---- A dummy external service -------------------------------------------
 * Its read never completes: a real one would call on_data(as, data) or
 * on_error(as, code) from a loop callback. */

typedef struct DummyRequest {
    int pending;
} DummyRequest;

static DummyRequest* dummy_service_read(FutoInAsyncSteps* as)
{
    static DummyRequest req;
    (void)as; /* would be kept to call futoin_success1()/futoin_error() later */
    req.pending = 1;
    return &req;
}

static void dummy_service_cancel(DummyRequest* req)
{
    req->pending = 0;
}

/* ---- Step 1: completed from a loop callback ("setImmediate") ------------ */

static void complete_step1(void* data)
{
    FutoInAsyncSteps* as = data;
    futoin_success1(as, futoin_val_cstr("async success()"));
}

static void step1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_loop_immediate(futoin_asyncsteps_loop(as), as, complete_step1);
    /* setTimeout() also makes the step wait for an external success(). */
    futoin_set_timeout(as, 10);
}

/* ---- Step 2: waits for the service, gives up after 1 s ------------------ */

static void step2_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    dummy_service_cancel(data);
}

static void step2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    puts(futoin_arg_cstr(args, 0, "(none)"));

    DummyRequest* req = dummy_service_read(as);
    /* Runs when the step is aborted, also on its own timeout. */
    futoin_set_cancel(as, step2_cancel, req);
    /* Optional: fail with Timeout after 1 s. */
    futoin_set_timeout(as, 1000);
}

static void step2_onerror(FutoInAsyncSteps* as, void* data, const char* err)
{
    (void)data;
    /* error_info is empty after a Timeout. */
    printf("%s: %s\n", err, futoin_error_info(as));
}

/* The error is not recovered, so it escapes the root. */
static void unhandled_error(FutoInAsyncSteps* as, void* data, const char* error)
{
    (void)data;
    fprintf(stderr, "(unhandled error: %s)\n", error);
    if (futoin_tracing_enabled()) { /* a tracing build: the steps that led here */
        futoin_error_trace_print(as, stderr);
    }
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, step1, NULL, NULL);
    futoin_add(root, step2, step2_onerror, NULL);
    futoin_execute(root, unhandled_error, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    return 0;
}
