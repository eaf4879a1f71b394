# SPDX-License-Identifier: MIT
"""The loop driven from asyncio: no thread, one program runs AsyncSteps
flows and coroutines side by side.

Driver(loop) runs futoin_loop_iterate() from asyncio callbacks: soon when
the loop has callbacks waiting, call_later() for its next timer, and again
when the wake-up callback says the plan changed (work added from an
asyncio callback) or the wake-up fd becomes readable (work from another
thread).
"""
import asyncio
import threading

from . import _exc_to_error, _report, ffi, lib

__all__ = ["Driver", "await_in_step"]


class Driver:
    """Drives a Loop (real clock) from an asyncio event loop."""

    def __init__(self, loop, aio_loop=None):
        if loop.virtual:
            raise ValueError("asyncio drives a real-clock loop, not a virtual one")
        self.loop = loop
        self.aio = aio_loop or asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._soon = None
        self._timer = None
        self._h = ffi.new_handle(self)
        ptr = loop._check()
        self._fd = lib.futoin_loop_wakeup_fd(ptr)
        if self._fd >= 0:
            self.aio.add_reader(self._fd, self._kick)
        lib.futoin_loop_set_wakeup(ptr, lib.pyf_wakeup, self._h)
        self._plan(lib.futoin_loop_next_delay(ptr))

    def _plan(self, delay_ms):
        if delay_ms < 0:
            return
        if delay_ms == 0:
            if self._soon is None:
                self._soon = self.aio.call_soon(self._kick)
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.aio.call_later(delay_ms / 1000.0, self._kick)

    def _kick(self):
        self._soon = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        ptr = self.loop._ptr
        if ptr is None:
            return
        nd = ffi.new("int64_t*")
        lib.futoin_loop_iterate(ptr, nd)
        self._plan(nd[0])

    def wakeup(self):
        if threading.get_ident() == self._thread:
            ptr = self.loop._ptr
            if ptr is not None:
                self._plan(lib.futoin_loop_next_delay(ptr))
        else:
            self.aio.call_soon_threadsafe(self._kick)

    def close(self):
        ptr = self.loop._ptr
        if ptr is not None:
            lib.futoin_loop_set_wakeup(ptr, ffi.NULL, ffi.NULL)
        if self._fd >= 0:
            self.aio.remove_reader(self._fd)
            self._fd = -1
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


@ffi.def_extern()
def pyf_wakeup(data):
    driver = ffi.from_handle(data)
    try:
        driver.wakeup()
    except BaseException as exc:
        _report(exc, driver.loop, "the asyncio wake-up")


def await_in_step(steps, awaitable):
    """Steps.await_(): the step waits for an asyncio future or coroutine."""
    fut = asyncio.ensure_future(awaitable)

    def done(f):
        if steps._done or steps._sd.dead:
            return
        if f.cancelled():
            steps.error("Cancelled", "the awaited future was cancelled")
            return
        exc = f.exception()
        if exc is not None:
            code, info = _exc_to_error(exc)
            steps.error(code, info)
            return
        res = f.result()
        if res is None:
            steps.success()
        elif isinstance(res, tuple):
            steps.success(*res)
        else:
            steps.success(res)

    def cancel(_as):
        fut.cancel()

    steps.set_cancel(cancel)
    steps.wait_external()
    fut.add_done_callback(done)
