/* SPDX-License-Identifier: MIT */
/* Error traces (docs/OBSERVABILITY.md): an error raised three steps down
 * reaches an error handler and then the unhandled-error callback; both
 * print the chain of steps that led to it, with where each was added.
 *
 * Needs the tracing build (cmake -DFUTOIN_TRACING=ON); the build tree also
 * makes examples/error_trace_traced against a traced copy of the library.
 * Link with -rdynamic (CMake: ENABLE_EXPORTS) so that the callbacks below
 * are named; without it, and for static functions, their addresses show. */
#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>

#include <stdio.h>

void parse_record(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "InvalidRecord", "field 3 is not a number");
}

void after_parse(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("not reached");
}

void read_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, parse_record, NULL, NULL);
    futoin_add(as, after_parse, NULL, NULL);
}

void import_job(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, read_file, NULL, NULL);
    futoin_add(as, after_parse, NULL, NULL);
}

void import_failed(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    printf("import_job's error handler: %s (%s), trace:\n", code, futoin_error_info(as));
    futoin_error_trace_print(as, stdout);
    /* not handled: it goes on to the root's unhandled-error callback */
}

void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    printf("unhandled error: %s, trace:\n", code);
    futoin_error_trace_print(as, stdout);
}

int main(void)
{
    printf("tracing build: %s\n", futoin_tracing_enabled() ? "yes" : "no");
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, import_job, import_failed, NULL);
    futoin_execute(root, on_unhandled, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    return 0;
}
