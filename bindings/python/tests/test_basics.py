# SPDX-License-Identifier: MIT
# Steps, values both ways, errors and exceptions, timeouts, cancel, loops,
# parallel, state, wait_external and sync objects, loop timers, models.
import sys

import pytest

import futoin_asyncsteps as fa


class Thing:
    pass


def test_values_round_trip(vloop):
    obj = Thing()
    seen = []
    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(-5, 2**63 + 1, 1.5, True))
        root.add(lambda as_, *v: seen.append(v) or as_.success("žluť\x00x", b"\x00\xff", None, obj))
        root.add(lambda as_, *v: seen.append(v) or as_.success(False, 2**70, [1, 2]))
        result = root.run()
    assert seen[0] == (-5, 2**63 + 1, 1.5, True)
    assert type(seen[0][3]) is bool
    assert seen[1] == ("žluť\x00x", b"\x00\xff", None, obj)
    assert seen[1][3] is obj
    assert result == (False, 2**70, [1, 2])


def test_too_many_values(vloop):
    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(1, 2, 3, 4, 5))
        with pytest.raises(fa.Error) as e:
            root.run()
    assert e.value.code == "InternalError"
    assert e.value.info.startswith("MisuseError: at most four")


def test_error_and_handler(vloop):
    log = []

    def eh(as_, code):
        log.append((code, as_.error_info, as_.state["error_info"]))
        as_.success("fixed")

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.error("MyError", "bad thing"), eh)
        root.add(lambda as_, v: log.append(v))
        root.run()
    assert log == [("MyError", "bad thing", "bad thing"), "fixed"]


def test_error_does_not_return(vloop):
    after = []

    def step(as_):
        try:
            as_.error("E1")
        except Exception:  # the unwind is not an Exception
            after.append("caught")
        after.append("after")

    with fa.Root(vloop) as root:
        root.add(step)
        with pytest.raises(fa.Error) as e:
            root.run()
    assert e.value.code == "E1" and after == []


def test_exceptions_become_errors(vloop):
    codes = []

    def eh(as_, code):
        codes.append((code, as_.error_info))

    def raise_key(as_):
        raise KeyError("k")

    def raise_fa(as_):
        raise fa.Error("Custom", "custom info")

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.add(raise_key), lambda as_, c: eh(as_, c) or as_.success())
        root.add(lambda as_: as_.add(raise_fa), lambda as_, c: eh(as_, c) or as_.success())
        root.add(lambda as_: 1 / 0)
        with pytest.raises(fa.Error) as e:
            root.run()
    assert codes == [("InternalError", "KeyError: 'k'"), ("Custom", "custom info")]
    assert e.value.code == "InternalError"
    assert e.value.info == "ZeroDivisionError: division by zero"


def test_unhandled_callback(vloop):
    got = []
    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.error("Oops", "info"))
        root.execute(on_unhandled=lambda code, info: got.append((code, info)))
        vloop.run()
        assert root.end[0] == "error"
    assert got == [("Oops", "info")]


def test_timeout_on_virtual_clock(vloop):
    log = []

    def waiting(as_):
        as_.set_timeout(1.5)
        as_.set_cancel(lambda a: log.append(("cancel", vloop.now)))
        as_.wait_external()

    with fa.Root(vloop) as root:
        root.add(waiting, lambda as_, code: log.append((code, vloop.now)))
        with pytest.raises(fa.Error) as e:
            root.run()
    assert e.value.code == "Timeout"
    assert log == [("cancel", 1.5), ("Timeout", 1.5)]


def test_wait_external_completed_from_outside(vloop):
    box = []
    with fa.Root(vloop) as root:
        root.add(lambda as_: box.append(as_) or as_.wait_external())
        root.add(lambda as_, v: as_.success(v * 2))
        root.execute()
        vloop.run()
        assert root.running
        box[0].success(21)
        with pytest.raises(fa.MisuseError):
            box[0].success(1)
        vloop.run()
        assert root.end == ("success", None, "", (42,))


def test_wait_external_error_from_outside(vloop):
    box = []
    with fa.Root(vloop) as root:
        root.add(lambda as_: box.append(as_) or as_.wait_external(), lambda as_, c: as_.success(c))
        root.execute()
        vloop.run()
        box[0].error("Later", "from outside")
        vloop.run()
        assert root.end[0] == "success" and root.end[3] == ("Later",)


