# SPDX-License-Identifier: MIT
"""FutoIn AsyncSteps for Python: a cffi binding of futoin_asyncsteps.

    import futoin_asyncsteps as fa

    loop = fa.Loop()
    with fa.Root(loop) as root:
        root.add(lambda as_: as_.success(1, "two"))
        root.add(lambda as_, a, b: print(a, b))
        root.run()

docs/PYTHON.md describes the API, the lifetime of callables and values,
and how exceptions become step errors.
"""
import array
import select
import sys
import time
import traceback
from collections.abc import Mapping, MutableMapping

from ._native import ffi, lib

__all__ = [
    "Error",
    "MisuseError",
    "Loop",
    "Root",
    "Steps",
    "Mutex",
    "Throttle",
    "Limiter",
    "UNLIMITED",
    "Model",
    "Timer",
    "C_ADD_STEP",
    "LoopPool",
    "work_pool_configure",
    "work_pool_shutdown",
    "live_count",
    "version",
]

# What the C side holds a handle to: step data, values that are Python
# objects, state mappings, timers, work items and pool roots. Each key is
# unique (a small holder object), its value the cffi handle the C side
# has; the entry goes away exactly once, when the library says it is done
# with the pointer.
_live = {}

# Labels of loops, break and continue: kept for the process (few).
_labels = {}


def live_count():
    """How many Python objects the C side currently holds (for leak checks)."""
    return len(_live)


def version():
    """The version of the library the binding runs with."""
    return ffi.string(lib.futoin_version()).decode()


class Error(Exception):
    """A step error: raise it in a step, or get it from Root.run().

    code is the FutoIn error code ("Timeout", "MyError", ...), info its
    error_info."""

    def __init__(self, code, info=""):
        super().__init__(code, info)
        self.code = str(code)
        self.info = "" if info is None else str(info)

    def __str__(self):
        return "%s: %s" % (self.code, self.info) if self.info else self.code


class MisuseError(RuntimeError):
    """A call that the binding refuses: a step used after it ended, more
    than four values, a root used after close()."""


class _Unwind(BaseException):
    """Raised by Steps.error(), break_loop() and continue_loop() inside a
    callback; the binding catches it when the callback returns."""


# Python Loop objects by the address of their FutoInLoop, to find a flow's
# misuse handler.
_loops = {}


def _report(exc, loop=None, what="a callback"):
    """An exception that cannot become a step error (in a cancel handler,
    a timer, an unhandled-error callback, a step that already completed):
    to the misuse handler of loop (a Loop, or a FutoInLoop*) if it has one,
    else to stderr with its traceback."""
    if loop is not None and not isinstance(loop, Loop):
        loop = _loops.get(int(ffi.cast("uintptr_t", loop)))
    handler = loop._misuse if loop is not None else None
    if handler is not None:
        name = type(exc).__name__
        msg = str(exc)
        try:
            handler("exception in %s: %s" % (what, "%s: %s" % (name, msg) if msg else name))
            return
        except BaseException as exc2:
            exc = exc2
            what = "the misuse handler"
    sys.stderr.write("futoin_asyncsteps: exception in %s:\n" % what)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def _cstr(s):
    if s is None:
        return ffi.NULL
    return s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)


def _label(label):
    if label is None:
        return ffi.NULL
    c = _labels.get(label)
    if c is None:
        c = _labels[label] = ffi.new("char[]", _cstr(label))
    return c


def _exc_to_error(exc):
    if isinstance(exc, Error):
        return exc.code, exc.info
    msg = str(exc)
    name = type(exc).__name__
    return "InternalError", ("%s: %s" % (name, msg)) if msg else name


def _error_info(ptr):
    return ffi.string(lib.futoin_error_info(ptr)).decode("utf-8", "surrogateescape")


# ---- values -----------------------------------------------------------------


