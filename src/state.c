/*
 * Root state variables (spec 1.7 and 2.7.2 stateVariable): named values
 * created on first use by the caller's allocator and released with the root.
 * A root has a handful of them, so a small array with linear search beats a
 * hash table here.
 */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

static StateVar* find(Root* r, const char* name)
{
    for (uint32_t i = 0; i < r->nvars; ++i) {
        if (strcmp(r->vars[i].name, name) == 0) {
            return &r->vars[i];
        }
    }
    return NULL;
}

static StateVar* insert(Root* r, const char* name)
{
    if (r->nvars == r->cap_vars) {
        r->cap_vars = r->cap_vars ? r->cap_vars * 2 : 4;
        r->vars = futoin__xrealloc(r->vars, sizeof(StateVar) * r->cap_vars);
    }
    StateVar* v = &r->vars[r->nvars++];
    size_t len = strlen(name);
    v->name = futoin__xmalloc(len + 1);
    memcpy(v->name, name, len + 1);
    v->value = NULL;
    return v;
}

void* futoin__state_var(Root* r, void* data, const char* name,
        void* (*allocate)(void*), void (*cleanup)(void*, void*))
{
    if (strcmp(name, "error_info") == 0) {
        return r->info ? r->info : (char*)"";
    }
    if (strcmp(name, "last_exception") == 0) {
        return NULL; /* C has no exceptions */
    }
    StateVar* v = find(r, name);
    if (v) {
        return v->value;
    }
    if (!allocate) {
        return NULL;
    }
    void* value = allocate(data);
    /* allocate() may itself have created variables: insert afterwards. */
    v = insert(r, name);
    v->value = value;
    v->data = data;
    v->allocate = allocate;
    v->cleanup = cleanup;
    return value;
}

void futoin__state_copy(Root* dst, const Root* src)
{
    for (uint32_t i = 0; i < src->nvars; ++i) {
        const StateVar* sv = &src->vars[i];
        if (sv->allocate && !find(dst, sv->name)) {
            futoin__state_var(dst, sv->data, sv->name, sv->allocate, sv->cleanup);
        }
    }
}

void futoin__state_free(Root* r)
{
    /* Last created first: later variables may refer to earlier ones. */
    while (r->nvars) {
        StateVar* v = &r->vars[--r->nvars];
        if (v->cleanup) {
            v->cleanup(v->data, v->value);
        }
        free(v->name);
    }
    free(r->vars);
    r->vars = NULL;
    r->cap_vars = 0;
}
