/* SPDX-License-Identifier: MIT */
/*
 * Root state variables (spec 1.7 and 2.7.2 stateVariable): named values
 * created on first use by the caller's allocator and released with the root.
 * A root has a handful of them, so a small array with linear search beats a
 * hash table here. The read-only "error_info" is not the root's but the
 * asking flow's: the second half of its error record (engine_internal.h).
 */
#include "engine/engine_impl.h"

#include <stdlib.h>
#include <string.h>

static StateVar* find(const Root* r, const char* name)
{
    const RootExt* x = r->ext;
    for (uint32_t i = 0; x && i < x->nvars; ++i) {
        if (strcmp(x->vars[i].name, name) == 0) {
            return &x->vars[i];
        }
    }
    return NULL;
}

static StateVar* insert(Root* r, const char* name)
{
    RootExt* x = futoin__root_ext(r);
    if (x->nvars == x->cap_vars) {
        x->cap_vars = x->cap_vars ? x->cap_vars * 2 : 4;
        x->vars = futoin__xrealloc(x->vars, sizeof(StateVar) * x->cap_vars);
    }
    StateVar* v = &x->vars[x->nvars++];
    size_t len = strlen(name);
    v->name = futoin__xmalloc(len + 1);
    memcpy(v->name, name, len + 1);
    v->value = NULL;
    return v;
}

void* futoin__state_var(Flow* fl, void* data, const char* name, void* (*allocate)(void*),
        void (*cleanup)(void*, void*))
{
    if (strcmp(name, "error_info") == 0) {
        /* The flow's own: a branch's handlers read their branch's error. */
        return (char*)(uintptr_t)futoin__flow_info(fl);
    }
    Root* r = futoin__flow_root(fl);
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
    if (r->free_pending) {
        /* The root is going away (perhaps its variables are being cleaned
         * up right now, and this comes from a cleanup): a new variable
         * would outlive it or be cleaned up twice. */
        futoin__misuse(&r->main, "stateVariable(%.64s) on an instance that was freed: not created",
                name);
        return NULL;
    }
    /* allocate() is user code: it may create variables itself (so the
     * slot is taken afterwards) or free the root, which then takes effect
     * after the variable is recorded, and cleans it up with the rest. */
    futoin__root_hold(r);
    void* value = allocate(data);
    v = insert(r, name);
    v->value = value;
    v->data = data;
    v->allocate = allocate;
    v->cleanup = cleanup;
    futoin__root_unhold(r);
    return value;
}

void futoin__state_copy(Root* dst, Root* src)
{
    /* The allocators are user code: they may add variables to src (its
     * array may move, so nothing is kept across a call but the index) or
     * free either root (held until the copy is done). */
    futoin__root_hold(src);
    futoin__root_hold(dst);
    for (uint32_t i = 0; src->ext && i < src->ext->nvars; ++i) {
        StateVar sv = src->ext->vars[i];
        if (sv.allocate && !find(dst, sv.name)) {
            futoin__state_var(&dst->main, sv.data, sv.name, sv.allocate, sv.cleanup);
        }
    }
    futoin__root_unhold(dst);
    futoin__root_unhold(src);
}

void futoin__state_free(Root* r)
{
    /* Last created first: later variables may refer to earlier ones. */
    RootExt* x = r->ext;
    if (!x) {
        return;
    }
    while (x->nvars) {
        /* Off the array before its cleanup (user code) runs, which may
         * look the others up; creating one is refused (free_pending). */
        StateVar v = x->vars[--x->nvars];
        if (v.cleanup) {
            v.cleanup(v.data, v.value);
        }
        free(v.name);
    }
    free(x->vars);
    x->vars = NULL;
    x->cap_vars = 0;
}
