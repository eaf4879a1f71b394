# SPDX-License-Identifier: MIT
"""The cffi build script of the binding (API mode: compiled against the
library's headers).

Where the library comes from (environment variables, read at build time):

  FUTOIN_BUILD_DIR     a CMake build directory of the library: its
                       include/ (futoin/version.h) is added to the include
                       path and its libfutoin_asyncsteps.a is linked in
  FUTOIN_INCLUDE_DIRS  extra include directories, separated by ':'
  FUTOIN_LIBRARY       a library file to link (a .a or a .so path)
  FUTOIN_LIBRARY_DIRS  extra library directories, separated by ':'

With none of them: the installed library (-lfutoin_asyncsteps on the
default paths, headers in /usr/include). The source tree's include/ is
always added when this file sits in a checkout.
"""
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_INCLUDE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "include"))

CDEF = r"""
typedef struct FutoInLoop FutoInLoop;
typedef struct FutoInAsyncSteps_ FutoInAsyncSteps;
typedef struct FutoInSync_ FutoInSync;
typedef struct FutoInType_ FutoInType;
typedef struct FutoInBinaryValue_ FutoInBinaryValue;
typedef struct FutoInArgs_ FutoInArgs;
typedef struct FutoInHandle_ {
    void* data1;
    void* data2;
    ptrdiff_t data3;
} FutoInHandle;

struct FutoInType_ {
    const uint8_t flags;
    ...;
};
struct FutoInBinaryValue_ {
    const FutoInType* type;
    union {
        const void* p;
        const char* cstr;
        bool b;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f;
        double d;
    };
    void* custom_data;
    uint32_t length;
};
struct FutoInArgs_ {
    FutoInBinaryValue args[4];
    ...;
};

typedef enum FutoInEndReason {
    FUTOIN_END_SUCCESS = 0,
    FUTOIN_END_ERROR = 1,
    FUTOIN_END_CANCELLED = 2,
    FUTOIN_END_FREED = 3
} FutoInEndReason;
typedef struct FutoInRootEnd {
    FutoInEndReason reason;
    const char* code;
    const char* info;
    FutoInArgs* results;
} FutoInRootEnd;

typedef struct FutoInLimiterOptions {
    uint32_t concurrent;
    uint32_t max_queue;
    uint32_t rate;
    uint32_t period_ms;
    uint32_t burst;
    ...;
} FutoInLimiterOptions;

typedef void (*FutoInAsyncSteps_execute_callback)(FutoInAsyncSteps*, void*, const FutoInArgs*);
typedef void (*FutoInAsyncSteps_error_callback)(FutoInAsyncSteps*, void*, const char*);
typedef void (*FutoInAsyncSteps_cancel_callback)(FutoInAsyncSteps*, void*);
typedef void (*FutoInDataDestroy)(void*);
typedef void (*FutoInRootEndCallback)(FutoInAsyncSteps*, void*, const FutoInRootEnd*);
typedef void (*FutoInLoopWakeup)(void*);
typedef void (*FutoInLoopCallback)(void* data);
typedef void (*FutoInMisuseHandler)(void* data, FutoInAsyncSteps* as, const char* info);

#define FTN_TYPE_CUSTOM_OBJECT ...
#define FTN_TYPE_STRING ...
#define FTN_TYPE_STRING16 ...
#define FTN_TYPE_STRING32 ...
#define FTN_TYPE_BOOL ...
#define FTN_TYPE_INT8 ...
#define FTN_TYPE_INT16 ...
#define FTN_TYPE_INT32 ...
#define FTN_TYPE_INT64 ...
#define FTN_TYPE_UINT8 ...
#define FTN_TYPE_UINT16 ...
#define FTN_TYPE_UINT32 ...
#define FTN_TYPE_UINT64 ...
#define FTN_TYPE_FLOAT ...
#define FTN_TYPE_DOUBLE ...
#define FTN_BASE_TYPE_MASK ...
#define FTN_TYPE_ARRAY ...

/* The loop (asynctool.h). */
FutoInLoop* futoin_loop_new(void);
FutoInLoop* futoin_loop_new_virtual(void);
void futoin_loop_free(FutoInLoop* loop);
int futoin_loop_iterate(FutoInLoop* loop, int64_t* next_delay_ms);
void futoin_loop_run(FutoInLoop* loop);
void futoin_loop_stop(FutoInLoop* loop);
int64_t futoin_loop_next_delay(const FutoInLoop* loop);
void futoin_loop_set_wakeup(FutoInLoop* loop, FutoInLoopWakeup cb, void* data);
int futoin_loop_wakeup_fd(FutoInLoop* loop);
uint64_t futoin_loop_now(const FutoInLoop* loop);
void futoin_loop_advance(FutoInLoop* loop, uint64_t ms);
size_t futoin_loop_pending(const FutoInLoop* loop);
FutoInHandle futoin_loop_immediate(FutoInLoop* loop, void* data, FutoInLoopCallback cb);
FutoInHandle futoin_loop_deferred(FutoInLoop* loop, uint32_t delay_ms, void* data,
        FutoInLoopCallback cb);
int futoin_loop_try_cancel(FutoInLoop* loop, FutoInHandle* handle);

/* Roots and steps (asyncsteps.h). */
FutoInAsyncSteps* futoin_asyncsteps_new(FutoInLoop* loop);
FutoInLoop* futoin_asyncsteps_loop(FutoInAsyncSteps* as);
void futoin_set_misuse_handler(FutoInLoop* loop, FutoInMisuseHandler cb, void* data);
void futoin_asyncsteps_free(FutoInAsyncSteps* root);
void futoin_add_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh, void* data, FutoInDataDestroy destroy);
FutoInAsyncSteps* futoin_parallel(FutoInAsyncSteps* as, FutoInAsyncSteps_error_callback eh,
        void* data);
void futoin_success_args(FutoInAsyncSteps* as, FutoInArgs* args);
void futoin_error(FutoInAsyncSteps* as, const char* code, const char* info);
void futoin_set_timeout(FutoInAsyncSteps* as, uint32_t timeout_ms);
void futoin_set_cancel(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch, void* data);
void futoin_wait_external(FutoInAsyncSteps* as);
const char* futoin_error_info(FutoInAsyncSteps* as);
void* futoin_state(FutoInAsyncSteps* as, const char* name, void* (*allocate)(void* data),
        void (*cleanup)(void* data, void* value), void* data);
void futoin_add_loop(FutoInAsyncSteps* as, void (*f)(FutoInAsyncSteps* as, void* data),
        void* data, const char* label);
void futoin_repeat(FutoInAsyncSteps* as, size_t count,
        void (*f)(FutoInAsyncSteps* as, void* data, size_t i), void* data, const char* label);
void futoin_break(FutoInAsyncSteps* as, const char* label);
void futoin_continue(FutoInAsyncSteps* as, const char* label);
void futoin_add_sync(FutoInAsyncSteps* as, FutoInSync* sync,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* data);
void futoin_success_step(FutoInAsyncSteps* as, FutoInArgs* args);
void futoin_execute(FutoInAsyncSteps* root, FutoInAsyncSteps_error_callback unhandled_error,
        void* data);
void futoin_cancel(FutoInAsyncSteps* root);
int futoin_set_on_end(FutoInAsyncSteps* root, FutoInRootEndCallback cb, void* data);
FutoInBinaryValue futoin_val_i64(int64_t v);
FutoInBinaryValue futoin_val_u64(uint64_t v);
FutoInBinaryValue futoin_val_bool(bool v);
FutoInBinaryValue futoin_val_double(double v);
void futoin_reset_binval(FutoInBinaryValue* v);

/* Sync objects (sync.h). */
FutoInSync* futoin_mutex_new(FutoInLoop* loop, uint32_t max, uint32_t max_queue);
FutoInSync* futoin_throttle_new(FutoInLoop* loop, uint32_t max, uint32_t period_ms,
        uint32_t max_queue);
void futoin_limiter_options_init(FutoInLimiterOptions* opts);
FutoInSync* futoin_limiter_new(FutoInLoop* loop, const FutoInLimiterOptions* opts);
int futoin_sync_free(FutoInSync* sync);
#define FUTOIN_SYNC_UNLIMITED ...

const char* futoin_version(void);

/* Threads (threads.h, sync.h): loop pools, the worker pool, shared sync
 * objects. */
typedef struct FutoInLoopPool FutoInLoopPool;
typedef struct FutoInWorkResult {
    FutoInArgs args;
    const char* error;
    const char* info;
} FutoInWorkResult;
typedef void (*FutoInWorkFn)(void* work_data, FutoInWorkResult* out);
typedef void (*FutoInWorkRelease)(void* work_data);
typedef void (*FutoInPoolSetup)(FutoInAsyncSteps* root, void* data);
typedef void (*FutoInPoolDone)(void* data, const char* code);
#define FUTOIN_LOOP_STOP_DRAIN ...
#define FUTOIN_LOOP_STOP_NOW ...
FutoInLoopPool* futoin_loop_pool_new(unsigned n);
unsigned futoin_loop_pool_size(const FutoInLoopPool* pool);
int futoin_loop_pool_spawn(FutoInLoopPool* pool, FutoInPoolSetup setup, FutoInPoolDone done,
        void* data);
void futoin_loop_pool_stop(FutoInLoopPool* pool, int mode);
void futoin_loop_pool_free(FutoInLoopPool* pool);
void futoin_add_work(FutoInAsyncSteps* as, FutoInWorkFn fn, void* work_data,
        FutoInWorkRelease release);
int futoin_work_pool_configure(unsigned threads);
void futoin_work_pool_shutdown(void);
FutoInSync* futoin_mutex_new_shared(uint32_t max, uint32_t max_queue);
FutoInSync* futoin_throttle_new_shared(uint32_t max, uint32_t period_ms, uint32_t max_queue);
FutoInSync* futoin_limiter_new_shared(const FutoInLimiterOptions* opts);

/* The binding's own helpers (set_source below). */
FutoInBinaryValue pyf_val_str(const char* s, size_t n);
FutoInBinaryValue pyf_val_bytes(const char* s, size_t n);
FutoInBinaryValue pyf_val_array(int base, const void* data, size_t count, size_t elem_size);
FutoInBinaryValue pyf_val_object(void* handle);
int pyf_is_object(const FutoInBinaryValue* v);
extern const FutoInAsyncSteps_execute_callback pyf_step_c;
int pyf_add_python_step(FutoInAsyncSteps* as, const FutoInBinaryValue* fn,
        const FutoInBinaryValue* on_error);

extern "Python" {
    void pyf_step(FutoInAsyncSteps*, void*, const FutoInArgs*);
    void pyf_on_error(FutoInAsyncSteps*, void*, const char*);
    void pyf_on_cancel(FutoInAsyncSteps*, void*);
    void pyf_destroy(void*);
    void pyf_loop_body(FutoInAsyncSteps*, void*);
    void pyf_repeat_body(FutoInAsyncSteps*, void*, size_t);
    void pyf_object_release(void*);
    void pyf_unhandled(FutoInAsyncSteps*, void*, const char*);
    void pyf_on_end(FutoInAsyncSteps*, void*, const FutoInRootEnd*);
    void* pyf_state_alloc(void*);
    void pyf_state_free(void*, void*);
    void pyf_wakeup(void*);
    void pyf_timer(void*);
    void pyf_misuse(void*, FutoInAsyncSteps*, const char*);
    int pyf_add_from_c(FutoInAsyncSteps*, void*, void*);
    void pyf_work(void*, FutoInWorkResult*);
    void pyf_work_release(void*);
    void pyf_pool_setup(FutoInAsyncSteps*, void*);
    void pyf_pool_done(void*, const char*);
}
"""

