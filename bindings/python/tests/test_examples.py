# SPDX-License-Identifier: MIT
# The C examples of examples/, written in Python, against the expected
# output of examples/expected/*.txt (and .stderr) byte for byte. Examples
# that wait on timers run on the virtual clock: the same output, at once.
import os
import sys
import threading

import futoin_asyncsteps as fa

from conftest import SRC


def expected(name):
    with open(os.path.join(SRC, "examples", "expected", name + ".txt"), "rb") as f:
        return f.read()


def expected_err(name):
    with open(os.path.join(SRC, "examples", "expected", name + ".stderr"), "rb") as f:
        return f.read()


def output(capfd):
    return capfd.readouterr().out.encode()


def to_stderr(code, info):
    print("(unhandled error: %s)" % code, file=sys.stderr)


def ms(loop):
    return int(round(loop.now * 1000))


def test_spec_1_1_levels(loop, capfd):
    def level(n, more=None):
        def add1(as_):
            print("Level %d add #1" % n)
            if more:
                more(as_)

        return add1

    def add_level(as_, n, inner=None):
        as_.add(level(n, inner))
        as_.parallel().add(lambda a: print("Level %d parallel #2" % n))
        as_.add(lambda a: print("Level %d add #3" % n))

    with fa.Root(loop) as root:
        add_level(root, 0, lambda as_: add_level(as_, 1, lambda as2: add_level(as2, 2)))
        root.execute()
        loop.run()
    assert output(capfd) == expected("spec_1_1_levels")


def test_spec_1_2_error_handling(loop, capfd):
    def level1_func(as_):
        print("Level 1 func")
        as_.error("myerror")

    def level1_onerror(as_, err):
        print("Level 1 onerror: %s" % err)
        as_.error("newerror")

    def level0_func(as_):
        print("Level 0 func")
        as_.add(level1_func, level1_onerror)

    def level0_onerror(as_, err):
        print("Level 0 onerror: %s" % err)
        as_.success("Prm")

    def level0_func2(as_, param=None):
        print("Level 0 func2: %s" % (param if param is not None else "(none)"))
        as_.success()

    with fa.Root(loop) as root:
        root.add(level0_func, level0_onerror)
        root.add(level0_func2)
        root.execute()
        loop.run()
    assert output(capfd) == expected("spec_1_2_error_handling")


def test_simple_steps(loop, capfd):
    def step2(as_, value=""):
        if value == "MyValue":
            as_.add(lambda a: a.error("MyError", "Something bad has happened"))
        as_.success_step()

    def step2_onerror(as_, err):
        if err == "MyError":
            as_.success("NotSoBad")

    def branch(n, arg):
        def sub(as_):
            print("Parallel Step %d.1" % n)
            as_.state["p%d" % n] = as_.state["p%darg" % n] + str(n)
            as_.success()

        def step(as_):
            print("Parallel Step %d" % n)
            as_.add(sub)

        return step

    def step3(as_, value=""):
        if value == "NotSoBad":
            print("MyError was ignored: %s" % as_.state["error_info"])
        as_.state["p1arg"] = "abc"
        as_.state["p2arg"] = "xyz"
        as_.parallel().add(branch(1, "abc")).add(branch(2, "xyz"))

    def step4(as_):
        print("Parallel 1 result: %s" % as_.state["p1"])
        print("Parallel 2 result: %s" % as_.state["p2"])

    with fa.Root(loop) as root:
        root.add(lambda as_: as_.success("MyValue"))
        root.add(step2, step2_onerror)
        root.add(step3)
        root.add(step4)
        root.execute()
        loop.run()
    assert output(capfd) == expected("simple_steps")


def test_spec_1_2_1_steps_in_error_handler(loop, capfd):
    def level2_func(as_):
        print("Level 2 func")
        as_.error("second")

    def level2_onerror(as_, err):
        print("Level 2 onerror: %s" % err)  # no success(): the error goes on

    def level1_func(as_):
        print("Level 1 func")
        as_.error("first")

    def level1_onerror(as_, err):
        print("Level 1 onerror: %s" % err)
        as_.add(level2_func, level2_onerror)  # the failed step's replacement

    def level0_func(as_):
        print("Level 0 func")
        as_.add(level1_func, level1_onerror)

    def level0_onerror(as_, err):
        print("Level 0 onerror: %s" % err)

    with fa.Root(loop) as root:
        root.add(level0_func, level0_onerror)
        root.execute(on_unhandled=to_stderr)
        loop.run()
    out = capfd.readouterr()
    assert out.out.encode() == expected("spec_1_2_1_steps_in_error_handler")
    assert out.err.encode() == expected_err("spec_1_2_1_steps_in_error_handler")


