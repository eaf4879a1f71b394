# SPDX-License-Identifier: MIT
# Python steps and C steps (tests/csteps.c) in one flow: values both ways,
# errors raised in one language and handled in the other, timeout and
# cancel of a C step.
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
