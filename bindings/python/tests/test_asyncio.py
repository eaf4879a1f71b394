# SPDX-License-Identifier: MIT
# The loop driven by asyncio: flows and coroutines side by side on one
# thread, real timers, a step awaiting a coroutine, a root awaited.
import asyncio
import time

import pytest

import futoin_asyncsteps as fa


def test_root_awaited_with_timers(loop):
    log = []

    async def ticker():
        for i in range(3):
            log.append("tick")
            await asyncio.sleep(0.01)

    async def sleepy(value):
        await asyncio.sleep(0.02)
        log.append("awaited")
        return value

    def timed(as_):
        as_.set_timeout(0.03)
        as_.wait_external()

    async def main():
        root = fa.Root(loop)
        root.add(lambda as_: as_.await_(sleepy(20)))
        root.add(lambda as_, v: as_.success(v + 1))
        start = time.monotonic()
        result, _ = await asyncio.gather(root.run_async(), ticker())
        root.close()
        root = fa.Root(loop)
        root.add(timed)
        with pytest.raises(fa.Error) as e:
            await root.run_async()
        elapsed = time.monotonic() - start
        root.close()
        return result, e.value.code, elapsed

    result, code, elapsed = asyncio.run(main())
    assert result == 21
    assert code == "Timeout"
    assert "awaited" in log and log.count("tick") == 3
    assert elapsed >= 0.05  # the timers cannot fire early


def test_await_failure_and_cancel(loop):
    cancelled = []

    async def bad():
        await asyncio.sleep(0)
        raise fa.Error("Remote", "failed")

    async def forever():
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main():
        root = fa.Root(loop)
        root.add(lambda as_: as_.await_(bad()), lambda as_, code: as_.success(code, as_.error_info))
        r = await root.run_async()
        root.close()
        root = fa.Root(loop)
        root.add(lambda as_: as_.await_(forever()))
        root.execute()
        await asyncio.sleep(0.01)
        root.cancel()
        await asyncio.sleep(0.01)
        root.close()
        return r

    assert asyncio.run(main()) == ("Remote", "failed")
    assert cancelled == [True]


def test_task_cancel_cancels_the_root(loop):
    """Cancelling the asyncio task that awaits run_async() cancels the
    root: the step's cancel handler runs, the awaited coroutine of a step
    is cancelled, and the task ends with CancelledError."""
    log = []

    async def forever():
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            log.append("coroutine cancelled")
            raise

    def waits(as_):
        as_.set_cancel(lambda a: log.append("step cancelled"))
        as_.add(lambda a: a.await_(forever()))

    async def main():
        root = fa.Root(loop)
        root.add(waits)
        task = asyncio.ensure_future(root.run_async())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        end = root.end
        root.close()
        return end

    end = asyncio.run(main())
    assert end[0] == "cancelled"
    # Innermost first: the await step cancels its task (which sees the
    # cancel on asyncio's next round), then the outer step's handler runs.
    assert log == ["step cancelled", "coroutine cancelled"]
    assert fa.live_count() == 0


def test_work_result_wakes_asyncio(loop):
    """A worker's result reaches a loop driven by asyncio through the
    wake-up fd, while coroutines keep running."""
    ticks = []

    def blocking(n):
        time.sleep(0.05)
        return n * 2

    async def ticker():
        for _ in range(3):
            ticks.append(1)
            await asyncio.sleep(0.01)

    async def main():
        root = fa.Root(loop)
        root.add_work(blocking, 21)
        result, _ = await asyncio.gather(root.run_async(), ticker())
        root.close()
        return result

    assert asyncio.run(main()) == 42
    assert len(ticks) == 3
    assert fa.live_count() == 0
