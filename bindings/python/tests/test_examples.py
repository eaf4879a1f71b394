# SPDX-License-Identifier: MIT
# The C examples of examples/, written in Python, against the expected
# output of examples/expected/*.txt byte for byte.
import os

import futoin_asyncsteps as fa

from conftest import SRC


def expected(name):
    with open(os.path.join(SRC, "examples", "expected", name + ".txt"), "rb") as f:
        return f.read()


def output(capfd):
    return capfd.readouterr().out.encode()


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
