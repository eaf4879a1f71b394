/* SPDX-License-Identifier: MIT */
/* An outside program on both libraries (the libuv backend and the core),
 * built against the installed files (scripts/check-consumer.sh): a root on
 * the backend's loop sleeps through libuv, and another thread completes a
 * waiting step, which wakes libuv up through the core's embedding API. */
#include <futoin/uv.h>
#include <futoin/version.h>

#include <pthread.h>
#include <stdio.h>

typedef struct App {
    FutoInLoop* loop;
    FutoInAsyncSteps* waiting;
    pthread_t th;
    int slept;
    int value;
} App;

static void resume(void* data)
{
    App* app = data;
    futoin_success1(app->waiting, futoin_val_i32(7));
    futoin_loop_release(app->loop);
}

static void* other_thread(void* arg)
{
    App* app = arg;
    futoin_loop_immediate(app->loop, app, resume);
    return NULL;
}

static void after_sleep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    App* app = data;
    app->slept = 1;
    app->waiting = as;
    futoin_set_timeout(as, 10000);
    futoin_loop_hold(app->loop);
    if (pthread_create(&app->th, NULL, other_thread, app) != 0) {
        futoin_loop_release(app->loop);
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "pthread_create");
    }
}

static void got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    App* app = data;
    app->value = futoin_arg_i32(args, 0, -1);
}

static void start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_sleep(as, 5);
    futoin_add(as, after_sleep, NULL, data);
    futoin_add(as, got, NULL, data);
}

int main(void)
{
    App app = { 0 };
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return 1;
    }
    app.loop = futoin_uv_loop(uv);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(app.loop);
    futoin_add(root, start, NULL, &app);
    futoin_execute(root, NULL, NULL);
    futoin_uv_run(uv);
    if (app.waiting) {
        pthread_join(app.th, NULL);
    }
    futoin_asyncsteps_free(root);
    futoin_uv_free(uv);
    printf("futoin_asyncsteps %s, libuv %s, slept=%d value=%d\n", futoin_version(),
            uv_version_string(), app.slept, app.value);
    return app.slept && app.value == 7 ? 0 : 1;
}
