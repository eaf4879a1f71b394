/* SPDX-License-Identifier: MIT */
/*
 * File handles and filesystem steps: open, pread and pwrite at an offset
 * and sequentially, fsync, fstat, stat, close; rename, unlink, mkdir,
 * rmdir, readdir; their errors with the libuv numbers (ENOENT, EACCES,
 * EISDIR, EEXIST, ENOTEMPTY, EBADF, ENOSPC on a small tmpfs); a large file
 * read in fixed chunks; and cancels while the thread pool still runs the
 * request, which must neither touch the gone step nor leak a descriptor
 * (counted in /proc/self/fd). Strict setup: futoin_uv_free() must find
 * nothing left.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

/* ---- a temporary directory ---- */

static char g_dir[64];
static char g_path[128];  /* a file in it */
static char g_path2[128]; /* another */
static char g_sub[128];   /* a directory in it */
static FutoInUvFile* g_file;

static void rm_tree(const char* dir)
{
    DIR* d = opendir(dir);
    if (!d) {
        return;
    }
    struct dirent* e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (unlink(p) != 0) {
            rm_tree(p);
        }
    }
    closedir(d);
    rmdir(dir);
}

static int count_fds(void)
{
    DIR* d = opendir("/proc/self/fd");
    if (!d) {
        return -1;
    }
    int n = 0;
    while (readdir(d)) {
        ++n;
    }
    closedir(d);
    return n;
}

static int g_fds; /* after the setup */

static int fio_setup(void** state)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/futoin_fio_XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    snprintf(g_path, sizeof(g_path), "%s/a.txt", g_dir);
    snprintf(g_path2, sizeof(g_path2), "%s/b.txt", g_dir);
    snprintf(g_sub, sizeof(g_sub), "%s/sub", g_dir);
    g_file = NULL;
    int r = uv_setup_strict(state);
    g_fds = count_fds();
    return r;
}

/* The last reference closes the descriptor on the pool: let that end
 * before futoin_uv_free(), which must find no request left. */
static int fio_teardown(void** state)
{
    futoin_uv_file_release(g_file);
    g_file = NULL;
    uint64_t end = mono_ms() + scaled_ms(5000);
    while (count_fds() > g_fds && mono_ms() < end) {
        run_for(5);
    }
    int r = uv_teardown_strict(state);
    rm_tree(g_dir);
    return r;
}

#define FIO_TEST(fn) cmocka_unit_test_setup_teardown(fn, fio_setup, fio_teardown)

/* ---- one step per root: its outcome in g_rec ---- */

typedef struct Rec {
    int done;
    char code[64]; /* "" on success */
    char info[256];
    int err; /* futoin_uv_errno() of an error */
    int types[4];
    char bytes[256];
    size_t blen;
    uint64_t u0;
    uint32_t u1;
    int64_t i2;
} Rec;

static Rec g_rec;
typedef void (*AddFn)(FutoInAsyncSteps* as);

static void rec_ok(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    for (int i = 0; i < 4; ++i) {
        g_rec.types[i] = futoin_arg_type(args, i);
    }
    FutoInUvFile* f = futoin_uv_arg_file(args, 0);
    if (f) {
        futoin_uv_file_release(g_file);
        g_file = futoin_uv_file_ref(f);
    }
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    if (b) {
        g_rec.blen = len;
        memcpy(g_rec.bytes, b, len < sizeof(g_rec.bytes) ? len : sizeof(g_rec.bytes));
    }
    g_rec.u0 = (uint64_t)futoin_arg_int(args, 0, 0);
    g_rec.u1 = (uint32_t)futoin_arg_int(args, 1, 0);
    g_rec.i2 = futoin_arg_int(args, 2, 0);
    g_rec.done = 1;
}

static void rec_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    snprintf(g_rec.code, sizeof(g_rec.code), "%s", code);
    snprintf(g_rec.info, sizeof(g_rec.info), "%s", futoin_error_info(as));
    g_rec.err = futoin_uv_errno(as);
    g_rec.done = 1;
    futoin_success(as);
}

static void one_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ((AddFn)(uintptr_t)data)(as);
    futoin_add(as, rec_ok, NULL, NULL);
}

static void run_one(AddFn fn)
{
    memset(&g_rec, 0, sizeof(g_rec));
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, one_step, rec_eh, (void*)(uintptr_t)fn);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_true(g_rec.done);
    futoin_asyncsteps_free(root);
}