def test_quickstart(vloop, capfd):
    def fetch(as_):
        print("fetch: waiting for a reply")
        as_.set_timeout(0.1)  # no reply within 100 ms: Timeout

    def fetch_failed(as_, code):
        print("fetch failed: %s" % code)
        as_.success("cached value")

    def use(as_, value="(none)"):
        print("use: %s" % value)

    with fa.Root(vloop) as root:
        root.add(fetch, fetch_failed)
        root.add(use)
        root.execute(on_unhandled=lambda code, info: print("unhandled error: %s" % code))
        vloop.run()
    assert output(capfd) == expected("quickstart")
    assert vloop.now == 0.1


def test_async_loops(loop, capfd):
    def step(as_):
        as_.repeat(3, lambda a, i: print("> Repeat: %d" % i))
        as_.for_each([1, 2, 3], lambda a, i, v: print("> forEach: %d = %d" % (i, v)))
        as_.for_each({"a": 1, "b": 2, "c": 3}, lambda a, k, v: print("> forEach: %s = %d" % (k, v)))

    with fa.Root(loop) as root:
        root.add(step)
        root.execute()
        loop.run()
    assert output(capfd) == expected("async_loops")


def test_external_event_wait(vloop, capfd):
    request = {"pending": 0}

    def step1(as_):
        vloop.call_soon(as_.success, "async success()")  # "setImmediate"
        as_.set_timeout(0.01)  # also makes the step wait for success()

    def step2(as_, value="(none)"):
        print(value)
        request["pending"] = 1  # a read that never completes
        as_.set_cancel(lambda a: request.update(pending=0))
        as_.set_timeout(1.0)

    def step2_onerror(as_, err):
        print("%s: %s" % (err, as_.error_info))  # empty after a Timeout

    with fa.Root(vloop) as root:
        root.add(step1)
        root.add(step2, step2_onerror)
        root.execute(on_unhandled=to_stderr)
        vloop.run()
    out = capfd.readouterr()
    assert out.out.encode() == expected("external_event_wait")
    assert out.err.encode() == expected_err("external_event_wait")
    assert request["pending"] == 0 and vloop.now == 1.0


def test_model_steps(loop, capfd):
    model = fa.Model()
    model.state["var"] = "Vanilla"

    def model_step(as_):
        print("-----")
        print("Hi! I am from model_as")
        print("State.var: %s" % as_.state["var"])
        as_.state["var"] = "Dirty"

    model.add(model_step)

    def outer_step(as_):
        as_.add(lambda a: print(">> The first inner step"))
        as_.copy_from(model)  # the model's steps become sub-steps
        as_.success_step()

    roots = []
    for i in range(3):
        root = fa.Root(loop)
        root.copy_from(model)
        root.add(outer_step)
        root.execute()
        roots.append(root)
    loop.run()
    for root in roots:
        root.close()
    assert output(capfd) == expected("model_steps")


def waiting_for(loop, as_, seconds):
    """The step completes after seconds, from a loop timer."""
    timer = loop.call_later(seconds, as_.success)
    as_.set_cancel(lambda a: timer.cancel())


def quiet_unhandled(code, info):
    print("unhandled error %s (%s)" % (code, info), file=sys.stderr)


def test_mutex_flows(vloop, capfd):
    mutex = fa.Mutex(vloop, 2)
    count = {"inside": 0, "max": 0}
    print("Mutex(2) shared by 10 flows; flow i stays (i % 3 + 1) * 10 ms")

    def flow(i):
        def leave(as_):
            count["inside"] -= 1
            print("t=%3d flow %d leave" % (ms(vloop), i))

        def critical_section(as_):
            count["inside"] += 1
            count["max"] = max(count["max"], count["inside"])
            print("t=%3d flow %d enter (inside: %d)" % (ms(vloop), i, count["inside"]))
            as_.add(lambda a: waiting_for(vloop, a, (i % 3 + 1) * 0.01))
            as_.add(leave)

        return critical_section

    roots = []
    for i in range(10):
        root = fa.Root(vloop)
        root.sync(mutex, flow(i))
        root.execute(on_unhandled=quiet_unhandled)
        roots.append(root)
    vloop.run()
    print("done at t=%d, at most %d inside" % (ms(vloop), count["max"]))
    for root in roots:
        root.close()
    mutex.close()
    assert output(capfd) == expected("mutex_flows")


