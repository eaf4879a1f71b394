/* SPDX-License-Identifier: MIT */
/*
 * A stdio stream whose text ends up in memory (observe_impl.h, ObsText):
 * open_memstream() on the POSIX systems; Windows has none, so there the
 * text goes to a temporary file, deleted when it is closed, and is read
 * back into memory.
 */
#include "observe/observe_impl.h"

#include <stdio.h>
#include <stdlib.h>
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#endif

#ifdef _WIN32
/* Not tmpfile(): msvcrt makes that file in the root directory of the
 * current drive, where a user may not write. A file of the user's
 * temporary directory instead, opened with msvcrt's "T" (short-lived: kept
 * in the cache if it can be) and "D" (deleted when closed). */
static FILE* temp_file(void)
{
    wchar_t dir[MAX_PATH + 1];
    wchar_t path[MAX_PATH + 1];
    DWORD n = GetTempPathW(MAX_PATH + 1, dir);
    if (n == 0 || n > MAX_PATH || GetTempFileNameW(dir, L"fut", 0, path) == 0) {
        return NULL;
    }
    FILE* f = _wfopen(path, L"w+bTD");
    if (!f) {
        DeleteFileW(path);
    }
    return f;
}
#endif

int futoin__obs_text_open(ObsText* t)
{
    t->text = NULL;
    t->len = 0;
#ifdef _WIN32
    t->f = temp_file();
#else
    t->f = open_memstream(&t->text, &t->len);
#endif
    return t->f ? 0 : -1;
}

#ifdef _WIN32
/* The file's text, from its start; NULL on a failure. */
static char* read_back(FILE* f)
{
    long end = ftell(f);
    if (end < 0 || fseek(f, 0, SEEK_SET) != 0) {
        return NULL;
    }
    char* text = malloc((size_t)end + 1);
    if (text && fread(text, 1, (size_t)end, f) != (size_t)end) {
        free(text);
        return NULL;
    }
    if (text) {
        text[end] = '\0';
    }
    return text;
}
#endif

char* futoin__obs_text_close(ObsText* t)
{
    int failed = ferror(t->f);
#ifdef _WIN32
    char* text = failed ? NULL : read_back(t->f);
    if (fclose(t->f) != 0) {
        failed = 1;
    }
#else
    int closed = fclose(t->f);
    char* text = t->text;
    failed = failed || closed != 0;
#endif
    t->f = NULL;
    if (failed) {
        free(text);
        return NULL;
    }
    return text;
}