static void expect_error(AddFn fn, const char* code, int err, const char* info)
{
    run_one(fn);
    assert_string_equal(g_rec.code, code);
    assert_int_equal(g_rec.err, err);
    if (info) {
        assert_string_equal(g_rec.info, info);
    }
}

static void expect_ok(AddFn fn)
{
    run_one(fn);
    if (g_rec.code[0]) {
        fail_msg("%s: %s", g_rec.code, g_rec.info);
    }
}

static void make_file(const char* path, const char* text)
{
    FILE* fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* ---- the steps ---- */

static void add_open_rw(FutoInAsyncSteps* as)
{
    futoin_uv_file_open(as, g_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
}
static void add_open_ro(FutoInAsyncSteps* as)
{
    futoin_uv_file_open(as, g_path, O_RDONLY, 0);
}
static void add_open_excl(FutoInAsyncSteps* as)
{
    futoin_uv_file_open(as, g_path, O_WRONLY | O_CREAT | O_EXCL, 0644);
}
static void add_open_dir(FutoInAsyncSteps* as)
{
    futoin_uv_file_open(as, g_dir, O_RDONLY, 0);
}
static void add_write_hello(FutoInAsyncSteps* as)
{
    futoin_uv_file_pwrite(as, g_file, -1, "hello ", 6);
}
static void add_write_world(FutoInAsyncSteps* as)
{
    futoin_uv_file_pwrite(as, g_file, -1, "world", 5);
}
static void add_write_at_0(FutoInAsyncSteps* as)
{
    futoin_uv_file_pwrite(as, g_file, 0, "J", 1);
}
static void add_read_0_5(FutoInAsyncSteps* as)
{
    futoin_uv_file_pread(as, g_file, 0, 5);
}
static void add_read_6(FutoInAsyncSteps* as)
{
    futoin_uv_file_pread(as, g_file, 6, 100);
}
static void add_read_seq4(FutoInAsyncSteps* as)
{
    futoin_uv_file_pread(as, g_file, -1, 4);
}
static void add_fsync(FutoInAsyncSteps* as)
{
    futoin_uv_file_fsync(as, g_file);
}
static void add_fstat(FutoInAsyncSteps* as)
{
    futoin_uv_file_fstat(as, g_file);
}
static void add_close(FutoInAsyncSteps* as)
{
    futoin_uv_file_close(as, g_file);
}
static void add_stat(FutoInAsyncSteps* as)
{
    futoin_uv_stat(as, g_path);
}
static void add_stat2(FutoInAsyncSteps* as)
{
    futoin_uv_stat(as, g_path2);
}
static void add_rename(FutoInAsyncSteps* as)
{
    futoin_uv_rename(as, g_path, g_path2);
}
static void add_unlink(FutoInAsyncSteps* as)
{
    futoin_uv_unlink(as, g_path);
}
static void add_unlink2(FutoInAsyncSteps* as)
{
    futoin_uv_unlink(as, g_path2);
}
static void add_unlink_sub(FutoInAsyncSteps* as)
{
    futoin_uv_unlink(as, g_sub);
}
static void add_mkdir(FutoInAsyncSteps* as)
{
    futoin_uv_mkdir(as, g_sub, 0755);
}
static void add_rmdir(FutoInAsyncSteps* as)
{
    futoin_uv_rmdir(as, g_sub);
}
static void add_rmdir_top(FutoInAsyncSteps* as)
{
    futoin_uv_rmdir(as, g_dir);
}
static void add_readdir(FutoInAsyncSteps* as)
{
    futoin_uv_readdir(as, g_dir);
}
static void add_readdir_sub(FutoInAsyncSteps* as)
{
    futoin_uv_readdir(as, g_sub);
}
static void add_readdir_file(FutoInAsyncSteps* as)
{
    futoin_uv_readdir(as, g_path);
}

/* ---- tests ---- */

static void t_read_write(void** state)
{
    (void)state;
    expect_ok(add_open_rw);
    assert_non_null(g_file);
    assert_int_equal(g_rec.types[0], FTN_TYPE_CUSTOM_OBJECT);
    assert_true(futoin_uv_file_is_open(g_file));
    assert_string_equal(futoin_uv_file_path(g_file), g_path);
    expect_ok(add_write_hello);
    assert_int_equal(g_rec.u0, 6);
    expect_ok(add_write_world);
    assert_int_equal(g_rec.u0, 5);
    expect_ok(add_read_0_5);
    assert_int_equal(g_rec.blen, 5);
    assert_memory_equal(g_rec.bytes, "hello", 5);
    expect_ok(add_read_6);
    assert_int_equal(g_rec.blen, 5);
    assert_memory_equal(g_rec.bytes, "world", 5);
    /* The sequential position is after the writes: the end. */
    expect_ok(add_read_seq4);
    assert_int_equal(g_rec.blen, 0);
    expect_ok(add_write_at_0);
    expect_ok(add_fsync);
    expect_ok(add_fstat);
    assert_int_equal(g_rec.u0, 11);
    assert_true(S_ISREG(g_rec.u1));
    assert_true(g_rec.i2 > 0);
    expect_ok(add_close);
    assert_false(futoin_uv_file_is_open(g_file));
    char info[256];
    snprintf(info, sizeof(info), "EBADF: pread %s: file is closed", g_path);
    expect_error(add_read_0_5, FUTOIN_COMM_ERROR, UV_EBADF, info);
    expect_error(add_close, FUTOIN_COMM_ERROR, UV_EBADF, NULL);
    expect_error(add_write_hello, FUTOIN_COMM_ERROR, UV_EBADF, NULL);

    /* Sequential reads from the start of a fresh handle. */
    expect_ok(add_open_ro);
    expect_ok(add_read_seq4);
    assert_memory_equal(g_rec.bytes, "Jell", 4);
    expect_ok(add_read_seq4);
    assert_memory_equal(g_rec.bytes, "o wo", 4);
    expect_ok(add_read_seq4);
    assert_int_equal(g_rec.blen, 3);
    assert_memory_equal(g_rec.bytes, "rld", 3);
    /* Read-only: writing fails with EBADF from the kernel. */
    expect_error(add_write_hello, FUTOIN_COMM_ERROR, UV_EBADF, NULL);
    /* No close step: the last reference closes it (strict teardown). */
}

static void t_paths(void** state)
{
    (void)state;
    char info[256];
    snprintf(info, sizeof(info), "ENOENT: open %s", g_path);
    expect_error(add_open_ro, FUTOIN_COMM_ERROR, UV_ENOENT, info);
    snprintf(info, sizeof(info), "ENOENT: stat %s", g_path);
    expect_error(add_stat, FUTOIN_COMM_ERROR, UV_ENOENT, info);
    expect_error(add_unlink, FUTOIN_COMM_ERROR, UV_ENOENT, NULL);
    expect_error(add_rename, FUTOIN_COMM_ERROR, UV_ENOENT, NULL);
    snprintf(info, sizeof(info), "EISDIR: open %s: is a directory", g_dir);
    expect_error(add_open_dir, FUTOIN_COMM_ERROR, UV_EISDIR, info);

    expect_ok(add_mkdir);
    expect_error(add_mkdir, FUTOIN_COMM_ERROR, UV_EEXIST, NULL);
    expect_ok(add_readdir_sub);
    assert_int_equal(g_rec.blen, 0);
    assert_int_equal(g_rec.u1, 0);
    make_file(g_path, "abc");
    expect_error(add_open_excl, FUTOIN_COMM_ERROR, UV_EEXIST, NULL);
    expect_ok(add_stat);
    assert_int_equal(g_rec.u0, 3);
    assert_true(S_ISREG(g_rec.u1));
    expect_ok(add_readdir);
    assert_int_equal(g_rec.u1, 2);
    assert_int_equal(g_rec.blen, strlen("a.txt") + 1 + strlen("sub") + 1);
    int seen_a = 0, seen_sub = 0;
    for (const char* n = g_rec.bytes; n < g_rec.bytes + g_rec.blen; n += strlen(n) + 1) {
        seen_a += strcmp(n, "a.txt") == 0;
        seen_sub += strcmp(n, "sub") == 0;
    }
    assert_int_equal(seen_a, 1);
    assert_int_equal(seen_sub, 1);
    expect_error(add_readdir_file, FUTOIN_COMM_ERROR, UV_ENOTDIR, NULL);
    expect_error(add_rmdir_top, FUTOIN_COMM_ERROR, UV_ENOTEMPTY, NULL);
    expect_error(add_unlink_sub, FUTOIN_COMM_ERROR, UV_EISDIR, NULL);
    expect_ok(add_rename);
    expect_error(add_stat, FUTOIN_COMM_ERROR, UV_ENOENT, NULL);
    expect_ok(add_stat2);
    assert_int_equal(g_rec.u0, 3);
    expect_ok(add_unlink2);
    expect_ok(add_rmdir);
    expect_error(add_rmdir, FUTOIN_COMM_ERROR, UV_ENOENT, NULL);
}

static void t_eacces(void** state)
{
    (void)state;
    if (geteuid() == 0) {
        skip(); /* root bypasses permissions */
    }
    make_file(g_path, "secret");
    assert_int_equal(chmod(g_path, 0), 0);
    char info[256];
    snprintf(info, sizeof(info), "EACCES: open %s", g_path);
    expect_error(add_open_ro, FUTOIN_COMM_ERROR, UV_EACCES, info);
}

/* ---- ENOSPC on a small tmpfs ---- */

static char g_big[128 << 10];

static void add_write_big(FutoInAsyncSteps* as)
{
    futoin_uv_file_pwrite(as, g_file, -1, g_big, sizeof(g_big));
}

static void t_enospc(void** state)
{
    (void)state;
    if (mount("futoin_tmpfs", g_dir, "tmpfs", 0, "size=64k") != 0) {
        skip(); /* no privilege to mount one */
    }
    memset(g_big, 'x', sizeof(g_big));
    expect_ok(add_open_rw);
    expect_error(add_write_big, FUTOIN_COMM_ERROR, UV_ENOSPC, NULL);
    expect_ok(add_close);
    futoin_uv_file_release(g_file);
    g_file = NULL;
    assert_int_equal(umount(g_dir), 0);
}

/* ---- a large file in chunks, in bounded memory ---- */

#define BIG_SIZE (4u << 20)
#define CHUNK 65536u

typedef struct Chunks {
    uint64_t total;
    uint32_t sum;
    unsigned reads;
    size_t largest;
} Chunks;

static void chunk_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Chunks* c = data;
    size_t len = 0;
    const unsigned char* b = (const unsigned char*)futoin_uv_arg_bytes(args, 0, &len);
    assert_non_null(b);
    ++c->reads;
    if (len > c->largest) {
        c->largest = len;
    }
    if (len == 0) {
        futoin_break(as, NULL);
        return;
    }
    for (size_t i = 0; i < len; ++i) {
        c->sum = c->sum * 31u + b[i];
    }
    c->total += len;
}

static void chunk_body(FutoInAsyncSteps* as, void* data)
{
    futoin_uv_file_pread(as, g_file, -1, CHUNK);
    futoin_add(as, chunk_got, NULL, data);
}

static void chunks_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, chunk_body, data, NULL);
}