class _Box:
    """A Python object travelling as a binary value."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


_ARRAY_CTYPES = {
    lib.FTN_TYPE_INT8: "int8_t",
    lib.FTN_TYPE_INT16: "int16_t",
    lib.FTN_TYPE_INT32: "int32_t",
    lib.FTN_TYPE_INT64: "int64_t",
    lib.FTN_TYPE_UINT16: "uint16_t",
    lib.FTN_TYPE_UINT32: "uint32_t",
    lib.FTN_TYPE_UINT64: "uint64_t",
    lib.FTN_TYPE_FLOAT: "float",
    lib.FTN_TYPE_DOUBLE: "double",
    lib.FTN_TYPE_BOOL: "bool",
}
_SCALARS = {
    lib.FTN_TYPE_BOOL: lambda v: bool(v.b),
    lib.FTN_TYPE_INT8: lambda v: v.i8,
    lib.FTN_TYPE_INT16: lambda v: v.i16,
    lib.FTN_TYPE_INT32: lambda v: v.i32,
    lib.FTN_TYPE_INT64: lambda v: v.i64,
    lib.FTN_TYPE_UINT8: lambda v: v.u8,
    lib.FTN_TYPE_UINT16: lambda v: v.u16,
    lib.FTN_TYPE_UINT32: lambda v: v.u32,
    lib.FTN_TYPE_UINT64: lambda v: v.u64,
    lib.FTN_TYPE_FLOAT: lambda v: v.f,
    lib.FTN_TYPE_DOUBLE: lambda v: v.d,
}


# array.array typecodes by what their items are here.
_ARRAY_BASES = {}
for _code in "bBhHiIlLqQfd":
    _size = array.array(_code).itemsize
    if _code in "fd":
        _base = lib.FTN_TYPE_FLOAT if _size == 4 else lib.FTN_TYPE_DOUBLE
    elif _code.islower():
        _base = {1: lib.FTN_TYPE_INT8, 2: lib.FTN_TYPE_INT16, 4: lib.FTN_TYPE_INT32, 8: lib.FTN_TYPE_INT64}[_size]
    else:
        _base = {1: lib.FTN_TYPE_UINT8, 2: lib.FTN_TYPE_UINT16, 4: lib.FTN_TYPE_UINT32, 8: lib.FTN_TYPE_UINT64}[_size]
    _ARRAY_BASES[_code] = _base
del _code, _size, _base

_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"


def _from_value(p):
    """The Python value of a FutoInBinaryValue* (borrowed: converted now)."""
    t = p.type
    if t == ffi.NULL:
        return None
    flags = t.flags
    base = flags & lib.FTN_BASE_TYPE_MASK
    if flags & lib.FTN_TYPE_ARRAY:
        if base == lib.FTN_TYPE_UINT8:
            return ffi.unpack(ffi.cast("const char*", p.p), p.length)
        ctype = _ARRAY_CTYPES.get(base)
        if ctype is not None:
            return ffi.unpack(ffi.cast("const %s*" % ctype, p.p), p.length)
        return p.p
    if base == lib.FTN_TYPE_STRING:
        return ffi.unpack(p.cstr, p.length).decode("utf-8", "surrogateescape")
    if base == lib.FTN_TYPE_STRING16:
        return ffi.buffer(p.p, p.length * 2)[:].decode(_UTF16, "surrogatepass")
    if base == lib.FTN_TYPE_STRING32:
        return ffi.buffer(p.p, p.length * 4)[:].decode(_UTF32, "surrogatepass")
    if base == lib.FTN_TYPE_CUSTOM_OBJECT:
        if lib.pyf_is_object(p):
            return ffi.from_handle(p.custom_data).obj
        return p.custom_data
    conv = _SCALARS.get(base)
    return conv(p) if conv else p.p


_NULL = ffi.NULL


def _from_args(args):
    if args == _NULL:
        return ()
    a = args.args
    # Up to the last value with a type: most steps get none or one.
    n = 4
    while n and a[n - 1].type == _NULL:
        n -= 1
    if n == 0:
        return ()
    if n == 1:
        return (_from_value(a + 0),)
    return tuple(_from_value(a + i) for i in range(n))


def _to_value(x):
    t = type(x)
    if t is bool:
        return lib.futoin_val_bool(x)
    if t is int:
        if -(1 << 63) <= x < (1 << 63):
            return lib.futoin_val_i64(x)
        if 0 <= x < (1 << 64):
            return lib.futoin_val_u64(x)
    elif t is float:
        return lib.futoin_val_double(x)
    elif t is str:
        b = x.encode("utf-8", "surrogateescape")
        v = lib.pyf_val_str(b, len(b))
        if v.type == ffi.NULL:
            raise MemoryError("futoin_asyncsteps: a string value")
        return v
    elif t is bytes or t is bytearray or t is memoryview:
        b = bytes(x)
        v = lib.pyf_val_bytes(b, len(b))
        if v.type == ffi.NULL:
            raise MemoryError("futoin_asyncsteps: a bytes value")
        return v
    elif t is array.array:
        base = _ARRAY_BASES.get(x.typecode)
        if base is not None:
            if len(x) >= 1 << 32:
                raise ValueError("futoin_asyncsteps: an array of 2**32 items or more")
            v = lib.pyf_val_array(base, ffi.from_buffer(x), len(x), x.itemsize)
            if v.type == ffi.NULL:
                raise MemoryError("futoin_asyncsteps: an array value")
            return v
    box = _Box(x)
    h = ffi.new_handle(box)
    _live[box] = h
    return lib.pyf_val_object(h)


# The library's plain types, for filling the commonest values in place
# (no call into C for them).
_T_I64 = lib.futoin_val_i64(0).type
_T_DOUBLE = lib.futoin_val_double(0.0).type
_I64_MIN = -(1 << 63)
_I64_END = 1 << 63


def _make_args(values):
    n = len(values)
    if n > 4:
        raise MisuseError("at most four values pass from a step to the next")
    args = ffi.new("FutoInArgs*")
    if n:
        a = args.args
        try:
            for i in range(n):
                x = values[i]
                t = type(x)
                if t is int and _I64_MIN <= x < _I64_END:
                    slot = a[i]
                    slot.type = _T_I64
                    slot.i64 = x
                elif t is float:
                    slot = a[i]
                    slot.type = _T_DOUBLE
                    slot.d = x
                elif x is not None:
                    a[i] = _to_value(x)
        except BaseException:
            for i in range(4):
                lib.futoin_reset_binval(a + i)
            raise
    return args


@ffi.def_extern()
def pyf_object_release(handle):
    box = ffi.from_handle(handle)
    del _live[box]


# ---- step data ----------------------------------------------------------------


class _StepData:
    """What a step of Python code needs: held (through _live) until the
    library calls the step's destroy, exactly once however it ends."""

    __slots__ = ("kind", "fn", "on_error", "extra", "label", "cancel_fn", "waiting", "dead")

    def __init__(self, kind, fn, on_error=None, extra=None, label=None):
        self.kind = kind
        self.fn = fn
        self.on_error = on_error
        self.extra = extra
        self.label = label
        self.cancel_fn = None
        self.waiting = None
        self.dead = False


def _c_pointer(x, ctype):
    """A C pointer from a cdata of any FFI (a C module's) or an address."""
    if x is None:
        return ffi.NULL
    if isinstance(x, int):
        return ffi.cast(ctype, x)
    # A cdata of another FFI: through its address (cffi's cast takes any
    # pointer cdata to an integer).
    return ffi.cast(ctype, ffi.cast("uintptr_t", x))


def _add_owned(ptr, sd):
    h = ffi.new_handle(sd)
    _live[sd] = h
    eh = sd.on_error
    if eh is None:
        c_eh = ffi.NULL
    elif not isinstance(eh, (ffi.CData, int)):
        c_eh = lib.pyf_on_error
    else:
        # A C error handler (a function pointer of a C module); it gets the
        # step's data pointer, which it must not use.
        c_eh = _c_pointer(eh, "FutoInAsyncSteps_error_callback")
    # On a refused call, destroy runs before this returns.
    lib.futoin_add_owned(ptr, lib.pyf_step, c_eh, h, lib.pyf_destroy)


