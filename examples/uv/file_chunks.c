/* SPDX-License-Identifier: MIT */
/*
 * Files as steps (docs/RECIPES.md "Files: a handle, and a large file in
 * chunks"): a file written line by line through a handle, read back in
 * chunks of a fixed size, its size from fstat, the directory listed, and
 * everything removed again; every operation runs on libuv's thread pool.
 *
 *   file_chunks
 *
 * The pieces, one root in a temporary directory:
 *   - futoin_uv_file_open() gives a FutoInUvFile, kept with
 *     futoin_uv_file_ref(); futoin_uv_file_pwrite() with offset -1 writes
 *     at the file's position, which moves on; futoin_uv_file_close();
 *   - opened again for reading, a loop of futoin_uv_file_pread() of at most
 *     16 bytes reads it whole in bounded memory (an empty chunk: the end);
 *     futoin_uv_file_fstat() gives its size;
 *   - futoin_uv_rename(), futoin_uv_readdir() (every name followed by a
 *     NUL), futoin_uv_unlink() and futoin_uv_rmdir() clean up.
 * The handle's last reference is released at the end: a descriptor that
 * no close step closed would be closed then.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/uv.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINES 5
#define CHUNK 16

typedef struct Job {
    char dir[256];
    char path[300];    /* dir/data.txt */
    char renamed[300]; /* dir/renamed.txt */
    FutoInUvFile* f;   /* a reference of ours */
    unsigned written_lines;
    uint64_t written;
    char text[256]; /* what was written, to compare */
    size_t text_len;
    char back[256]; /* what was read back */
    size_t back_len;
    unsigned chunks;
} Job;

static void keep_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Job* j = data;
    futoin_uv_file_release(j->f); /* the one of the previous open, if any */
    j->f = futoin_uv_file_ref(futoin_uv_arg_file(args, 0));
}

/* ---- writing, line by line at the file's position ---- */

static void count_written(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    ((Job*)data)->written += (uint64_t)futoin_arg_int(args, 0, 0);
}

static void write_iteration(FutoInAsyncSteps* as, void* data)
{
    Job* j = data;
    if (j->written_lines == LINES) {
        futoin_break(as, NULL);
        return;
    }
    char line[64];
    int n = snprintf(line, sizeof(line), "line %u of the example file\n", ++j->written_lines);
    memcpy(j->text + j->text_len, line, (size_t)n);
    j->text_len += (size_t)n;
    futoin_uv_file_pwrite(as, j->f, -1, line, (size_t)n); /* copied */
    futoin_add(as, count_written, NULL, j);
}

static void write_lines(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Job* j = data;
    futoin_uv_file_open(as, j->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    futoin_add(as, keep_file, NULL, j);
    futoin_add_loop(as, write_iteration, j, NULL);
}

static void close_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_file_close(as, ((Job*)data)->f);
}

static void report_written(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Job* j = data;
    printf("wrote %u lines, %llu bytes\n", j->written_lines, (unsigned long long)j->written);
}

/* ---- reading back in chunks ---- */

static void got_chunk(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Job* j = data;
    size_t len = 0;
    const char* bytes = futoin_uv_arg_bytes(args, 0, &len); /* len <= CHUNK */
    if (len == 0) {
        futoin_break(as, NULL); /* the end of the file */
        return;
    }
    if (j->back_len + len <= sizeof(j->back)) {
        memcpy(j->back + j->back_len, bytes, len);
    }
    j->back_len += len;
    ++j->chunks;
}

static void read_iteration(FutoInAsyncSteps* as, void* data)
{
    Job* j = data;
    futoin_uv_file_pread(as, j->f, -1, CHUNK); /* -1: at the file's position */
    futoin_add(as, got_chunk, NULL, j);
}

static void read_back(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Job* j = data;
    futoin_uv_file_open(as, j->path, O_RDONLY, 0);
    futoin_add(as, keep_file, NULL, j);
    futoin_add_loop(as, read_iteration, j, NULL);
}

static void stat_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Job* j = data;
    printf("read %zu bytes in %u chunks of at most %d: %s\n", j->back_len, j->chunks, CHUNK,
            j->back_len == j->text_len && memcmp(j->back, j->text, j->text_len) == 0
                    ? "the same as written"
                    : "DIFFERENT");
    futoin_uv_file_fstat(as, j->f);
}

static void report_stat(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    printf("fstat: %llu bytes, a regular file: %s\n", (unsigned long long)args->arg0.u64,
            (futoin_arg_int(args, 1, 0) & 0170000) == 0100000 ? "yes" : "no");
    futoin_uv_file_close(as, ((Job*)data)->f);
}

/* ---- the directory, then clean-up ---- */

static void rename_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Job* j = data;
    futoin_uv_rename(as, j->path, j->renamed);
    futoin_uv_readdir(as, j->dir);
}

static void list_dir(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Job* j = data;
    size_t len = 0;
    const char* names = futoin_uv_arg_bytes(args, 0, &len);
    printf("the directory holds %d name(s):", (int)futoin_arg_int(args, 1, 0));
    for (const char* n = names; n < names + len; n += strlen(n) + 1) {
        printf(" %s", n);
    }
    printf("\n");
    futoin_uv_unlink(as, j->renamed);
    futoin_uv_rmdir(as, j->dir);
}

static void done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    printf("removed the file and the directory\n");
}

static int failed; /* the exit status */

static void on_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    failed = 1;
    (void)data;
    fprintf(stderr, "failed: %s (%s)\n", code, futoin_error_info(as));
}

int main(void)
{
    static Job job;
    const char* tmp = getenv("TMPDIR");
    snprintf(job.dir, sizeof(job.dir), "%s/file_chunks-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(job.dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(job.path, sizeof(job.path), "%s/data.txt", job.dir);
    snprintf(job.renamed, sizeof(job.renamed), "%s/renamed.txt", job.dir);

    FutoInUv* uv = futoin_uv_new(NULL);
    FutoInAsyncSteps* root = uv ? futoin_asyncsteps_new(futoin_uv_loop(uv)) : NULL;
    if (!root) {
        return 1;
    }
    futoin_add(root, write_lines, NULL, &job);
    futoin_add(root, close_file, NULL, &job);
    futoin_add(root, report_written, NULL, &job);
    futoin_add(root, read_back, NULL, &job);
    futoin_add(root, stat_file, NULL, &job);
    futoin_add(root, report_stat, NULL, &job);
    futoin_add(root, rename_file, NULL, &job);
    futoin_add(root, list_dir, NULL, &job);
    futoin_add(root, done, NULL, &job);
    futoin_execute(root, on_error, NULL);
    futoin_uv_run(uv);

    futoin_asyncsteps_free(root);
    /* Closed by the close step already; after a failure, this closes it. */
    futoin_uv_file_release(job.f);
    futoin_uv_run(uv);
    futoin_uv_free(uv);
    return failed;
}
