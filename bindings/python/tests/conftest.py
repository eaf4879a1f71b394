# SPDX-License-Identifier: MIT
# Shared fixtures: loops (virtual and real), and the small C module of the
# mixed-flow tests, built with cffi into a temporary directory.
import glob
import os
import sys

import pytest

import futoin_asyncsteps as fa

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("FUTOIN_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))


@pytest.fixture
def vloop():
    loop = fa.Loop(virtual=True)
    yield loop
    loop.close()


@pytest.fixture
def loop():
    loop = fa.Loop()
    yield loop
    loop.close()


@pytest.fixture(autouse=True)
def no_leak():
    before = fa.live_count()
    yield
    assert fa.live_count() == before


@pytest.fixture(scope="session")
def cmod(tmp_path_factory):
    """The C steps of tests/csteps.c as a cffi module (no library linked:
    it uses the header's inline calls through the interface's table)."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(
        """
        typedef struct FutoInAsyncSteps_ FutoInAsyncSteps;
        typedef struct FutoInArgs_ FutoInArgs;
        void c_add_one(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        void c_pair(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        void c_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        void c_recover(FutoInAsyncSteps* as, void* data, const char* code);
        void c_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        extern int c_cancelled;
        void c_set_add_python_step(uintptr_t address);
        void c_call_python(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        void c_timeout_python(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        void c_call_not_python(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        extern int shared_inside;
        extern int shared_max;
        extern char shared_log[1024];
        void c_enter(const char* who);
        void c_leave(const char* who);
        void c_sync_flow(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        void c_arrays(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        void c_sum(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
        """
    )
    include = [os.path.join(SRC, "include")]
    build_dir = os.environ.get("FUTOIN_BUILD_DIR")
    if build_dir:
        include.insert(0, os.path.join(build_dir, "include"))
    include += [p for p in os.environ.get("FUTOIN_INCLUDE_DIRS", "").split(":") if p]
    with open(os.path.join(HERE, "csteps.c")) as f:
        source = f.read()
    ffi.set_source("_futoin_csteps", source, include_dirs=include, extra_compile_args=["-std=gnu11"])
    # FUTOIN_CSTEPS_DIR: build the module there once and reuse it in the
    # next runs (scripts/test.sh: the valgrind run reuses the first run's,
    # instead of compiling under valgrind). A fresh directory per test
    # command: it is not rebuilt when csteps.c changes.
    cache = os.environ.get("FUTOIN_CSTEPS_DIR")
    out = cache or str(tmp_path_factory.mktemp("csteps"))
    if not (cache and glob.glob(os.path.join(out, "_futoin_csteps*.so"))):
        ffi.compile(tmpdir=out)
    sys.path.insert(0, out)
    import _futoin_csteps

    _futoin_csteps.lib.c_set_add_python_step(fa.C_ADD_STEP)
    return _futoin_csteps