@ffi.def_extern(error=-1)
def pyf_add_from_c(ptr, fn_handle, eh_handle):
    fn = ffi.from_handle(fn_handle).obj
    eh = ffi.from_handle(eh_handle).obj if eh_handle != ffi.NULL else None
    if not callable(fn) or (eh is not None and not callable(eh)):
        lib.futoin_error(ptr, b"InternalError", b"add_python_step(): the value is not callable")
        return -1
    _add_owned(ptr, _StepData("step", fn, eh))
    return 0


#: The address of the C entry point that adds a Python step, for C code:
#: int (*)(FutoInAsyncSteps* as, const FutoInBinaryValue* fn,
#:         const FutoInBinaryValue* on_error), fn and on_error values that
#: hold Python callables (docs/PYTHON.md).
C_ADD_STEP = int(ffi.cast("uintptr_t", ffi.addressof(lib, "pyf_add_python_step")))


@ffi.def_extern()
def pyf_destroy(data):
    sd = ffi.from_handle(data)
    sd.dead = True
    w = sd.waiting
    if w is not None:
        w._done = True
        sd.waiting = None
    extra = sd.extra
    if sd.kind == "sync" and extra is not None:
        extra[0].dead = True
        _live.pop(extra[0], None)
    del _live[sd]


class _Adder:
    """The calls that add steps: shared by Root and Steps."""

    __slots__ = ()

    def _adder_ptr(self):
        raise NotImplementedError

    def add(self, fn, on_error=None):
        """Adds a step: fn(as_, *results_of_the_previous_step); on_error
        (optional) is on_error(as_, code) for errors of the step and its
        sub-steps (a Python callable, or a C function pointer)."""
        if not callable(fn):
            raise TypeError("add(): fn must be callable")
        _add_owned(self._adder_ptr(), _StepData("step", fn, on_error))
        return self

    def add_c(self, fn, on_error=None, data=None):
        """Adds a C step: fn and on_error are C function pointers (cdata of
        any cffi module, or addresses), data a C pointer passed to them.
        Nothing is owned: data must outlive the step."""
        lib.futoin_add_owned(
            self._adder_ptr(),
            _c_pointer(fn, "FutoInAsyncSteps_execute_callback"),
            _c_pointer(on_error, "FutoInAsyncSteps_error_callback"),
            _c_pointer(data, "void*"),
            ffi.NULL,
        )
        return self

    def parallel(self, on_error=None):
        """Adds a parallel step; add branches with .add() on what it returns
        before the step runs."""
        p = _Parallel()
        _add_owned(self._adder_ptr(), _StepData("parallel", None, on_error, p))
        return p

    def _copy_parallel(self, model_parallel, on_error):
        p = self.parallel(on_error)
        for fn, eh in model_parallel.branches:
            p.add(fn, eh)

    def loop(self, fn, label=None):
        """Adds a loop: fn(as_) runs until as_.break_loop()."""
        _add_owned(self._adder_ptr(), _StepData("loop", fn, None, None, _label(label)))
        return self

    def repeat(self, count, fn, label=None):
        """Adds a loop of count iterations: fn(as_, i)."""
        _add_owned(self._adder_ptr(), _StepData("repeat", fn, None, int(count), _label(label)))
        return self

    def for_each(self, iterable, fn, label=None):
        """Adds a loop over an iterable: fn(as_, index, item), or
        fn(as_, key, value) over a mapping. The iterable is read lazily,
        one item per iteration."""
        if isinstance(iterable, Mapping):
            it = iter(iterable.items())
        else:
            it = enumerate(iterable)
        _add_owned(self._adder_ptr(), _StepData("foreach", fn, None, it, _label(label)))
        return self

    def add_work(self, fn, *args):
        """Adds a step that runs fn(*args) on the library's worker pool (a
        thread of its own: blocking calls there leave the loop free) and
        completes with its result, as Steps.await_() does (None: no value,
        a tuple: several). fn holds the GIL like any Python code: only
        work that releases it (I/O, sleep, hashing...) runs in parallel.
        fn must not use the flow's objects; if the step is cancelled
        before a worker picks it up, fn never runs."""
        if not callable(fn):
            raise TypeError("add_work(): fn must be callable")
        w = _Work(fn, args)
        h = ffi.new_handle(w)
        _live[w] = h
        # On a refused call, release runs before this returns.
        lib.futoin_add_work(self._adder_ptr(), lib.pyf_work, h, lib.pyf_work_release)
        return self

    def copy_from(self, model):
        """Adds the steps of a Model, and its state variables that the
        root's state does not have yet (copyFrom())."""
        if not isinstance(model, Model):
            raise TypeError("copy_from(): a Model is expected")
        ptr = self._adder_ptr()
        if model._state:
            state = _state_of(ptr)
            for key, value in model._state.items():
                if key not in state._d:
                    state._d[key] = value
        for name, args in model._ops:
            getattr(self, name)(*args)
        return self

    def sync(self, obj, fn, on_error=None):
        """Adds a step that runs inside a Mutex, Throttle or Limiter."""
        if not callable(fn):
            raise TypeError("sync(): fn must be callable")
        ptr = self._adder_ptr()
        # The critical section gets the previous step's results, as a C
        # sync step does: the outer step hands them on (extra).
        inner = _StepData("synced", fn, on_error, ())
        # The inner step lives inside the outer (owned) one: released with it.
        _live[inner] = ffi.new_handle(inner)
        _add_owned(ptr, _StepData("sync", None, None, (inner, obj)))
        return self


class _Work:
    __slots__ = ("fn", "args", "error", "info")

    def __init__(self, fn, args):
        self.fn = fn
        self.args = args
        self.error = None
        self.info = None


