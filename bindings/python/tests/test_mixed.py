# SPDX-License-Identifier: MIT
# Python steps and C steps (tests/csteps.c) in one flow: values both ways,
# errors raised in one language and handled in the other, timeout and
# cancel of a C step.
import array

import pytest

import futoin_asyncsteps as fa


@pytest.fixture
def c(cmod):
    """The C functions as function pointers (cffi's addressof)."""

    class Pointers:
        def __getattr__(self, name):
            return cmod.ffi.addressof(cmod.lib, name)

    return Pointers()


def test_values_python_c_python(vloop, cmod, c):
    seen = []
    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(41))
        root.add_c(c.c_add_one)
        root.add(lambda as_, n: seen.append(n) or as_.success("py", 1.25))
        root.add_c(c.c_pair)
        assert root.run() == ("C:py", 2.5, True)
    assert seen == [42]


def test_python_error_recovered_in_c(vloop, cmod, c):
    def fails(as_):
        raise ValueError("from Python")

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.add(fails), c.c_recover)
        assert root.run() == ("recovered", len("InternalError"))


def test_c_error_handled_in_python(vloop, cmod, c):
    got = []

    def eh(as_, code):
        got.append((code, as_.error_info))
        as_.success()

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.add_c(c.c_fail), eh)
        root.run()
    assert got == [("CError", "raised in C")]


def test_timeout_and_cancel_of_a_c_step(vloop, cmod, c):
    before = cmod.lib.c_cancelled

    def outer(as_):
        as_.set_timeout(0.25)
        as_.add_c(c.c_wait)

    with fa.Root(vloop) as root:
        root.add(outer)
        with pytest.raises(fa.Error) as e:
            root.run()
    assert e.value.code == "Timeout" and vloop.now == 0.25
    assert cmod.lib.c_cancelled == before + 1
    with fa.Root(vloop) as root:
        root.add_c(c.c_wait)
        root.execute()
        vloop.iterate()
        root.cancel()
    assert cmod.lib.c_cancelled == before + 2


def test_c_adds_python_steps(vloop, cmod, c):
    """Python -> C -> Python: a C step adds a Python step (the callable
    passed to it as a value) after a C sub-step, values going both ways."""
    seen = []

    def py_from_c(as_, doubled):
        seen.append(doubled)
        as_.success("from Python", doubled + 1)

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(py_from_c, 20))
        root.add_c(c.c_call_python)
        root.add(lambda as_, s, n: as_.success(s + "!", n))
        assert root.run() == ("from Python!", 41)
    assert seen == [40]
    assert fa.live_count() == 0


def test_c_added_python_step_errors(vloop, cmod, c):
    """A Python step added by C fails; its Python handler (given by C)
    recovers; a C handler recovers an error raised in Python below C."""
    def fails(as_, n):
        raise fa.Error("PyError", "n=%d" % n)

    def handler(as_, code):
        as_.success("handled " + code, as_.error_info)

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(fails, 2, handler))
        root.add_c(c.c_call_python)
        assert root.run() == ("handled PyError", "n=4")
    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(fails, 3))
        root.add_c(c.c_call_python, c.c_recover)
        assert root.run() == ("recovered", len("PyError"))
    # Not a Python callable: InternalError in the flow, nothing added.
    for value in (5, "text", object()):
        with fa.Root(vloop) as root:
            root.add(lambda as_, v=value: as_.success(v))
            root.add_c(c.c_call_not_python)
            with pytest.raises(fa.Error) as e:
                root.run()
        assert e.value.code == "InternalError" and "add_python_step()" in e.value.info
    assert fa.live_count() == 0


def test_timeout_set_in_c_cancels_python(vloop, cmod, c):
    cancelled = []

    def waits(as_):
        as_.set_cancel(lambda a: cancelled.append(vloop.now))

    def eh(as_, code):
        as_.success(code)

    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(waits))
        root.add_c(c.c_timeout_python)
        with pytest.raises(fa.Error) as e:
            root.run()
    assert e.value.code == "Timeout" and cancelled == [0.05]
    def outer(as_):
        as_.add(lambda a: a.success(waits))
        as_.add_c(c.c_timeout_python)

    with fa.Root(vloop) as root:
        root.add(outer, eh)
        assert root.run() == "Timeout"
    assert cancelled == [0.05, 0.1]
    assert fa.live_count() == 0