SOURCE = r"""
#define FUTOIN_NO_TRACE_MACROS 1
#include <futoin/asyncsteps.h>
#include <futoin/asynctool.h>
#include <futoin/sync.h>
#include <futoin/threads.h>
#include <stdlib.h>
#include <string.h>

static void pyf_object_release(void* handle);
static int pyf_add_from_c(FutoInAsyncSteps* as, void* fn, void* on_error);
static void pyf_step(FutoInAsyncSteps*, void*, const FutoInArgs*);

/* Strings and bytes: a malloc'ed copy that the value's cleanup frees. */
static void pyf_free_cleanup(FutoInBinaryValue* v)
{
    free((void*)v->p);
}
static const FutoInType pyf_str_type = { FTN_TYPE_STRING, pyf_free_cleanup };
static const FutoInType pyf_bytes_type = { FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, pyf_free_cleanup };

static FutoInBinaryValue pyf_copy(const FutoInType* t, const char* s, size_t n)
{
    FutoInBinaryValue r;
    char* copy = (char*)malloc(n + 1);
    memset(&r, 0, sizeof(r));
    if (!copy) {
        return r;
    }
    memcpy(copy, s, n);
    copy[n] = 0;
    r.type = t;
    r.cstr = copy;
    r.length = (uint32_t)n;
    return r;
}
static FutoInBinaryValue pyf_val_str(const char* s, size_t n)
{
    return pyf_copy(&pyf_str_type, s, n);
}
static FutoInBinaryValue pyf_val_bytes(const char* s, size_t n)
{
    return pyf_copy(&pyf_bytes_type, s, n);
}

/* Arrays (array.array): a malloc'ed copy of the elements, one type per
 * base type, freed by the value's cleanup. */
#define PYF_ARRAY_TYPE(b) [b] = { (FutoInTypeFlags)((b) | FTN_TYPE_ARRAY), pyf_free_cleanup }
static const FutoInType pyf_array_types[16] = {
    PYF_ARRAY_TYPE(FTN_TYPE_BOOL),
    PYF_ARRAY_TYPE(FTN_TYPE_INT8),
    PYF_ARRAY_TYPE(FTN_TYPE_INT16),
    PYF_ARRAY_TYPE(FTN_TYPE_INT32),
    PYF_ARRAY_TYPE(FTN_TYPE_INT64),
    PYF_ARRAY_TYPE(FTN_TYPE_UINT8),
    PYF_ARRAY_TYPE(FTN_TYPE_UINT16),
    PYF_ARRAY_TYPE(FTN_TYPE_UINT32),
    PYF_ARRAY_TYPE(FTN_TYPE_UINT64),
    PYF_ARRAY_TYPE(FTN_TYPE_FLOAT),
    PYF_ARRAY_TYPE(FTN_TYPE_DOUBLE),
};
/* No type (an empty value) when out of memory or base is not a number. */
static FutoInBinaryValue pyf_val_array(int base, const void* data, size_t count, size_t elem_size)
{
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    if (base < 0 || base > 15 || !pyf_array_types[base].cleanup || count > UINT32_MAX) {
        return r;
    }
    void* copy = malloc(count * elem_size + 1);
    if (!copy) {
        return r;
    }
    memcpy(copy, data, count * elem_size);
    r.type = &pyf_array_types[base];
    r.p = copy;
    r.length = (uint32_t)count;
    return r;
}

/* A Python object: custom_data is a cffi handle the binding keeps alive
 * until this cleanup runs (exactly once, by whoever drops the value). */
static void pyf_object_cleanup(FutoInBinaryValue* v)
{
    pyf_object_release(v->custom_data);
}
static const FutoInType pyf_object_type = { FTN_TYPE_CUSTOM_OBJECT, pyf_object_cleanup };
static FutoInBinaryValue pyf_val_object(void* handle)
{
    return futoin_val_custom(&pyf_object_type, handle);
}
static int pyf_is_object(const FutoInBinaryValue* v)
{
    return v->type == &pyf_object_type;
}

/* The step callback as a C pointer, for C modules that add Python steps. */
static const FutoInAsyncSteps_execute_callback pyf_step_c = pyf_step;

/* The entry point for C code that adds a Python step (its address is
 * futoin_asyncsteps.C_ADD_STEP): fn and on_error are values that hold
 * Python callables, as a C step receives them among its arguments (a
 * Python step passed them on); on_error may be NULL or a value without a
 * type. Returns 0 when the step was added; -1 when a value is not a Python
 * object or not callable: then the flow as gets InternalError. Call it
 * only on the loop's thread, from a step or error handler of as (the
 * Python interpreter is entered; the binding's callbacks hold the GIL). */
static int pyf_add_python_step(FutoInAsyncSteps* as, const FutoInBinaryValue* fn,
        const FutoInBinaryValue* on_error)
{
    void* eh = NULL;
    if (!as) {
        return -1;
    }
    if (!fn || fn->type != &pyf_object_type) {
        futoin_error(as, "InternalError", "add_python_step(): fn is not a Python object");
        return -1;
    }
    if (on_error && on_error->type) {
        if (on_error->type != &pyf_object_type) {
            futoin_error(as, "InternalError",
                    "add_python_step(): on_error is not a Python object");
            return -1;
        }
        eh = on_error->custom_data;
    }
    return pyf_add_from_c(as, fn->custom_data, eh);
}
"""