static void t_chunks(void** state)
{
    (void)state;
    uint32_t want = 0;
    FILE* fp = fopen(g_path, "wb");
    assert_non_null(fp);
    for (unsigned i = 0; i < BIG_SIZE; ++i) {
        unsigned char ch = (unsigned char)(i * 7u + (i >> 12));
        fputc(ch, fp);
        want = want * 31u + ch;
    }
    fclose(fp);
    expect_ok(add_open_ro);
    Chunks c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, chunks_step, NULL, &c);
    Outcome o;
    run_root(root, &o, 30000);
    assert_string_equal(o.code, "");
    futoin_asyncsteps_free(root);
    assert_int_equal(c.total, BIG_SIZE);
    assert_int_equal(c.sum, want);
    assert_int_equal(c.largest, CHUNK);
    assert_int_equal(c.reads, BIG_SIZE / CHUNK + 1);
}

/* ---- cancels while the pool runs the request ---- */

/* The request is queued or already runs on the pool when the timeout of
 * the step that added it fires: either way the step ends at once. */
static void add_open_race(FutoInAsyncSteps* as)
{
    futoin_uv_file_open(as, g_path, O_RDONLY, 0);
}

static void add_read_race(FutoInAsyncSteps* as)
{
    futoin_uv_file_pread(as, g_file, 0, 1 << 20);
}

