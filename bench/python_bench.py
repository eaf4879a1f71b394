# SPDX-License-Identifier: MIT
"""A chain of Python steps of the binding against the same chain written
as plain asyncio: coroutines (await asyncio.sleep(0) per step) and
callbacks (a loop.call_soon() chain), all timed in one run.

    FUTOIN_BUILD_DIR=... PYTHONPATH=<the built package> \
        /usr/bin/python3 bench/python_bench.py [steps]

Each workload passes an int from one step to the next and adds 1 (the
binding's steps in roots of 100 steps, created, run and closed); each is
the median of 5 repetitions (interleaved) after a warm-up, reported in ns
per step and as a ratio to the call_soon chain measured in the same run
(docs/PERFORMANCE.md).
"""
import asyncio
import statistics
import sys
import time

import futoin_asyncsteps as fa

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
REPEAT = 5


def bench_call_soon(n):
    """The floor of asyncio: each callback schedules the next."""

    async def main():
        aio = asyncio.get_running_loop()
        done = aio.create_future()

        def step(i, v):
            if i == n:
                done.set_result(v)
            else:
                aio.call_soon(step, i + 1, v + 1)

        t = time.perf_counter()
        aio.call_soon(step, 0, 0)
        assert await done == n
        return time.perf_counter() - t

    return asyncio.run(main())


def bench_coroutines(n):
    """The chain as a coroutine: await asyncio.sleep(0) per step."""

    async def main():
        t = time.perf_counter()
        v = 0
        for _ in range(n):
            await asyncio.sleep(0)
            v += 1
        assert v == n
        return time.perf_counter() - t

    return asyncio.run(main())


def _step(as_, v):
    as_.success(v + 1)


def _first(as_):
    as_.success(0)


CHAIN = 100


def _chain(loop):
    root = fa.Root(loop)
    root.add(_first)
    for _ in range(CHAIN - 1):
        root.add(_step)
    return root


def bench_steps_run(n):
    """Roots of CHAIN Python steps each (added, run by the blocking
    Root.run(), closed), n steps in all."""
    loop = fa.Loop()
    t = time.perf_counter()
    for _ in range(n // CHAIN):
        root = _chain(loop)
        assert root.run() == CHAIN - 1
        root.close()
    dt = time.perf_counter() - t
    loop.close()
    return dt


def bench_steps_asyncio(n):
    """The same, awaited from asyncio (the loop attached to asyncio's)."""
    loop = fa.Loop()

    async def main():
        t = time.perf_counter()
        for _ in range(n // CHAIN):
            root = _chain(loop)
            assert await root.run_async() == CHAIN - 1
            root.close()
        dt = time.perf_counter() - t
        return dt

    try:
        return asyncio.run(main())
    finally:
        loop.close()


def bench_repeat(n):
    """repeat(n) with a Python body: one Python callback per iteration."""
    loop = fa.Loop()
    root = fa.Root(loop)
    count = [0]

    def body(as_, i):
        count[0] += 1

    t = time.perf_counter()
    root.repeat(n, body)
    root.run()
    dt = time.perf_counter() - t
    assert count[0] == n
    root.close()
    loop.close()
    return dt


WORKLOADS = [
    ("loop.call_soon() chain (baseline)", bench_call_soon),
    ("coroutine, await asyncio.sleep(0) per step", bench_coroutines),
    ("Python steps (roots of 100), Root.run()", bench_steps_run),
    ("Python steps (roots of 100), await run_async()", bench_steps_asyncio),
    ("repeat() with a Python body", bench_repeat),
]


def main():
    print("futoin_asyncsteps %s, Python %s, %d steps per run, median of %d"
          % (fa.version(), sys.version.split()[0], N, REPEAT))
    for _name, fn in WORKLOADS:
        fn(N // 10)  # warm-up
    # Repetitions interleaved: a change of the machine's load in the middle
    # of the run touches every workload alike.
    times = {name: [] for name, _fn in WORKLOADS}
    for _ in range(REPEAT):
        for name, fn in WORKLOADS:
            times[name].append(fn(N))
    results = [(name, statistics.median(times[name]) / N * 1e9) for name, _fn in WORKLOADS]
    base = results[0][1]
    print("%-46s %10s %8s" % ("workload", "ns/step", "ratio"))
    for name, ns in results:
        print("%-46s %10.0f %8.2f" % (name, ns, ns / base))


if __name__ == "__main__":
    main()
