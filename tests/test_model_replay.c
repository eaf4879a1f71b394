/* SPDX-License-Identifier: MIT */
/* Deterministic replay of the fuzzer's seed corpus (tests/fuzz/corpus/):
 * every file is decoded into a program of the fuzzer's step language, run
 * on the engine and on the reference model (tests/fuzz/model.c), and the
 * two traces must be identical (a difference prints both and aborts).
 * Built without libFuzzer, so regular CI checks the corpus too.
 *
 * FUTOIN_CORPUS_DIR=dir overrides the corpus directory; FUTOIN_REPLAY_VERBOSE=1
 * prints every program and trace. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/engine_run.h"
#include "fuzz/model.h"
#include "fuzz/prog.h"

static int cmp_names(const void* a, const void* b)
{
    return strcmp(*(const char* const*)a, *(const char* const*)b);
}

static void corpus_dir(char* buf, size_t len)
{
    const char* env = getenv("FUTOIN_CORPUS_DIR");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return;
    }
    /* This file's directory, then fuzz/corpus. */
    snprintf(buf, len, "%s", __FILE__);
    char* slash = strrchr(buf, '/');
    if (slash) {
        slash[1] = 0;
    } else {
        buf[0] = 0;
    }
    strncat(buf, "fuzz/corpus", len - strlen(buf) - 1);
}

static void test_replay_corpus(void** state)
{
    (void)state;
    char dir[1024];
    corpus_dir(dir, sizeof(dir));
    DIR* d = opendir(dir);
    if (!d) {
        fail_msg("cannot open corpus directory %s", dir);
        return;
    }
    char* names[4096];
    size_t n = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL && n < 4096) {
        if (e->d_name[0] != '.') {
            names[n] = malloc(strlen(e->d_name) + 1);
            assert_non_null(names[n]);
            strcpy(names[n], e->d_name);
            ++n;
        }
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_names);
    assert_true(n >= 20);
    int verbose = getenv("FUTOIN_REPLAY_VERBOSE") != NULL;
    size_t ran = 0;
    for (size_t i = 0; i < n; ++i) {
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        FILE* f = fopen(path, "rb");
        assert_non_null(f);
        static uint8_t buf[4096];
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        if (verbose) {
            fprintf(stderr, "### %s\n", names[i]);
        }
        /* Aborts with both traces on a difference. */
        if (fz_check_input(buf, len, verbose) == 0) {
            ++ran;
        }
        free(names[i]);
    }
    printf("replayed %zu of %zu corpus files\n", ran, n);
    assert_true(ran == n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
