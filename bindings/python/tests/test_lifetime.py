# SPDX-License-Identifier: MIT
# Callables and values are kept alive exactly as long as their step needs
# them: reference counts and traced memory come back after many steps,
# also when steps end by error, timeout, cancel or the root's free.
import gc
import os
import sys
import tracemalloc

import futoin_asyncsteps as fa

# FUTOIN_PY_STEPS: fewer under valgrind (scripts/test.sh).
N = int(os.environ.get("FUTOIN_PY_STEPS", "100000"))


class Payload:
    pass


def test_refcounts_over_many_steps(vloop):
    payload = Payload()

    def body(as_, i):
        as_.add(step, eh)

    def step(as_):
        as_.success(payload, "s", 1)

    def eh(as_, code):
        pass

    base_step = sys.getrefcount(step)
    base_payload = sys.getrefcount(payload)
    with fa.Root(vloop) as root:
        root.repeat(N, body)
        root.run()
    assert sys.getrefcount(step) == base_step
    assert sys.getrefcount(payload) == base_payload
    assert fa.live_count() == 0


def test_memory_is_flat(vloop):
    """Traced memory after N steps is what it was after 100: each step
    passes a new Python object and a string on, every tenth in a sub-step
    with bytes (tracemalloc slows every allocation: kept lean)."""

    def sub(as_):
        as_.success(Payload(), b"x" * 10)

    def body(as_, i):
        if i % 10:
            as_.success(Payload(), "s")
        else:
            as_.add(sub)

    def run(n):
        with fa.Root(vloop) as root:
            root.repeat(n, body)
            root.run()

    run(1000)
    gc.collect()
    tracemalloc.start()
    run(100)
    gc.collect()
    first = tracemalloc.get_traced_memory()[0]
    run(N)
    gc.collect()
    second = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert second - first < 64 * 1024


def test_released_on_error_timeout_cancel_and_free(vloop):
    payload = Payload()
    base = sys.getrefcount(payload)

    def waiting(as_):
        as_.set_cancel(lambda a: payload)
        as_.wait_external()

    for i in range(200):
        with fa.Root(vloop) as root:
            root.add(lambda as_: as_.success(payload))
            root.add(lambda as_, p: as_.error("E", "x"), lambda as_, c: None)
            root.execute(on_unhandled=lambda c, info: None)
            vloop.run()
        with fa.Root(vloop) as root:
            root.add(lambda as_: as_.set_timeout(0.01) or as_.add(waiting))
            root.add(lambda as_: payload)
            root.execute(on_unhandled=lambda c, info: None)
            vloop.run()
        root = fa.Root(vloop)
        root.add(waiting)
        root.add(lambda as_: payload)
        root.execute()
        vloop.iterate()
        if i % 2:
            root.cancel()
        root.close()
    assert sys.getrefcount(payload) == base
    assert fa.live_count() == 0


def test_loop_close_frees_roots_and_sync_objects():
    """A loop closed with roots inside sync objects, syncs not closed and
    timers pending: everything is released (valgrind checks the C side)."""
    payload = Payload()
    base = sys.getrefcount(payload)
    loop = fa.Loop(virtual=True)
    mutex = fa.Mutex(loop)
    throttle = fa.Throttle(loop, 1, 0.1)
    limiter = fa.Limiter(loop, concurrent=1, max_queue=5, rate=1, period=0.1, burst=5)
    roots = []
    for obj in (mutex, throttle, limiter, mutex, throttle, limiter):
        root = fa.Root(loop)
        root.add(lambda as_: as_.success(payload))
        root.sync(obj, lambda as_, p: as_.wait_external())
        root.execute()
        roots.append(root)
    loop.call_later(5, lambda p=payload: p)
    for _ in range(3):
        loop.iterate()
    loop.close()
    assert all(r._ptr is None for r in roots)
    assert mutex._ptr is None and limiter._ptr is None
    mutex.close()  # closed with the loop: nothing left to do
    assert fa.live_count() == 0
    assert sys.getrefcount(payload) == base