def test_cancel_runs_handlers_and_releases(vloop):
    log = []

    def outer(as_):
        as_.set_cancel(lambda a: log.append("outer"))
        as_.add(inner)

    def inner(as_):
        as_.set_cancel(lambda a: log.append("inner"))
        as_.wait_external()

    with fa.Root(vloop) as root:
        root.add(outer)
        root.add(lambda as_: log.append("never"))
        root.execute()
        vloop.run()
        root.cancel()
        assert root.end[0] == "cancelled"
    assert log == ["inner", "outer"]


def test_close_running_root(vloop):
    root = fa.Root(vloop)
    root.add(lambda as_: as_.wait_external())
    root.execute()
    vloop.run()
    root.close()
    assert root.end[0] == "freed"
    with pytest.raises(fa.MisuseError):
        root.add(lambda as_: None)


def test_loops_with_labels(vloop):
    log = []

    def outer(as_):
        log.append("o")
        as_.repeat(5, lambda a, i: inner_body(a, i), label="inner")

    def inner_body(as_, i):
        log.append(i)
        if i == 1:
            as_.continue_loop("inner")
        if i == 3:
            as_.break_loop("outer")

    with fa.Root(vloop) as root:
        root.loop(outer, label="outer")
        root.add(lambda as_: log.append("end"))
        root.run()
    assert log == ["o", 0, 1, 2, 3, "end"]


def test_for_each(vloop):
    log = []
    with fa.Root(vloop) as root:
        root.for_each(["a", "b"], lambda as_, i, v: log.append((i, v)))
        root.for_each({"k": 1, "m": 2}, lambda as_, k, v: log.append((k, v)))
        root.for_each((x * x for x in range(4)), lambda as_, i, v: log.append(v))
        root.run()
    assert log == [(0, "a"), (1, "b"), ("k", 1), ("m", 2), 0, 1, 4, 9]


def test_parallel_and_state(vloop):
    log = []

    def branch(name):
        def step(as_):
            log.append(name)
            as_.add(lambda a: log.append(name + ".1") or a.state.__setitem__(name, len(log)))

        return step

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.state.__setitem__("start", 1))
        p = root.parallel()
        p.add(branch("A")).add(branch("B"))
        root.add(lambda as_: as_.success(dict(as_.state)))
        result = root.run()
    assert log == ["A", "B", "A.1", "B.1"]
    assert result == {"start": 1, "A": 3, "B": 4}


def test_parallel_error_handler(vloop):
    with fa.Root(vloop) as root:
        p = root.parallel(lambda as_, code: as_.success("p:" + code))
        p.add(lambda as_: as_.wait_external())
        p.add(lambda as_: as_.error("Branch"))
        assert root.run() == "p:Branch"


def test_mutex(vloop):
    log = []
    mutex = fa.Mutex(vloop, 1)

    def flow(name):
        root = fa.Root(vloop)

        def inside(as_):
            log.append(name + "+")
            as_.set_timeout(10)
            as_.wait_external()
            vloop_later.append(as_)

        root.sync(mutex, inside)
        root.add(lambda as_: log.append(name + "-"))
        return root

    vloop_later = []
    roots = [flow("a"), flow("b")]
    for r in roots:
        r.execute()
    vloop.iterate()
    vloop.iterate()
    assert log == ["a+"]
    vloop_later.pop(0).success()
    vloop.iterate()
    vloop.iterate()
    assert log == ["a+", "a-", "b+"]
    vloop_later.pop(0).success()
    vloop.run()
    assert log == ["a+", "a-", "b+", "b-"]
    for r in roots:
        r.close()
    mutex.close()


def test_throttle_and_limiter(vloop):
    times = []
    throttle = fa.Throttle(vloop, 1, period=1.0)
    with fa.Root(vloop) as root:
        root.repeat(3, lambda as_, i: as_.sync(throttle, lambda a: times.append(vloop.now)))
        root.run()
    assert times == [0.0, 1.0, 2.0]
    throttle.close()
    limiter = fa.Limiter(vloop, concurrent=1, max_queue=0)
    log = []
    with fa.Root(vloop) as r1, fa.Root(vloop) as r2:
        r1.sync(limiter, lambda as_: as_.wait_external())
        # The rejection reaches the steps around the sync step (sync.h).
        r2.add(lambda as_: as_.sync(limiter, lambda a: None), lambda as_, code: log.append(code))
        r1.execute()
        vloop.iterate()
        r2.execute(on_unhandled=lambda c, i: None)
        vloop.iterate()
        vloop.iterate()
    assert log == ["DefenseRejected"]
    limiter.close()