static void race_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("completed");
}

static void race_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 0);
    ((AddFn)(uintptr_t)data)(as);
    futoin_add(as, race_done, NULL, NULL);
}

static void timeout_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        ++g_rec.done;
        futoin_success(as);
    }
}

/* Returns whether the step timed out (else it completed first). */
static int race(AddFn add)
{
    memset(&g_rec, 0, sizeof(g_rec));
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, race_step, timeout_eh, (void*)(uintptr_t)add);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    futoin_asyncsteps_free(root);
    return g_rec.done;
}

static void settle_fds(int want)
{
    uint64_t end = mono_ms() + scaled_ms(5000);
    while (count_fds() != want && mono_ms() < end) {
        run_for(5);
    }
    assert_int_equal(count_fds(), want);
}

static void t_cancel_open(void** state)
{
    (void)state;
    make_file(g_path, "data");
    int before = count_fds();
    if (before < 0) {
        skip();
    }
    int timeouts = 0;
    for (int i = 0; i < 200; ++i) {
        timeouts += race(add_open_race);
    }
    assert_true(timeouts > 0);
    assert_null(g_file);
    settle_fds(before);
}

static void t_cancel_read_then_close(void** state)
{
    (void)state;
    FILE* fp = fopen(g_path, "wb");
    assert_non_null(fp);
    for (unsigned i = 0; i < (1u << 20); ++i) {
        fputc('r', fp);
    }
    fclose(fp);
    int before = count_fds();
    expect_ok(add_open_ro);
    /* Races until a timeout has overtaken a read at least once: most
     * runs see one in the first few, an emulator (qemu) may need more. */
    int timeouts = 0;
    for (int i = 0; i < 200 && (i < 20 || timeouts == 0); ++i) {
        timeouts += race(add_read_race);
    }
    assert_true(timeouts > 0);
    /* A close right after: it waits for a read the pool may still run. */
    race(add_read_race);
    expect_ok(add_close);
    assert_false(futoin_uv_file_is_open(g_file));
    futoin_uv_file_release(g_file);
    g_file = NULL;
    settle_fds(before);
}