@ffi.def_extern()
def pyf_work(data, out):
    # On a worker thread (cffi takes the GIL).
    w = ffi.from_handle(data)
    fn, args = w.fn, w.args
    w.fn = w.args = None
    try:
        res = fn(*args)
        if res is None:
            values = ()
        elif isinstance(res, tuple):
            values = res
        else:
            values = (res,)
        filled = _make_args(values)
        for i in range(4):
            out.args.args[i] = filled.args[i]
    except Exception as exc:
        code, info = _exc_to_error(exc)
        # Kept alive until the release: the library copies them on return.
        w.error = ffi.new("char[]", _cstr(code))
        w.info = ffi.new("char[]", _cstr(info))
        out.error = w.error
        out.info = w.info
    except BaseException as exc:
        w.error = ffi.new("char[]", b"InternalError")
        out.error = w.error
        _report(exc, None, "a work function")


@ffi.def_extern()
def pyf_work_release(data):
    del _live[ffi.from_handle(data)]


def work_pool_configure(threads):
    """Sets the number of worker threads of add_work() (0: one per CPU, at
    least 2). Returns False once the pool is running (nothing changes)."""
    return lib.futoin_work_pool_configure(int(threads)) == 0


def work_pool_shutdown():
    """Waits for queued and running work, then joins the workers (a later
    add_work() starts them again). Not from a worker."""
    lib.futoin_work_pool_shutdown()


class _PoolRoot(_Adder):
    """The root a LoopPool gives to setup(): add its steps there."""

    __slots__ = ("_ptr",)

    def __init__(self, ptr):
        self._ptr = ptr

    def _adder_ptr(self):
        if self._ptr is None:
            raise MisuseError("a pool root is set up inside setup() only")
        return self._ptr

    @property
    def state(self):
        return _state_of(self._adder_ptr())


class _Spawn:
    __slots__ = ("setup", "done", "pool")

    def __init__(self, setup, done, pool):
        self.setup = setup
        self.done = done
        self.pool = pool


@ffi.def_extern()
def pyf_pool_setup(ptr, data):
    sp = ffi.from_handle(data)
    root = _PoolRoot(ptr)
    try:
        sp.setup(root)
    except Exception as exc:
        code, info = _exc_to_error(exc)
        lib.futoin_error(ptr, _cstr(code), _cstr(info))
    except BaseException as exc:
        _report(exc, None, "a pool root's setup")
    finally:
        root._ptr = None


@ffi.def_extern()
def pyf_pool_done(data, code):
    sp = ffi.from_handle(data)
    del _live[sp]
    done = sp.done
    if done is None:
        return
    try:
        done(None if code == ffi.NULL else ffi.string(code).decode("utf-8", "surrogateescape"))
    except BaseException as exc:
        _report(exc, None, "a pool root's done callback")