def test_mutex_shared_by_python_and_c_flows(vloop, cmod, c):
    lib = cmod.lib
    lib.shared_inside = 0
    lib.shared_max = 0
    lib.shared_log[0] = b"\0"
    mutex = fa.Mutex(vloop, 1)

    def py_flow(i):
        name = b"P%d" % i

        def critical(as_):
            lib.c_enter(name)
            t = vloop.call_later(0.01, lambda: lib.c_leave(name) or as_.success())
            as_.set_cancel(lambda a: t.cancel() or lib.c_leave(name))

        return critical

    roots = []
    for i in range(4):
        py = fa.Root(vloop)
        py.add(lambda as_: None)  # as the C flow's first step
        py.sync(mutex, py_flow(i))
        croot = fa.Root(vloop)
        croot.add(lambda as_, i=i: as_.success(i))
        croot.add_c(c.c_sync_flow, data=mutex.c_pointer)
        roots += [py, croot]
    for root in roots:
        root.execute()
    vloop.run()
    log = cmod.ffi.string(lib.shared_log).decode()
    assert log == "P0+ P0- C0+ C0- P1+ P1- C1+ C1- P2+ P2- C2+ C2- P3+ P3- C3+ C3- "
    assert lib.shared_max == 1 and vloop.now == 0.08

    # A cancel releases the Mutex across languages: the C flow inside is
    # cancelled, the waiting Python flow enters; then the reverse.
    lib.shared_log[0] = b"\0"
    before = lib.c_cancelled
    for root in roots:
        root.close()
    croot = fa.Root(vloop)
    croot.add(lambda as_: as_.success(5))
    croot.add_c(c.c_sync_flow, data=mutex.c_pointer)
    py = fa.Root(vloop)
    py.sync(mutex, py_flow(5))
    croot.execute()
    while lib.shared_inside == 0:
        vloop.iterate()
    py.execute()
    vloop.iterate()
    croot.cancel()
    vloop.run()
    assert cmod.ffi.string(lib.shared_log).decode() == "C5+ C5- P5+ P5- "
    assert lib.c_cancelled == before + 1
    croot.close()
    py.close()
    lib.shared_log[0] = b"\0"
    py = fa.Root(vloop)
    py.sync(mutex, py_flow(6))
    croot = fa.Root(vloop)
    croot.add(lambda as_: as_.success(6))
    croot.add_c(c.c_sync_flow, data=mutex.c_pointer)
    py.execute()
    croot.execute()
    vloop.iterate()
    vloop.iterate()
    assert cmod.ffi.string(lib.shared_log).decode() == "P6+ "
    py.close()  # frees the running root: cancelled, the Mutex released
    vloop.run()
    assert cmod.ffi.string(lib.shared_log).decode() == "P6+ P6- C6+ C6- "
    croot.close()
    mutex.close()
    assert lib.shared_inside == 0 and fa.live_count() == 0


def test_arrays_and_wide_strings(vloop, cmod, c):
    """array.array goes to C as a typed array (a copy); C arrays come back
    as lists (uint8 as bytes), UTF-16/32 strings as str."""
    for value, expected in (
        (array.array("i", [1, 2, -3]), (0.0, 3)),
        (array.array("q", [2**40, 1]), (float(2**40 + 1), 2)),
        (array.array("d", [0.5, 0.25]), (0.75, 2)),
        (b"\x01\x02\xff", (258.0, 3)),
        (array.array("i"), (0.0, 0)),
    ):
        with fa.Root(vloop) as root:
            root.add(lambda as_, v=value: as_.success(v))
            root.add_c(c.c_sum)
            assert root.run() == expected
    seen = []
    with fa.Root(vloop) as root:
        root.add(lambda as_: as_.success(array.array("h", [7, -7]), array.array("B", b"ab")))
        root.add(lambda as_, *v: seen.append(v))
        root.add_c(c.c_arrays)
        assert root.run() == ([1, -2, 30000], "h\u00e9\u263a", "x\U0001f600")
    assert seen == [([7, -7], b"ab")]