def _split(name):
    value = os.environ.get(name, "")
    return [p for p in value.split(":") if p]


def make_ffi():
    include_dirs = []
    library_dirs = _split("FUTOIN_LIBRARY_DIRS")
    libraries = []
    extra_objects = []
    build_dir = os.environ.get("FUTOIN_BUILD_DIR")
    if build_dir:
        include_dirs.append(os.path.join(build_dir, "include"))
    include_dirs += _split("FUTOIN_INCLUDE_DIRS")
    if os.path.isdir(os.path.join(SRC_INCLUDE, "futoin")):
        include_dirs.append(SRC_INCLUDE)
    library = os.environ.get("FUTOIN_LIBRARY")
    if not library and build_dir:
        library = os.path.join(build_dir, "libfutoin_asyncsteps.a")
    if library:
        extra_objects.append(library)
    else:
        libraries.append("futoin_asyncsteps")
    ffi = FFI()
    ffi.cdef(CDEF)
    ffi.set_source(
        "futoin_asyncsteps._native",
        SOURCE,
        include_dirs=include_dirs,
        library_dirs=library_dirs,
        libraries=libraries + ["pthread"],
        extra_objects=extra_objects,
        extra_compile_args=["-std=gnu11"],
    )
    return ffi


ffibuilder = make_ffi()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