class LoopPool:
    """Loops on threads of their own (futoin_loop_pool_*): spawn() places a
    new root on the least-loaded loop. Their Python callbacks run on those
    threads, taking the GIL in turn; share data between them with
    threading locks and shared sync objects (Mutex.shared()...)."""

    def __init__(self, threads=0):
        self._ptr = lib.futoin_loop_pool_new(int(threads))
        if self._ptr == ffi.NULL:
            raise MemoryError("futoin_loop_pool_new(%d)" % threads)

    @property
    def size(self):
        return lib.futoin_loop_pool_size(self._check())

    def _check(self):
        if self._ptr is None:
            raise MisuseError("the pool is closed")
        return self._ptr

    def spawn(self, setup, done=None):
        """setup(root) runs on the chosen loop's thread with a new root to
        add steps to (the pool executes it then); done(code) runs there
        when the root ended: code None on success, else the error code
        ("Cancelled" when the pool stopped first). Returns the loop's
        index."""
        if not callable(setup) or (done is not None and not callable(done)):
            raise TypeError("spawn(): setup and done must be callable")
        ptr = self._check()
        sp = _Spawn(setup, done, self)
        h = ffi.new_handle(sp)
        _live[sp] = h
        i = lib.futoin_loop_pool_spawn(ptr, lib.pyf_pool_setup, lib.pyf_pool_done, h)
        if i < 0:
            del _live[sp]
            raise MisuseError("spawn(): the pool is stopping (or out of memory)")
        return i

    def stop(self, now=False):
        """Stops the loops (returns at once): roots that have not finished
        are cancelled; now=True drops pending callbacks too."""
        lib.futoin_loop_pool_stop(
            self._check(), lib.FUTOIN_LOOP_STOP_NOW if now else lib.FUTOIN_LOOP_STOP_DRAIN
        )

    def close(self):
        """Stops (drains) the pool and joins its threads."""
        if self._ptr is None:
            return
        ptr, self._ptr = self._ptr, None
        lib.futoin_loop_pool_free(ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Model:
    """A template of steps and state variables for copy_from(): add steps
    to it as to a root (add, add_c, parallel, loop, repeat, for_each, sync,
    copy_from), set its state, then copy it into roots or running steps as
    often as needed. Nothing runs in the model itself; its callables are
    shared by the copies, and its state values are assigned as they are
    (not copied) to each root that lacks them."""

    def __init__(self):
        self._ops = []
        self._state = {}

    @property
    def state(self):
        """The state variables a copy gives to a root that lacks them."""
        return self._state

    def _record(self, name, *args):
        self._ops.append((name, args))
        return self

    def add(self, fn, on_error=None):
        if not callable(fn):
            raise TypeError("add(): fn must be callable")
        return self._record("add", fn, on_error)

    def add_c(self, fn, on_error=None, data=None):
        return self._record("add_c", fn, on_error, data)

    def parallel(self, on_error=None):
        """The branches of a model's parallel step: add them to what this
        returns; each copy gets its own parallel step with them."""
        p = _ModelParallel()
        self._ops.append(("_copy_parallel", (p, on_error)))
        return p

    def loop(self, fn, label=None):
        return self._record("loop", fn, label)

    def repeat(self, count, fn, label=None):
        return self._record("repeat", count, fn, label)

    def for_each(self, iterable, fn, label=None):
        """The iterable is iterated anew by each copy (a list, a mapping, a
        range: not a one-shot iterator)."""
        return self._record("for_each", iterable, fn, label)

    def sync(self, obj, fn, on_error=None):
        return self._record("sync", obj, fn, on_error)

    def copy_from(self, model):
        return self._record("copy_from", model)


class _ModelParallel:
    __slots__ = ("branches",)

    def __init__(self):
        self.branches = []

    def add(self, fn, on_error=None):
        if not callable(fn):
            raise TypeError("add(): fn must be callable")
        self.branches.append((fn, on_error))
        return self


class _Parallel:
    __slots__ = ("branches", "started")

    def __init__(self):
        self.branches = []
        self.started = False

    def add(self, fn, on_error=None):
        """Adds a branch."""
        if self.started:
            raise MisuseError("parallel(): branches are added before the step runs")
        if not callable(fn):
            raise TypeError("add(): fn must be callable")
        self.branches.append((fn, on_error))
        return self


class _State(MutableMapping):
    """The root's state: a mapping shared by the root's steps and branches;
    "error_info" reads the flow's last error info."""

    __slots__ = ("_d", "_ptr")

    def __init__(self, d, ptr):
        self._d = d
        self._ptr = ptr

    def __getitem__(self, key):
        if key == "error_info" and key not in self._d:
            return _error_info(self._ptr)
        return self._d[key]

    def __setitem__(self, key, value):
        self._d[key] = value

    def __delitem__(self, key):
        del self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        if name in _State.__slots__:
            object.__setattr__(self, name, value)
        else:
            self._d[name] = value


class _StateDict:
    __slots__ = ("d",)

    def __init__(self):
        self.d = {}


_STATE_NAME = ffi.new("char[]", b"futoin.python.state")


@ffi.def_extern()
def pyf_state_alloc(data):
    sd = _StateDict()
    h = ffi.new_handle(sd)
    _live[sd] = h
    return h


@ffi.def_extern()
def pyf_state_free(data, value):
    del _live[ffi.from_handle(value)]


def _state_of(ptr):
    h = lib.futoin_state(ptr, _STATE_NAME, lib.pyf_state_alloc, lib.pyf_state_free, ffi.NULL)
    if h == ffi.NULL:
        raise MisuseError("the state is not available (the root is being freed)")
    return _State(ffi.from_handle(h).d, ptr)


class Steps(_Adder):
    """The AsyncSteps interface a callback gets (as_): valid while the
    callback runs, and after wait_external() until the step completes."""

    __slots__ = ("_ptr", "_sd", "_in_cb", "_done", "_waiting")

    def __init__(self, ptr, sd):
        self._ptr = ptr
        self._sd = sd
        self._in_cb = True
        self._done = False
        self._waiting = False

    def _adder_ptr(self):
        self._check(False)
        return self._ptr

    def _check(self, completing):
        if self._sd.dead or self._done:
            raise MisuseError("the step is over")
        if not self._in_cb and not (completing and self._waiting):
            raise MisuseError("the step's interface used outside its callback")

    def success(self, *values):
        """Completes the step with up to four values."""
        self._check(True)
        args = _make_args(values)
        self._done = True
        lib.futoin_success_args(self._ptr, args)

    def error(self, code, info=None):
        """Fails the step with code; info becomes error_info. Inside the
        callback it does not return (the binding unwinds the callback)."""
        self._check(True)
        self._done = True
        lib.futoin_error(self._ptr, _cstr(str(code)), _cstr(None if info is None else str(info)))
        if self._in_cb:
            raise _Unwind()

    def success_step(self, *values):
        """Adds a step that succeeds with up to four values (successStep()):
        the step completes with them after its other sub-steps. Without
        sub-steps before it, it completes the step at once."""
        self._check(False)
        lib.futoin_success_step(self._ptr, _make_args(values) if values else ffi.NULL)

    def _mark_waiting(self):
        # The step may complete later through this object: the cancel
        # handler marks it over when the step is cancelled or times out.
        self._waiting = True
        self._sd.waiting = self
        lib.futoin_set_cancel(self._ptr, lib.pyf_on_cancel, _live[self._sd])

    def set_timeout(self, seconds):
        """Fails the step with Timeout unless it completes in time. As in
        C, the step then waits for a later success() or error() on this
        object (or for its sub-steps)."""
        self._check(False)
        ms = max(0, int(round(float(seconds) * 1000)))
        self._mark_waiting()
        lib.futoin_set_timeout(self._ptr, min(ms, 0xFFFFFFFF))

    def set_cancel(self, fn):
        """fn(as_) runs if the step is cancelled (cancel, timeout, an
        error elsewhere) before it completed. As in C, the step then waits
        for a later success() or error() on this object."""
        self._check(False)
        self._sd.cancel_fn = fn
        self._mark_waiting()

    def wait_external(self):
        """The step completes only by a later success() or error() on this
        object (from another callback, an asyncio task...)."""
        self._check(False)
        self._mark_waiting()
        lib.futoin_wait_external(self._ptr)

    def await_(self, awaitable):
        """Waits for an asyncio future or coroutine: the step succeeds
        with its result (None: no value) or fails with its exception. The
        loop must be driven by asyncio (Loop.attach_asyncio())."""
        from . import aio

        aio.await_in_step(self, awaitable)

    def break_loop(self, label=None):
        """Leaves the innermost loop, or the loop with that label."""
        self._check(False)
        self._done = True
        lib.futoin_break(self._ptr, _label(label))
        raise _Unwind()

    def continue_loop(self, label=None):
        """Starts the next iteration of the innermost loop, or of the loop
        with that label."""
        self._check(False)
        self._done = True
        lib.futoin_continue(self._ptr, _label(label))
        raise _Unwind()

    @property
    def error_info(self):
        """The info of the flow's last error, or a break/continue label."""
        return _error_info(self._ptr)

    @property
    def state(self):
        """The root's state mapping (shared with its branches)."""
        self._check(False)
        return _state_of(self._ptr)

    @property
    def c_pointer(self):
        """The FutoInAsyncSteps* (for C code called from the step)."""
        return self._ptr


def _run(steps, fn, *args):
    try:
        fn(steps, *args)
    except _Unwind:
        pass
    except Exception as exc:  # a step error: the exception's code and info
        if steps._sd.dead:
            _report(exc, None, "a step that has ended")
        elif steps._done:
            _report(exc, lib.futoin_asyncsteps_loop(steps._ptr), "a step that has completed")
        else:
            code, info = _exc_to_error(exc)
            steps._done = True
            lib.futoin_error(steps._ptr, _cstr(code), _cstr(info))
    finally:
        steps._in_cb = False


@ffi.def_extern()
def pyf_step(ptr, data, args):
    sd = ffi.from_handle(data)
    kind = sd.kind
    if kind == "step":
        _run(Steps(ptr, sd), sd.fn, *_from_args(args))
    elif kind == "parallel":
        par = sd.extra
        par.started = True
        p = lib.futoin_parallel(ptr, ffi.NULL, ffi.NULL)
        for fn, eh in par.branches:
            _add_owned(p, _StepData("step", fn, eh))
        par.branches = None
    elif kind == "loop" or kind == "foreach":
        lib.futoin_add_loop(ptr, lib.pyf_loop_body, data, sd.label)
    elif kind == "repeat":
        lib.futoin_repeat(ptr, sd.extra, lib.pyf_repeat_body, data, sd.label)
    elif kind == "synced":
        values, sd.extra = sd.extra, ()
        _run(Steps(ptr, sd), sd.fn, *values)
    elif kind == "sync":
        inner, obj = sd.extra
        inner.extra = _from_args(args)
        eh = lib.pyf_on_error if inner.on_error is not None else ffi.NULL
        lib.futoin_add_sync(ptr, obj._ptr, lib.pyf_step, eh, _live[inner])


@ffi.def_extern()
def pyf_loop_body(ptr, data):
    sd = ffi.from_handle(data)
    steps = Steps(ptr, sd)
    if sd.kind == "foreach":
        try:
            item = next(sd.extra)
        except StopIteration:
            steps._done = True
            lib.futoin_break(ptr, sd.label)
            return
        except Exception as exc:
            _run(steps, _raiser, exc)
            return
        _run(steps, sd.fn, *item)
    else:
        _run(steps, sd.fn)


def _raiser(steps, exc):
    raise exc


@ffi.def_extern()
def pyf_repeat_body(ptr, data, i):
    sd = ffi.from_handle(data)
    _run(Steps(ptr, sd), sd.fn, i)


@ffi.def_extern()
def pyf_on_error(ptr, data, code):
    sd = ffi.from_handle(data)
    _run(Steps(ptr, sd), sd.on_error, ffi.string(code).decode("utf-8", "surrogateescape"))


@ffi.def_extern()
def pyf_on_cancel(ptr, data):
    sd = ffi.from_handle(data)
    w = sd.waiting
    if w is not None:
        w._done = True
        sd.waiting = None
    fn = sd.cancel_fn
    sd.cancel_fn = None
    if fn is not None:
        steps = Steps(ptr, sd)
        steps._done = True  # the step is over: only its own clean-up is left
        loop = lib.futoin_asyncsteps_loop(ptr)  # before fn: it may free the root
        try:
            fn(steps)
        except BaseException as exc:
            _report(exc, loop, "a cancel handler")


# ---- loop and roots -------------------------------------------------------------


class Loop:
    """An event loop: the real clock (default) or a virtual one for tests."""

    def __init__(self, virtual=False):
        self._ptr = lib.futoin_loop_new_virtual() if virtual else lib.futoin_loop_new()
        if self._ptr == ffi.NULL:
            raise MemoryError("futoin_loop_new()")
        self.virtual = bool(virtual)
        self._roots = {}
        self._syncs = []
        self._timers = {}
        self._driver = None
        self._misuse = None
        self._h = ffi.new_handle(self)
        _loops[self._key()] = self

    def _key(self):
        return int(ffi.cast("uintptr_t", self._ptr))

    def set_misuse_handler(self, fn):
        """fn(info) receives what cannot become a step error: the
        library's misuse reports for this loop (docs/MISUSE.md), errors
        escaping a root executed without on_unhandled, and exceptions of
        the binding's callbacks that have no step to fail (cancel handlers,
        timers, on_unhandled, steps that had completed), as
        "exception in a cancel handler: TypeName: message". None: back to
        the default, a line on stderr (with the traceback for exceptions)."""
        ptr = self._check()
        if fn is not None and not callable(fn):
            raise TypeError("set_misuse_handler(): fn must be callable or None")
        self._misuse = fn
        if fn is None:
            lib.futoin_set_misuse_handler(ptr, ffi.NULL, ffi.NULL)
        else:
            lib.futoin_set_misuse_handler(ptr, lib.pyf_misuse, self._h)

    def _check(self):
        if self._ptr is None:
            raise MisuseError("the loop is closed")
        return self._ptr

    def run(self):
        """Runs until no work is left."""
        lib.futoin_loop_run(self._check())

    def iterate(self):
        """One round, never sleeps: returns (more, next_delay) with
        next_delay in seconds (0.0: callbacks are waiting, None: nothing
        is scheduled)."""
        nd = ffi.new("int64_t*")
        more = lib.futoin_loop_iterate(self._check(), nd)
        return more, (None if nd[0] < 0 else nd[0] / 1000.0)

    def next_delay(self):
        """The plan of iterate() without running anything (seconds or None)."""
        nd = lib.futoin_loop_next_delay(self._check())
        return None if nd < 0 else nd / 1000.0

    def stop(self):
        lib.futoin_loop_stop(self._check())

    def _wait(self, delay):
        fd = lib.futoin_loop_wakeup_fd(self._check())
        if fd < 0:
            time.sleep(0.001 if delay is None else min(delay, 0.001))
        else:
            select.select([fd], [], [], delay)

    @property
    def now(self):
        """The loop's clock, in seconds."""
        return lib.futoin_loop_now(self._check()) / 1000.0

    def advance(self, seconds):
        """Virtual clock: moves time forward, running what becomes due."""
        lib.futoin_loop_advance(self._check(), max(0, int(round(seconds * 1000))))

    def call_soon(self, fn, *args):
        """Runs fn(*args) on the next round of the loop, after what is
        queued already: a Timer (cancel() stops it). Exceptions of fn are
        printed to stderr."""
        return Timer(self, None, fn, args)

    def call_later(self, seconds, fn, *args):
        """Runs fn(*args) once seconds (a float, millisecond precision)
        have passed on the loop's clock: a Timer."""
        return Timer(self, seconds, fn, args)

    def attach_asyncio(self, aio_loop=None):
        """Drives this loop from an asyncio event loop (futoin_asyncsteps.aio)."""
        from . import aio

        if self._driver is None:
            self._driver = aio.Driver(self, aio_loop)
        return self._driver

    def root(self):
        """A new Root on this loop."""
        return Root(self)

    def close(self):
        """Frees the loop: its roots first (cancelled if running), then
        its Mutex, Throttle and Limiter objects, then the loop itself."""
        if self._ptr is None:
            return
        if self._driver is not None:
            self._driver.close()
            self._driver = None
        # Roots first: their cancel releases the sync objects, which the
        # library wants freed before their loop.
        for root in list(self._roots):
            root.close()
        self._roots.clear()
        for s in self._syncs:
            lib.futoin_sync_free(s._ptr)
            s._ptr = None
        self._syncs = []
        ptr = self._ptr
        _loops.pop(self._key(), None)
        self._ptr = None
        lib.futoin_loop_free(ptr)
        self._misuse = None
        # Timers that never ran: dropped with the loop.
        for t in self._timers:
            _live.pop(t, None)
        self._timers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@ffi.def_extern()
def pyf_misuse(data, ptr, info):
    loop = ffi.from_handle(data)
    fn = loop._misuse
    if fn is None:
        return
    try:
        fn(ffi.string(info).decode("utf-8", "surrogateescape"))
    except BaseException as exc:
        sys.stderr.write("futoin_asyncsteps: exception in the misuse handler:\n")
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


class Timer:
    """A callback scheduled on a Loop (Loop.call_soon(), call_later())."""

    __slots__ = ("_loop", "_fn", "_args", "_handle", "__weakref__")

    def __init__(self, loop, seconds, fn, args):
        if not callable(fn):
            raise TypeError("a timer's fn must be callable")
        ptr = loop._check()
        self._loop = loop
        self._fn = fn
        self._args = args
        h = ffi.new_handle(self)
        if seconds is None:
            handle = lib.futoin_loop_immediate(ptr, h, lib.pyf_timer)
        else:
            ms = min(max(0, int(round(float(seconds) * 1000))), 0xFFFFFFFF)
            handle = lib.futoin_loop_deferred(ptr, ms, h, lib.pyf_timer)
        if handle.data1 == ffi.NULL and handle.data2 == ffi.NULL and handle.data3 == 0:
            raise MemoryError("futoin_loop_immediate()")
        self._handle = ffi.new("FutoInHandle*", handle)
        _live[self] = h
        loop._timers[self] = None

    @property
    def active(self):
        """True until the callback ran or was cancelled."""
        return self in _live

    def cancel(self):
        """Stops the callback if it has not run yet (no effect after)."""
        if self not in _live:
            return
        ptr = self._loop._ptr
        if ptr is not None:
            lib.futoin_loop_try_cancel(ptr, self._handle)
        self._release()

    def _release(self):
        _live.pop(self, None)
        self._loop._timers.pop(self, None)
        self._fn = self._args = None


@ffi.def_extern()
def pyf_timer(data):
    t = ffi.from_handle(data)
    fn, args = t._fn, t._args
    t._release()
    if fn is None:
        return
    try:
        fn(*args)
    except BaseException as exc:
        _report(exc, t._loop, "a timer")


class Root(_Adder):
    """A root AsyncSteps: add steps, then execute(), run() or
    await run_async(). close() frees it (a running root is cancelled)."""

    def __init__(self, loop):
        self.event_loop = loop
        self._ptr = lib.futoin_asyncsteps_new(loop._check())
        if self._ptr == ffi.NULL:
            raise MemoryError("futoin_asyncsteps_new()")
        h = ffi.new_handle(self)
        loop._roots[self] = h
        lib.futoin_set_on_end(self._ptr, lib.pyf_on_end, h)
        self._on_unhandled = None
        self._waiters = []
        self.running = False
        self.end = None

    def _adder_ptr(self):
        if self._ptr is None:
            raise MisuseError("the root is closed")
        return self._ptr

    def execute(self, on_unhandled=None):
        """Starts the root. on_unhandled(code, info) is called if an error
        escapes every handler (default: a line on stderr)."""
        ptr = self._adder_ptr()
        self._on_unhandled = on_unhandled
        self.end = None
        self.running = True
        lib.futoin_execute(ptr, lib.pyf_unhandled, self.event_loop._roots[self])
        return self

    def cancel(self):
        """Cancels a running root: cancel handlers run innermost first."""
        lib.futoin_cancel(self._adder_ptr())

    @property
    def state(self):
        """The root's state mapping (the same as its steps' as_.state)."""
        return _state_of(self._adder_ptr())

    def run(self):
        """Executes the root and runs the loop until the root ends: returns
        the last step's result (None, a value, or a tuple of values) or
        raises Error."""
        loop = self.event_loop
        self.execute(on_unhandled=_quiet)
        while self.running:
            more, delay = loop.iterate()
            if not self.running:
                break
            if delay is None and more != 1:
                self.cancel()
                raise Error("InternalError", "the loop ran dry with the root still waiting")
            if delay is None or delay > 0:
                if loop.virtual and delay is not None:
                    loop.advance(delay)
                else:
                    # Until the next timer, or until another thread (a
                    # worker's result) queues work: the wake-up fd.
                    loop._wait(delay)
        return self._result()

    async def run_async(self):
        """Executes the root and waits for its end in asyncio code (the loop
        is attached to the running asyncio loop): the result as run()."""
        import asyncio

        self.event_loop.attach_asyncio()
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        self.execute(on_unhandled=_quiet)
        try:
            await fut
        except asyncio.CancelledError:
            # The task awaiting the root was cancelled: so is the root
            # (its cancel handlers run now), then the task sees the cancel.
            if self.running and self._ptr is not None:
                lib.futoin_cancel(self._ptr)
            raise
        return self._result()

    def _result(self):
        reason, code, info, values = self.end
        if reason == "success":
            if not values:
                return None
            return values[0] if len(values) == 1 else values
        if reason == "error":
            raise Error(code, info)
        raise Error("Cancelled" if reason == "cancelled" else "Freed", "")

    def close(self):
        """Frees the root (cancelled first if running)."""
        ptr = self._ptr
        if ptr is None:
            return
        self._ptr = None
        lib.futoin_asyncsteps_free(ptr)
        self.event_loop._roots.pop(self, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _quiet(code, info):
    pass


_REASONS = {
    lib.FUTOIN_END_SUCCESS: "success",
    lib.FUTOIN_END_ERROR: "error",
    lib.FUTOIN_END_CANCELLED: "cancelled",
    lib.FUTOIN_END_FREED: "freed",
}


@ffi.def_extern()
def pyf_unhandled(ptr, data, code):
    root = ffi.from_handle(data)
    code = ffi.string(code).decode("utf-8", "surrogateescape")
    info = _error_info(ptr)
    cb = root._on_unhandled
    try:
        if cb is None:
            sys.stderr.write("futoin_asyncsteps: unhandled error %s: %s\n" % (code, info))
        else:
            cb(code, info)
    except BaseException as exc:
        _report(exc, root.event_loop, "an unhandled-error callback")


@ffi.def_extern()
def pyf_on_end(ptr, data, end):
    root = ffi.from_handle(data)
    reason = _REASONS.get(end.reason, "freed")
    code = ffi.string(end.code).decode("utf-8", "surrogateescape") if end.code != ffi.NULL else None
    info = ffi.string(end.info).decode("utf-8", "surrogateescape") if end.info != ffi.NULL else ""
    values = _from_args(end.results) if end.results != ffi.NULL else ()
    root.end = (reason, code, info, values)
    root.running = False
    waiters, root._waiters = root._waiters, []
    for w in waiters:
        try:
            if not w.done():
                w.set_result(None)
        except BaseException as exc:
            _report(exc, root.event_loop, "the end of a root")


# ---- sync objects -----------------------------------------------------------------


class _Sync:
    def __init__(self, loop, ptr):
        if ptr == ffi.NULL:
            raise MemoryError("a sync object")
        self._ptr = ptr
        if loop is not None:
            loop._syncs.append(self)
        self._loop = loop

    @classmethod
    def _shared(cls, ptr):
        obj = cls.__new__(cls)
        _Sync.__init__(obj, None, ptr)
        return obj

    def close(self):
        """Frees the object; MisuseError while flows still use it."""
        if self._ptr is None:
            return
        if lib.futoin_sync_free(self._ptr) != 0:
            raise MisuseError("the sync object is still in use")
        self._ptr = None
        if self._loop is not None:
            self._loop._syncs.remove(self)


    @property
    def c_pointer(self):
        """The FutoInSync* (for C code that syncs on the same object)."""
        if self._ptr is None:
            raise MisuseError("the sync object is closed")
        return self._ptr


UNLIMITED = lib.FUTOIN_SYNC_UNLIMITED


class Mutex(_Sync):
    """At most max flows inside at once, at most max_queue waiting."""

    def __init__(self, loop, max=1, max_queue=UNLIMITED):
        super().__init__(loop, lib.futoin_mutex_new(loop._check(), max, max_queue))

    @classmethod
    def shared(cls, max=1, max_queue=UNLIMITED):
        """A Mutex for flows on any loops and threads (a LoopPool's)."""
        return cls._shared(lib.futoin_mutex_new_shared(max, max_queue))


class Throttle(_Sync):
    """At most max entries per period (seconds), at most max_queue waiting."""

    def __init__(self, loop, max, period=1.0, max_queue=UNLIMITED):
        ms = int(round(period * 1000))
        super().__init__(loop, lib.futoin_throttle_new(loop._check(), max, ms, max_queue))

    @classmethod
    def shared(cls, max, period=1.0, max_queue=UNLIMITED):
        """A Throttle for flows on any real-clock loops and threads."""
        ms = int(round(period * 1000))
        return cls._shared(lib.futoin_throttle_new_shared(max, ms, max_queue))


class Limiter(_Sync):
    """Concurrency and rate limits combined (FutoInLimiterOptions)."""

    def __init__(self, loop, concurrent=1, max_queue=0, rate=1, period=1.0, burst=0):
        opts = _limiter_options(concurrent, max_queue, rate, period, burst)
        super().__init__(loop, lib.futoin_limiter_new(loop._check(), opts))

    @classmethod
    def shared(cls, concurrent=1, max_queue=0, rate=1, period=1.0, burst=0):
        """A Limiter for flows on any real-clock loops and threads."""
        opts = _limiter_options(concurrent, max_queue, rate, period, burst)
        return cls._shared(lib.futoin_limiter_new_shared(opts))


def _limiter_options(concurrent, max_queue, rate, period, burst):
    opts = ffi.new("FutoInLimiterOptions*")
    lib.futoin_limiter_options_init(opts)
    opts.concurrent = concurrent
    opts.max_queue = max_queue
    opts.rate = rate
    opts.period_ms = int(round(period * 1000))
    opts.burst = burst
    return opts