def test_timers(vloop):
    log = []
    t1 = vloop.call_later(0.2, log.append, "later")
    vloop.call_soon(log.append, "soon")
    t3 = vloop.call_later(0.1, log.append, "cancelled")
    assert t1.active and t3.active
    t3.cancel()
    t3.cancel()  # no effect the second time
    assert not t3.active
    vloop.run()
    assert log == ["soon", "later"] and vloop.now == 0.2
    assert not t1.active
    t1.cancel()  # after it ran: no effect
    vloop.call_soon(lambda: 1 / 0)  # printed to stderr, the loop goes on
    vloop.call_soon(log.append, "after")
    vloop.run()
    assert log[-1] == "after"
    with pytest.raises(TypeError):
        vloop.call_soon(42)
    assert fa.live_count() == 0


def test_timers_dropped_with_the_loop():
    loop = fa.Loop(virtual=True)
    payload = Thing()
    base = sys.getrefcount(payload)
    timer = loop.call_later(10, lambda p=payload: p)
    assert sys.getrefcount(payload) > base
    loop.close()
    assert not timer.active and fa.live_count() == 0
    del timer
    assert sys.getrefcount(payload) == base


def test_success_step_values_and_root_state(vloop):
    def step(as_):
        as_.add(lambda a: a.success("ignored"))
        as_.success_step("injected", 2)

    with fa.Root(vloop) as root:
        root.state["greeting"] = "hi"
        root.add(step)
        root.add(lambda as_, s, n: as_.success(as_.state.greeting, s, n))
        assert root.run() == ("hi", "injected", 2)


def test_model_copies(vloop):
    model = fa.Model()
    model.state["count"] = 0
    model.add(lambda as_: as_.state.update(count=as_.state["count"] + 1))
    model.repeat(2, lambda as_, i: as_.state.update(count=as_.state["count"] + 10))
    model.for_each([100, 1000], lambda as_, i, v: as_.state.update(count=as_.state["count"] + v))
    par = model.parallel()
    par.add(lambda as_: as_.state.update(a=1)).add(lambda as_: as_.state.update(b=2))
    inner = fa.Model()
    inner.add(lambda as_: as_.success(as_.state["count"], as_.state["a"] + as_.state["b"]))
    model.copy_from(inner)
    for _ in range(2):  # each copy runs anew, with state of its own
        with fa.Root(vloop) as root:
            root.copy_from(model)
            assert root.run() == (1121, 3)
    with fa.Root(vloop) as root:
        root.state["count"] = 5  # present: not replaced by the model's
        root.add(lambda as_: as_.copy_from(model))
        assert root.run() == (1126, 3)
    with fa.Root(vloop) as root, pytest.raises(TypeError):
        root.copy_from(object())
    assert fa.live_count() == 0


def test_misuse_handler(vloop, capfd):
    reports = []
    vloop.set_misuse_handler(reports.append)

    def waits(as_):
        as_.set_cancel(lambda a: 1 / 0)

    def reenters(as_):
        vloop.iterate()  # a round inside a round: refused, reported

    with fa.Root(vloop) as root:
        root.add(reenters)
        root.add(waits)
        root.execute()
        vloop.call_soon(lambda: int("x"))
        vloop.iterate()
        vloop.iterate()
        root.cancel()
    assert len(reports) == 3, reports
    assert reports[0].startswith("futoin_loop_iterate() called from inside a callback")
    assert reports[1] == "exception in a timer: ValueError: invalid literal for int() with base 10: 'x'"
    assert reports[2] == "exception in a cancel handler: ZeroDivisionError: division by zero"
    assert capfd.readouterr().err == ""
    # A handler that raises: its exception goes to stderr; None: the default.
    vloop.set_misuse_handler(lambda info: 1 / 0)
    vloop.call_soon(lambda: int("x"))
    vloop.run()
    assert "exception in the misuse handler" in capfd.readouterr().err
    vloop.set_misuse_handler(None)
    vloop.call_soon(lambda: int("x"))
    vloop.run()
    err = capfd.readouterr().err
    assert "exception in a timer" in err and "ValueError" in err