def test_throttle_pacing(vloop, capfd):
    throttle = fa.Throttle(vloop, 3, 0.1)
    print("Throttle(3 per 100 ms); flow i arrives at 15 * i ms")

    def flow(i):
        arrive_ms = i * 15

        def arrive(as_):
            if arrive_ms:
                waiting_for(vloop, as_, arrive_ms / 1000.0)

        def critical_section(as_):
            now = ms(vloop)
            print(
                "t=%3d flow %d enters (arrived t=%3d, waited %3d ms)"
                % (now, i, arrive_ms, now - arrive_ms)
            )

        return arrive, critical_section

    roots = []
    for i in range(10):
        arrive, critical_section = flow(i)
        root = fa.Root(vloop)
        root.add(arrive)
        root.sync(throttle, critical_section)
        root.execute(on_unhandled=quiet_unhandled)
        roots.append(root)
    vloop.run()
    print("done at t=%d" % ms(vloop))
    for root in roots:
        root.close()
    throttle.close()
    assert output(capfd) == expected("throttle_pacing")


def test_limiter_rejects(vloop, capfd):
    limiter = fa.Limiter(vloop, concurrent=3, max_queue=1, rate=2, period=0.1, burst=1)
    count = {"served": 0, "rejected": 0}
    print(
        "Limiter: 3 at once + 1 waiting, 2 per 100 ms + 1 waiting; "
        "%d requests at t=0, 10 ms each" % 6
    )

    def request(i):
        def finish(as_):
            count["served"] += 1
            print("t=%3d request %d done" % (ms(vloop), i))

        def handle(as_):
            print("t=%3d request %d start" % (ms(vloop), i))
            as_.add(lambda a: waiting_for(vloop, a, 0.01))
            as_.add(finish)

        # DefenseRejected comes from the Limiter, outside the critical
        # section: the handler of the step around the sync step gets it.
        def on_error(as_, code):
            count["rejected"] += 1
            print("t=%3d request %d rejected: %s (%s)" % (ms(vloop), i, code, as_.error_info))
            as_.success()

        return (lambda as_: as_.sync(limiter, handle)), on_error

    roots = []
    for i in range(6):
        root = fa.Root(vloop)
        root.add(*request(i))
        root.execute(on_unhandled=quiet_unhandled)
        roots.append(root)
    vloop.run()
    print("served %d, rejected %d" % (count["served"], count["rejected"]))
    for root in roots:
        root.close()
    limiter.close()
    assert output(capfd) == expected("limiter_rejects")


def test_threads_pool(capfd):
    """Loop threads, the worker pool and a shared Mutex: six jobs on a
    pool of two loops, each computing a checksum on a worker, then
    appending to a shared ledger inside the shared Mutex."""
    JOBS, LOOPS, WORKERS, BAD_JOB = 6, 2, 2, 4
    ledger_lock = fa.Mutex.shared(1)
    ledger = []
    cond = threading.Condition()
    counts = {"inside": 0, "max": 0, "finished": 0}
    outcome = {}
    checksum = {}
    fa.work_pool_configure(WORKERS)  # False if already running: kept as is

    def checksum_work(job):
        # On a worker thread: may block, must not touch the loop.
        if job == BAD_JOB:
            raise fa.Error("BadInput", "record %d is malformed" % job)
        record = b"record-%d" % job
        h = 2166136261
        for _ in range(20000):
            for c in record:
                h = ((h ^ c) * 16777619) & 0xFFFFFFFF
        return h

    def append_work(job):
        ledger.append(job)  # the job holds ledger_lock meanwhile

    def job_setup(job):
        def leave_section(as_):
            with cond:
                counts["inside"] -= 1

        def record(as_, value):
            checksum[job] = value
            with cond:
                counts["inside"] += 1
                counts["max"] = max(counts["max"], counts["inside"])
            as_.add_work(append_work, job)
            as_.add(leave_section)

        def setup(root):
            root.add_work(checksum_work, job)
            root.sync(ledger_lock, record)

        return setup

    def job_done(job):
        def done(code):
            with cond:
                outcome[job] = code or "ok"
                counts["finished"] += 1
                cond.notify()

        return done

    pool = fa.LoopPool(LOOPS)
    print(
        "%d jobs on %d loop threads, blocking work on %d worker threads"
        % (JOBS, pool.size, WORKERS)
    )
    started = 0
    for job in range(1, JOBS + 1):
        pool.spawn(job_setup(job), job_done(job))
        started += 1
    with cond:
        cond.wait_for(lambda: counts["finished"] == started, timeout=60)
    pool.close()
    fa.work_pool_shutdown()
    for job in range(1, JOBS + 1):
        if outcome[job] == "ok":
            print("job %d: checksum %08x, recorded" % (job, checksum[job]))
            assert ledger.count(job) == 1
        else:
            print("job %d: failed with %s, not recorded" % (job, outcome[job]))
            assert job not in ledger
    print("ledger: %d records" % len(ledger))
    print("jobs inside the shared Mutex at once: at most %d" % counts["max"])
    ledger_lock.close()
    assert output(capfd) == expected("threads_pool")
