/* SPDX-License-Identifier: MIT */
/*
 * The libuv backend's steps are owned waits: a success() or error() meant
 * for a step that is gone (it timed out, its error handler recovered) and
 * that arrives while the flow sleeps, accepts, reads or writes, is refused
 * and reported; the I/O step ends by its own event. Wall-clock bounds here
 * are lower bounds (a step did not end early), which a slow or loaded
 * machine cannot break.
 */
#include "uv_tsupport.h"

#include <semaphore.h>

/* A generous guard for a run that should take well under a second. */
#define GUARD_MS 30000

static FutoInAsyncSteps* g_stale;
static uv_timer_t g_late_timer;
static int g_late_error;
/* Opened by each late call: the peer connects, then sends, only after it,
 * so the late call always finds the flow waiting in the I/O step. */
static sem_t g_gate;

static void owed_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_stale = as;
    futoin_set_timeout(as, 10);
}

static void late_fire(uv_timer_t* t)
{
    (void)t;
    tr("late");
    if (g_late_error) {
        futoin_error(g_stale, "Late", "meant for the step that timed out");
    } else {
        futoin_success1(g_stale, futoin_val_cstr("late value"));
    }
    sem_post(&g_gate);
}

/* The owed step timed out: its completion comes 20 ms later, when the
 * flow has moved on to the next step (started in this same turn). */
static void owed_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("owed:%s", code);
    uv_timer_start(&g_late_timer, late_fire, 20, 0);
    futoin_success(as);
}

static void late_setup(int error)
{
    g_late_error = error;
    uv_timer_init(futoin_uv_uv_loop(g_uv), &g_late_timer);
    assert_int_equal(sem_init(&g_gate, 0, 0), 0);
}

static void late_teardown(void)
{
    uv_close((uv_handle_t*)&g_late_timer, NULL);
    run_for(1);
    sem_destroy(&g_gate);
}

static void step_tag_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    tr("done");
}

/* ---- sleep ---- */

static uint64_t g_t0;

static void sleep_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_t0 = mono_ms();
    futoin_uv_sleep(as, 150);
}

static void after_sleep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data;
    assert_int_equal(futoin_args_count(args), 0); /* not the late value */
    tr("slept:%s", mono_ms() - g_t0 >= 140 ? "full" : "cut short");
}

static void late_on_sleep(int error)
{
    late_setup(error);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, owed_step, owed_recover, NULL);
    futoin_add(root, sleep_step, NULL, NULL);
    futoin_add(root, after_sleep, NULL, NULL);
    Outcome o;
    run_root(root, &o, GUARD_MS);
    late_teardown();
    assert_string_equal(o.code, "");
    assert_trace("owed:Timeout|late|slept:full");
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, error ? "error(Late)" : "success()"));
    assert_non_null(strstr(g_misuse_msg, "I/O step"));
    futoin_asyncsteps_free(root);
}

static void test_late_success_on_sleep(void** state)
{
    (void)state;
    late_on_sleep(0);
}

static void test_late_error_on_sleep(void** state)
{
    (void)state;
    late_on_sleep(1);
}

/* ---- accept, then a read of a line the peer sends later ---- */

typedef struct Conn {
    FutoInUvServer* srv;
    FutoInUvStream* s;
} Conn;

static void accept_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((Conn*)data)->srv);
}

static void take_stream(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    c->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    assert_non_null(c->s);
    tr("accepted");
    futoin_add(as, owed_step, owed_recover, NULL);
}

static void read_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_line(as, ((Conn*)data)->s, 100);
}

static void got_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data;
    size_t len = 0;
    const char* p = futoin_uv_arg_bytes(args, 0, &len);
    tr("line:%.*s", (int)len, p ? p : "");
}

typedef struct Client {
    unsigned port;
    pthread_t th;
} Client;

static void* client_main(void* arg)
{
    Client* c = arg;
    sem_wait(&g_gate); /* the late call on the accept came */
    int fd = client_connect(c->port);
    if (fd < 0) {
        return NULL;
    }
    sem_wait(&g_gate); /* the late call on the read came */
    send_str(fd, "hello\n");
    char buf[16];
    (void)!read(fd, buf, sizeof(buf)); /* until the server closes */
    close(fd);
    return NULL;
}

/* A late call lands while the root waits in accept; the peer connects
 * only after it. A second owed step times out, and a late call lands
 * while the root waits in read_line; the peer sends only after it. */
static void test_late_completions_on_accept_and_read(void** state)
{
    (void)state;
    late_setup(0);
    int err = 0;
    Conn c = { 0 };
    c.srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(c.srv);
    Client cl = { futoin_uv_server_port(c.srv), 0 };
    assert_int_equal(pthread_create(&cl.th, NULL, client_main, &cl), 0);

    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, owed_step, owed_recover, NULL);
    futoin_add(root, accept_step, NULL, &c);
    futoin_add(root, take_stream, NULL, &c);
    futoin_add(root, read_step, NULL, &c);
    futoin_add(root, got_line, NULL, NULL);
    Outcome o;
    run_root(root, &o, GUARD_MS);
    assert_string_equal(o.code, "");
    assert_trace("owed:Timeout|late|accepted|owed:Timeout|late|line:hello");
    assert_int_equal(g_misuse, 2);
    assert_non_null(strstr(g_misuse_msg, "I/O step"));
    futoin_uv_stream_close(c.s);
    futoin_uv_stream_release(c.s);
    futoin_uv_server_close(c.srv);
    futoin_uv_server_release(c.srv);
    run_for(20);
    pthread_join(cl.th, NULL);
    late_teardown();
    futoin_asyncsteps_free(root);
}

/* ---- futoin_uv_run() from inside a step: refused ---- */

static void step_runs_uv(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_timeout(as, 0); /* a nested round would fire it */
    tr("nested:%s", futoin_uv_run(g_uv) == UV_EBUSY ? "EBUSY" : "ran");
    int64_t d = 0;
    tr("iterate:%d", futoin_loop_iterate(futoin_uv_loop(g_uv), &d));
    futoin_success(as);
}

static void test_uv_run_inside_a_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_runs_uv, NULL, NULL);
    futoin_add(root, step_tag_done, NULL, NULL);
    futoin_execute(root, outcome_error, NULL);
    assert_int_equal(futoin_uv_run(g_uv), 0);
    assert_trace("nested:EBUSY|iterate:-1|done");
    assert_int_equal(g_misuse, 1); /* the loop's own report of iterate() */
    assert_non_null(strstr(g_misuse_msg, "futoin_loop_iterate() called from inside"));
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_late_success_on_sleep),
        UV_TEST(test_late_error_on_sleep),
        UV_TEST(test_late_completions_on_accept_and_read),
        UV_TEST(test_uv_run_inside_a_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