/* A timeout on the step that adds an open: the error names the wait. */
static void add_open_timeout(FutoInAsyncSteps* as)
{
    futoin_set_timeout(as, 0);
    futoin_uv_file_open(as, g_path, O_RDONLY, 0);
}

static void t_timeout_wait_info(void** state)
{
    (void)state;
    make_file(g_path, "data");
    int before = count_fds();
    for (int i = 0; i < 20; ++i) {
        run_one(add_open_timeout);
        if (g_rec.code[0]) {
            assert_string_equal(g_rec.code, FUTOIN_TIMEOUT);
            char want[256];
            snprintf(want, sizeof(want), "file_open %s", g_path);
            assert_non_null(strstr(g_rec.info, want));
        }
        futoin_uv_file_release(g_file);
        g_file = NULL;
    }
    settle_fds(before);
}

/* ---- misuse: refused when added ---- */

static void add_nulls(FutoInAsyncSteps* as)
{
    futoin_uv_file_pread(as, NULL, 0, 1);
}
static void add_bad_offset(FutoInAsyncSteps* as)
{
    futoin_uv_file_pread(as, g_file, -2, 1);
}
static void add_bad_mode(FutoInAsyncSteps* as)
{
    futoin_uv_mkdir(as, g_sub, 010000);
}
static void add_null_to(FutoInAsyncSteps* as)
{
    futoin_uv_rename(as, g_path, NULL);
}

static void t_misuse(void** state)
{
    (void)state;
    expect_error(add_nulls, FUTOIN_INTERNAL_ERROR, UV_EINVAL,
            "EINVAL: futoin_uv_file_pread: f is NULL");
    make_file(g_path, "x");
    expect_ok(add_open_ro);
    expect_error(add_bad_offset, FUTOIN_INTERNAL_ERROR, UV_EINVAL,
            "EINVAL: futoin_uv_file_pread: offset -2 out of range");
    expect_error(add_bad_mode, FUTOIN_INTERNAL_ERROR, UV_EINVAL,
            "EINVAL: futoin_uv_mkdir: mode 4096 out of range (0..07777)");
    expect_error(add_null_to, FUTOIN_INTERNAL_ERROR, UV_EINVAL,
            "EINVAL: futoin_uv_rename: to is NULL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIO_TEST(t_read_write),
        FIO_TEST(t_paths),
        FIO_TEST(t_eacces),
        FIO_TEST(t_enospc),
        FIO_TEST(t_chunks),
        FIO_TEST(t_cancel_open),
        FIO_TEST(t_cancel_read_then_close),
        FIO_TEST(t_timeout_wait_info),
        FIO_TEST(t_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
