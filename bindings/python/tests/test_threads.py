# SPDX-License-Identifier: MIT
# Threads: blocking work on the worker pool (add_work), roots on the loop
# threads of a LoopPool, a shared Mutex; callables released on the loop
# thread however the work ends.
import threading
import time

import pytest

import futoin_asyncsteps as fa


def test_add_work_results_and_errors(loop):
    main = threading.get_ident()
    threads = []

    def work(a, b):
        threads.append(threading.get_ident())
        time.sleep(0.01)  # blocking: the loop is free meanwhile
        return a + b, "sum"

    def bad():
        raise ValueError("bad input")

    def remote():
        raise fa.Error("Remote", "refused")

    with fa.Root(loop) as root:
        root.add_work(work, 40, 2)
        root.add(lambda as_, n, s: as_.success(n, s, threading.get_ident() == main))
        assert root.run() == (42, "sum", True)
    assert threads and threads[0] != main
    for fn, code, info in ((bad, "InternalError", "ValueError: bad input"), (remote, "Remote", "refused")):
        with fa.Root(loop) as root:
            root.add_work(fn)
            with pytest.raises(fa.Error) as e:
                root.run()
        assert (e.value.code, e.value.info) == (code, info)
    assert fa.live_count() == 0


def test_add_work_cancelled_by_timeout(loop):
    started = threading.Event()
    release = threading.Event()

    def slow():
        started.set()
        release.wait(5)
        return "late"

    def outer(as_):
        as_.set_timeout(0.1)
        as_.add_work(slow)

    with fa.Root(loop) as root:
        root.add(outer, lambda as_, code: as_.success(code))
        assert root.run() == "Timeout"
    # A worker picks the work up at once, but a loaded machine may take
    # longer than the timeout: then fn never runs, which is right too.
    if started.wait(1):
        assert fa.live_count() == 1  # the work is still running: kept
    release.set()
    fa.work_pool_shutdown()  # the result reaches the loop, dropped there
    loop.run()
    assert fa.live_count() == 0


def test_sync_step_gets_previous_results(vloop):
    mutex = fa.Mutex(vloop)
    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(1, "two"))
        root.sync(mutex, lambda as_, a, b: as_.success(b, a))
        assert root.run() == ("two", 1)
    mutex.close()


def test_loop_pool_roots_and_shared_mutex():
    """Twenty roots on four loop threads: each enters a shared Mutex(2);
    at most two are inside at once whatever thread runs them."""
    mutex = fa.Mutex.shared(2)
    lock = threading.Condition()
    state = {"inside": 0, "max": 0, "done": [], "threads": set()}

    def setup_for(i):
        def leave(as_, v):
            with lock:
                state["inside"] -= 1
            as_.success(v * 2)

        def critical(as_, v):
            with lock:
                state["inside"] += 1
                state["max"] = max(state["max"], state["inside"])
                state["threads"].add(threading.get_ident())
            as_.add_work(time.sleep, 0.005)
            as_.add(lambda a: a.success(v))
            as_.add(leave)

        def setup(root):
            root.add(lambda as_: as_.success(i))
            root.sync(mutex, critical)
            if i == 7:
                root.add(lambda as_, v: as_.error("Seven", "on purpose"))

        return setup

    def done_for(i):
        def done(code):
            with lock:
                state["done"].append((i, code))
                lock.notify()

        return done

    with fa.LoopPool(4) as pool:
        assert pool.size == 4
        for i in range(20):
            pool.spawn(setup_for(i), done_for(i))
        with lock:
            assert lock.wait_for(lambda: len(state["done"]) == 20, timeout=60)
    assert sorted(state["done"]) == [(i, "Seven" if i == 7 else None) for i in range(20)]
    assert state["max"] == 2 and state["inside"] == 0
    assert len(state["threads"]) >= 1
    mutex.close()
    with pytest.raises(fa.MisuseError):
        pool.spawn(setup_for(0))
    assert fa.live_count() == 0


def test_loop_pool_stop_cancels_roots():
    codes = []
    entered = threading.Event()

    def setup(root):
        def waits(as_):
            as_.set_cancel(lambda a: codes.append("cancel handler"))
            entered.set()

        root.add(waits)

    pool = fa.LoopPool(1)
    pool.spawn(setup, codes.append)
    assert entered.wait(10)
    pool.stop()
    pool.close()
    assert codes == ["cancel handler", "Cancelled"]
    assert fa.live_count() == 0
