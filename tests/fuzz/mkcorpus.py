#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hand-made seed corpus of the fuzzer (tests/fuzz/corpus/).

Each seed is a small program of the step language, written with the helpers
below, which mirror the byte encoding documented at the top of prog.c.
Regenerate with:  python3 tests/fuzz/mkcorpus.py
(the files are checked in; the fuzzer and test_model_replay read them).
"""
import os
import sys

NONE, SUCCESS, ERROR, EXT_OK, EXT_ERR, FOREVER, BREAK, CONTINUE = range(8)
EH_NONE, EH_RECOVER, EH_RETHROW, EH_PASS, EH_ADD, EH_BREAK, EH_CONTINUE = range(7)
CA_NONE, CA_CANCEL_ROOT, CA_FREE_ROOT = range(3)
BURSTS = {100: 0, 1: 1, 2: 2, 3: 3, 5: 4, 7: 6}
QUEUES = {0: 0, 1: 1, 2: 2, None: 3}  # None: unlimited
LOOP_LABELS = {None: 0, "a": 1, "b": 2}
CTL_LABELS = {None: 0, "a": 1, "b": 2, "zz": 3}


def args(vals):
    """vals: ints (plain) or 'bN' strings (boxed, with a cleanup)."""
    out = [len(vals)]
    for v in vals:
        if isinstance(v, str):
            out.append((int(v[1:]) << 1) | 1)
        else:
            out.append(v << 1)
    return out


def body(term=NONE, cancel=False, timeout=None, kids=(), vals=(), code=0,
         label=None, imm=False, delay=0, term_iter=None, cancel_action=CA_NONE,
         late=False):
    """late (EXT_OK/EXT_ERR): a late completion, see prog.c: with a timer,
    one the cancel handler does not stop; with imm, one the cancel handler
    schedules, `delay` extra loop immediates later."""
    kids = list(kids)
    if cancel_action:
        assert timeout is not None, "the cancel action lives in the timeout byte"
    t = term | (int(cancel) << 3) | (int(timeout is not None) << 4) | (len(kids) << 5)
    out = [t]
    if timeout is not None:
        out.append(timeout | (cancel_action << 4))
    if term == SUCCESS:
        out += args(vals)
    elif term == ERROR:
        out.append(code)
    elif term in (EXT_OK, EXT_ERR):
        assert not kids
        assert delay < 16
        out.append(int(imm) | (delay << 1) | (0x20 if late else 0))
        out += args(vals) if term == EXT_OK else [code]
    elif term in (BREAK, CONTINUE):
        out.append(CTL_LABELS[label])
    if term_iter is not None:
        out.append(term_iter)
    for k in kids:
        out += k
    return out


def eh(kind=EH_NONE, vals=(), code=0, kids=(), label=None):
    kids = list(kids)
    if kind in (EH_BREAK, EH_CONTINUE):
        return [kind, CTL_LABELS[label]]
    if kind == EH_ADD:
        assert 1 <= len(kids) <= 2
        out = [kind | ((len(kids) - 1) << 3)]
        for k in kids:
            out += k
        return out
    out = [kind]
    if kind == EH_RECOVER:
        out += args(vals)
    elif kind == EH_RETHROW:
        out.append(code)
    return out


def step(handler=None, **kw):
    return [0] + body(**kw) + (handler or eh())


def value(vals=()):
    """successStep(vals)"""
    return [3, 0] + args(vals)


def relinquish():
    return [3, 1]


def par(branches, handler=None):
    assert len(branches) <= 4
    out = [4] + (handler or eh()) + [len(branches)]
    for b in branches:
        out += b
    return out


def loop(label=None, count=0, repeat=False, term_iter=0, **kw):
    return [6 if repeat else 5, LOOP_LABELS[label] | (count << 2)] + \
        body(term_iter=term_iter, **kw)


def sync(mutex, section):
    assert section[0] == 0
    return [7, mutex] + section


PERIODS = {5: 0, 7: 1, 10: 2, 12: 3, 15: 4, 20: 5, 25: 6, 30: 7}


def tsync(index, section, define=None):
    """A sync step on throttle `index`. define=(max, period_ms, queue) must be
    given at the first node (in decoding order) that uses this throttle, and
    only there (the decoder reads the parameter byte then); queue None means
    unlimited. A throttle never defined has (1, 10 ms, unlimited)."""
    assert section[0] == 0
    out = [7, 8 | index]
    if define is not None:
        mx, period, queue = define
        assert 1 <= mx <= 3
        out.append((mx - 1) | (PERIODS[period] << 2) | (QUEUES[queue] << 5))
    return out + section


def lsync(index, section, define=None):
    """A sync step on limiter `index`. define=(concurrent, max_queue, rate,
    period_ms, burst) must be given at the first node (in decoding order)
    that uses this limiter, and only there (the decoder reads the two
    parameter bytes then); a queue or burst of None means unlimited. A
    limiter never defined is created with NULL options (the spec defaults)."""
    assert section[0] == 0
    out = [7, 16 | index]
    if define is not None:
        conc, queue, rate, period, burst = define
        assert 1 <= conc <= 3 and 1 <= rate <= 3
        out += [(conc - 1) | (QUEUES[queue] << 2) | ((rate - 1) << 4) | (QUEUES[burst] << 6),
                PERIODS[period]]
    return out + section


X_EXEC, X_EH, X_CANCEL = range(3)  # which callback of the node acts
X_CANCEL_ROOT, X_FREE_ROOT = range(2)


def xact(node, what, target, where, revive=False):
    """One cross-root action of the trailer: node is the node's index in
    decoding order (pre-order, as read), target a root index; revive (with
    X_CANCEL_ROOT): execute the cancelled root again at once."""
    return [node, what | (target << 1) | (where << 3) | (0x20 if revive else 0)]


# The re-entry trailer (prog.c): hooks of a node and the actions they take
H_EXEC, H_EH, H_CANCEL, H_VALUE, H_STACK, H_SALLOC, H_SCLEAN, H_CHAIN = range(8)
A_CANCEL, A_FREE, A_REVIVE, A_STATE, A_ADD, A_NONE = range(6)
CH_PAR, CH_ADD, CH_LOOP, CH_MIX = range(4)


def rhook(node, hook, what, target=0, name=0, hbits=0):
    """Hook `hook` of node `node` (index in decoding order) takes action
    `what` on root `target`; name: the variable an A_STATE action makes;
    hbits: H_STACK: 1 = a 256-byte block, H_SALLOC/H_SCLEAN: the node's own
    variable v<hbits>."""
    assert hook != H_CHAIN
    return [node, hook | (hbits << 3), what | (target << 3) | (name << 5)]


def chain_depth(n):
    """The D byte of a chain of n levels (n = (1 + (D & 63)) << 3 * (D >> 6))."""
    for d in range(256):
        if min(4096, (1 + (d & 63)) << (3 * (d >> 6))) == n:
            return d
    raise ValueError("no encoding for a chain of %d levels" % n)


def rchain(node, kind, levels, stack=False, cancel=False):
    """Node `node` is added wrapped in a chain of `levels` levels."""
    return [node, H_CHAIN, kind | (4 if stack else 0) | (8 if cancel else 0), chain_depth(levels)]


def prog(roots, burst=100, m0=(1, None), m1=(1, None), exact=False, actions=(), reentry=()):
    """roots: list of (top_nodes, cancel_at or None[, no_unhandled]).

    exact=True encodes B0 so that it decodes to len(roots) roots with any
    burst. Without it B0 is computed the old way, which is exact only for
    burst 100 (the decoder takes nroots from B0 % 3): the checked-in seeds
    burst_1_immediates and burst_2_mixed were written that way and are kept
    byte for byte, so they decode to 3 roots and 1 root respectively."""
    b0 = (len(roots) - 1) | (BURSTS[burst] << 2)
    if exact:
        assert 1 <= len(roots) <= 3 and all(1 <= len(r[0]) <= 3 for r in roots)
        b0 = next(b for b in range(256) if b % 3 == len(roots) - 1 and (b >> 2) & 7 == BURSTS[burst])
    b1 = (m0[0] - 1) | (QUEUES[m0[1]] << 1) | ((m1[0] - 1) << 3) | (QUEUES[m1[1]] << 4)
    out = [b0, b1]
    for root in roots:
        top, cancel_at = root[0], root[1]
        no_unhandled = len(root) > 2 and root[2]
        out.append((0x40 | cancel_at if cancel_at is not None else 0) | (0x80 if no_unhandled else 0))
        out.append(len(top) - 1)
        for n in top:
            out += n
    if actions:
        assert 1 <= len(actions) <= 4
        out += [0xC5, 0x3A, len(actions) - 1]
        for a in actions:
            out += a
    if reentry:
        assert 1 <= len(reentry) <= 8
        out += [0xD7, 0x4B, len(reentry) - 1]
        for e in reentry:
            out += e
    return bytes(out)


def one(*top, cancel_at=None, **kw):
    return prog([(list(top), cancel_at)], **kw)


def late_step(ok=True, **kw):
    """A step that times out at 1 ms and recovers; its completion (args
    b3, 4 or error E1) is late."""
    kw.setdefault("timeout", 1)
    kw.setdefault("handler", eh(EH_RECOVER, vals=[5]))
    if ok:
        return step(term=EXT_OK, late=True, vals=["b3", 4], **kw)
    return step(term=EXT_ERR, late=True, code=1, **kw)


def late_seeds():
    """A completion that arrives after its step timed out (or its root was
    cancelled), through the same flow's handle, at each kind of state the
    flow can be in then (docs/SEMANTICS.md, "Whose wait it is")."""
    out = {}
    for ok, word in ((True, "success"), (False, "error")):
        # an owned wait refuses it: a Mutex queue (r1 holds the lock)
        out["late_%s_on_mutex_wait" % word] = prog(
            [([late_step(ok, delay=5), sync(0, step()), step()], None),
             ([sync(0, step(term=EXT_OK, delay=15, vals=[1]))], None)], exact=True)
        # a Throttle queue: the second entry waits for the next window
        out["late_%s_on_throttle_wait" % word] = one(
            late_step(ok, delay=5), tsync(0, step(), define=(1, 30, None)), tsync(0, step()))
        # a Limiter's burst queue: the second entry waits for the rate
        out["late_%s_on_limiter_wait" % word] = one(
            late_step(ok, delay=5), lsync(0, step(), define=(1, None, 1, 30, None)),
            lsync(0, step()))
        # ... and its slot queue (r1 holds the only slot)
        out["late_%s_on_limiter_slot_wait" % word] = prog(
            [([late_step(ok, delay=5), lsync(0, step(), define=(1, None, 3, 5, None)), step()], None),
             ([lsync(0, step(term=EXT_OK, delay=15, vals=[1]))], None)], exact=True)
        # relinquish(): the cancel handler schedules the completion, which
        # passes the loop's immediates once more, as relinquish() does
        out["late_%s_on_relinquish" % word] = one(
            late_step(ok, imm=True, delay=1), relinquish(), step())
        # a finished root
        out["late_%s_on_finished_root" % word] = one(late_step(ok, delay=9), step())
        # a later step's own waitExternal(): the engine cannot tell, it is
        # completed; that step's own completion then comes late as well
        out["late_%s_completes_later_step" % word] = one(
            late_step(ok, delay=5), step(term=EXT_OK, delay=12, vals=[7],
                                         handler=eh(EH_RECOVER, vals=[8])), step())
        # ... a later step that waits by setCancel() only, in a loop body
        out["late_%s_completes_loop_iteration" % word] = one(
            late_step(ok, delay=5), loop(count=2, cancel=True, timeout=9), step())
        # ... one that waits for its own completion too, which then comes
        # late (success: the next iteration's cancel handler, run by its
        # timeout, does not stop it; error: the loop fails), and the
        # finished root refuses it
        out["late_%s_completes_loop_iteration_own_pending" % word] = one(
            late_step(ok, delay=5),
            loop(count=2, term=EXT_ERR, code=2, delay=13, cancel=True, timeout=6), step())
        # the flow is ready (the step's unwinding is queued) when the
        # completion its cancel handler scheduled arrives
        out["late_%s_while_ready" % word] = one(late_step(ok, imm=True), step(), step())
        # ... or waits on a parallel step (not a wait of its own)
        out["late_%s_while_parallel" % word] = one(
            late_step(ok, delay=3), par([step(term=EXT_OK, delay=6, vals=[2]), step()]), step())
        # a cancelled root
        out["late_%s_on_cancelled_root" % word] = one(
            late_step(ok, delay=6, timeout=None, handler=eh()), step(), cancel_at=2)
        out["late_%s_scheduled_by_root_cancel" % word] = one(
            late_step(ok, imm=True, delay=2, timeout=None, handler=eh()), step(), cancel_at=2)
        # in a branch the flag is ignored: the cancel handler stops it
        out["late_%s_ignored_in_branch" % word] = one(
            par([late_step(ok, delay=5), step(term=ERROR, code=2)], handler=eh(EH_RECOVER)),
            step())
    return out


SEEDS = {
    # plain steps, results, implicit success
    "add_plain": one(step(), step(), step()),
    "success_args": one(step(term=SUCCESS, vals=[1, 2]), step(term=SUCCESS, vals=["b3", 4, "b5", 6]), step()),
    "nested_add": one(step(kids=[step(term=SUCCESS, vals=[7]), step(kids=[step(term=SUCCESS, vals=["b8"])])]), step()),
    # errors and handlers
    "error_unhandled": one(step(term=ERROR, code=1), step()),
    "eh_recover": one(step(term=ERROR, code=0, handler=eh(EH_RECOVER, vals=[9, "b10"])), step()),
    "eh_rethrow": one(step(kids=[step(term=ERROR, code=1, handler=eh(EH_RETHROW, code=2))],
                           handler=eh(EH_RECOVER, vals=[1])), step()),
    "eh_pass": one(step(kids=[step(term=ERROR, handler=eh(EH_PASS))], handler=eh(EH_RECOVER)), step()),
    "eh_add": one(step(term=ERROR, handler=eh(EH_ADD, kids=[step(term=SUCCESS, vals=[5]), step()])), step()),
    "eh_add_fails_again": one(step(kids=[step(term=ERROR, handler=eh(EH_ADD, kids=[step(term=ERROR, code=2)]))],
                                   handler=eh(EH_RECOVER, vals=["b1"])), step()),
    "misuse_success_after_add": one(step(term=SUCCESS, vals=["b1"], kids=[step()], handler=eh(EH_RECOVER)), step()),
    "misuse_error_after_add": one(step(term=ERROR, kids=[step()], handler=eh(EH_PASS)), step()),
    # timeouts
    "timeout_wait": one(step(term=FOREVER, timeout=5, handler=eh(EH_RECOVER, vals=[1])), step()),
    "timeout_cancel_handler": one(step(term=FOREVER, cancel=True, timeout=3), step()),
    "timeout_covers_substeps": one(step(timeout=4, cancel=True, kids=[step(term=FOREVER, cancel=True)],
                                        handler=eh(EH_ADD, kids=[step(term=SUCCESS, vals=[2])])), step()),
    "timeout_beats_external": one(step(term=EXT_OK, delay=9, vals=[1], timeout=4, handler=eh(EH_RECOVER)), step()),
    "timeout_zero": one(step(term=FOREVER, timeout=0, handler=eh(EH_PASS)), step()),
    # external completion
    "ext_timer_ok": one(step(term=EXT_OK, delay=7, vals=["b4", 2]), step()),
    "ext_immediate_ok": one(step(term=EXT_OK, imm=True, vals=[3]), step()),
    "ext_timer_error": one(step(term=EXT_ERR, delay=2, code=1, handler=eh(EH_RECOVER, vals=[8])), step()),
    "ext_immediate_error": one(step(term=EXT_ERR, imm=True, code=0), step()),
    "ext_set_cancel_success": one(step(term=SUCCESS, cancel=True, timeout=2, vals=[1]), step()),
    # root cancel
    "cancel_root_waiting": one(step(term=EXT_OK, delay=15, vals=[1]), step(), cancel_at=6),
    "cancel_root_nested": one(step(cancel=True, kids=[step(cancel=True, kids=[step(term=FOREVER, cancel=True)])]),
                              cancel_at=3),
    "cancel_root_after_done": one(step(term=SUCCESS, vals=[1]), cancel_at=20),
    "stalled_forever": one(step(term=FOREVER, cancel=True), step()),
    # parallel
    "par_ok": one(par([step(term=SUCCESS, vals=[1]), step(kids=[step(), step()]), step(term=EXT_OK, delay=3)]), step()),
    "par_one_fails": one(par([step(term=FOREVER, cancel=True), step(term=ERROR, code=2),
                              step(term=EXT_OK, delay=5, vals=[1])], handler=eh(EH_RECOVER, vals=[4])), step()),
    "par_fail_later": one(par([step(kids=[step(), step(), step(term=ERROR)]), step(term=FOREVER, cancel=True)],
                              handler=eh(EH_ADD, kids=[step(term=SUCCESS, vals=["b2"])])), step()),
    "par_nested": one(par([par([step(), step(term=EXT_ERR, delay=2)]), step(term=FOREVER, cancel=True)]), step()),
    "par_empty": one(par([]), step()),
    # error_info per flow (burst 1: A's external error is raised, then B
    # fails and recovers before A's handler runs): A's handler reads A's
    # info, not B's; an error escaping A brings A's info to the parallel's
    "par_errors_own_info": one(par([step(eh(EH_RECOVER), term=EXT_ERR, imm=True, code=1),
                                    step(eh(EH_RECOVER), term=ERROR, code=2)],
                                   handler=eh(EH_PASS)), step(), burst=1),
    "par_escaped_error_info": one(par([step(term=EXT_ERR, imm=True, code=1),
                                       step(eh(EH_RECOVER), term=ERROR, code=2)],
                                      handler=eh(EH_RECOVER)), step(), burst=1),
    "par_timeout_outer": one(step(timeout=5, kids=[par([step(term=FOREVER, cancel=True),
                                                        step(term=EXT_OK, delay=9)])],
                                  handler=eh(EH_RECOVER, vals=[1])), step()),
    "par_cancel_root": one(par([step(term=FOREVER, cancel=True), par([step(term=FOREVER, cancel=True)])]),
                           cancel_at=4),
    # loops
    "repeat_3": one(loop(repeat=True, count=3, kids=[step(term=SUCCESS, vals=[1])]), step()),
    "repeat_0": one(step(term=SUCCESS, vals=[5]), loop(repeat=True, count=0), step()),
    "loop_break_own": one(loop(count=3, kids=[step()]), step()),
    "loop_break_from_substep": one(loop(count=3, label="a", kids=[step(), step(term=BREAK, label="a")]), step()),
    "loop_continue": one(loop(repeat=True, count=3, cancel=True, term=CONTINUE, term_iter=1,
                              kids=[step(term=FOREVER, cancel=True)]), step()),
    "loop_continue_from_substep": one(loop(repeat=True, count=3, kids=[step(term=CONTINUE), step()]), step()),
    "loop_nested_labels": one(loop(label="a", count=2, kids=[
        loop(label="b", repeat=True, count=3, kids=[step(term=BREAK, label="a")])]), step()),
    "loop_break_unknown_label": one(loop(count=2, kids=[step(term=BREAK, label="zz", handler=eh(EH_RECOVER))]),
                                    step()),
    "break_outside_loop": one(step(term=BREAK, handler=eh(EH_RECOVER)), step(term=CONTINUE)),
    "loop_break_across_branch": one(loop(label="a", count=3, kids=[par([step(term=FOREVER, cancel=True),
                                                                       step(term=BREAK, label="a")])]), step()),
    "loop_iteration_timeout": one(loop(repeat=True, count=2, timeout=3, term=FOREVER, term_iter=0), step()),
    "loop_ext_body": one(loop(repeat=True, count=3, term=EXT_OK, term_iter=1, delay=2), step()),
    "loop_error_escapes": one(step(kids=[loop(count=3, term=ERROR, term_iter=1, code=1, kids=[step()])],
                                   handler=eh(EH_RECOVER)), step()),
    # mutex sections
    "mutex_basic": one(sync(0, step(term=SUCCESS, vals=[1])), step()),
    "mutex_args_through": one(step(term=SUCCESS, vals=["b6", 7]), sync(1, step(term=SUCCESS, vals=["b8"]))),
    "mutex_contention": prog([([sync(0, step(term=EXT_OK, delay=5)), step()], None),
                              ([sync(0, step(term=EXT_OK, delay=1)), step()], None),
                              ([sync(0, step()), step()], None)], m0=(1, None)),
    "mutex_reject": prog([([sync(0, step(term=EXT_OK, delay=5)), step()], None),
                          ([step(kids=[sync(0, step())], handler=eh(EH_RECOVER, vals=[3])), step()], None)],
                         m0=(1, 0)),
    "mutex_reentrant": one(sync(1, step(kids=[sync(1, step(term=SUCCESS, vals=[2]))])), step()),
    "mutex_branches": one(par([sync(0, step(term=EXT_OK, delay=2)), sync(0, step(term=ERROR)),
                               sync(0, step())], handler=eh(EH_RECOVER)), step(), m0=(2, 1)),
    "mutex_cancel_waiter": prog([([sync(0, step(term=FOREVER, cancel=True))], 8),
                                 ([sync(0, step(term=SUCCESS, vals=[1])), step()], 3)]),
    "mutex_error_in_section": one(sync(0, step(term=ERROR, code=1, handler=eh(EH_RETHROW, code=2))),
                                  step()),
    "mutex_timeout_section": prog([([step(timeout=2, kids=[sync(1, step(term=FOREVER, cancel=True))],
                                          handler=eh(EH_RECOVER)), step()], None),
                                   ([sync(1, step(term=SUCCESS, vals=[4])), step()], None)]),
    # throttle sections (admission times on the virtual clock)
    "throttle_three_flows": prog([([tsync(0, step(), define=(1, 10, None)), step()], None),
                                  ([tsync(0, step()), step()], None),
                                  ([tsync(0, step()), step()], None)]),
    "throttle_rate3_branches": one(par([tsync(0, step(term=SUCCESS, vals=["b1"]), define=(3, 5, None)),
                                        tsync(0, step()), tsync(0, step()),
                                        tsync(0, step(term=SUCCESS, vals=[2]))]), step()),
    "throttle_queue_full": prog([([tsync(1, step(), define=(1, 10, 1)), step()], None),
                                 ([tsync(1, step()), step()], None),
                                 ([step(kids=[tsync(1, step())], handler=eh(EH_RECOVER, vals=[3])), step()],
                                  None),
                                 ]),
    "throttle_queue_zero_unhandled": prog([([tsync(0, step(term=EXT_OK, delay=3), define=(1, 20, 0))], None),
                                           ([tsync(0, step()), step()], None)]),
    "throttle_cancel_waiter": prog([([tsync(0, step(term=EXT_OK, delay=3), define=(1, 10, None)), step()], None),
                                    ([tsync(0, step(term=SUCCESS, vals=[1])), step()], 4),
                                    ([tsync(0, step()), step()], None)]),
    "throttle_timeout_waiter_no_timer": prog([([tsync(0, step(), define=(1, 30, None)), step()], None),
                                              ([step(timeout=6, kids=[tsync(0, step())],
                                                     handler=eh(EH_RECOVER, vals=[5])), step()], None)]),
    "throttle_unlock_admits_nobody": prog([([tsync(1, step(term=EXT_OK, delay=2), define=(1, 20, 2)), step()],
                                            None),
                                           ([tsync(1, step(kids=[step()])), step()], None)]),
    "throttle_lazy_window": prog([([tsync(0, step(), define=(1, 10, None)), step()], None),
                                  ([step(term=EXT_OK, delay=13), tsync(0, step()), tsync(0, step())], None)]),
    # a window [0, 10) has ended at t10: a flow arriving then is admitted at
    # once (new window [10, 20)); one arriving a turn later queues until t20
    "throttle_admit_at_window_end": prog([([tsync(0, step(), define=(1, 10, None)), step()], None),
                                          ([step(term=EXT_OK, delay=10), tsync(0, step()), step()], None),
                                          ([step(term=EXT_OK, delay=10), step(), tsync(0, step())], None)]),
    "throttle_reentrant": one(tsync(0, step(kids=[tsync(0, step(term=SUCCESS, vals=[4]))]), define=(1, 10, 0)),
                              step()),
    "throttle_error_in_section": one(tsync(0, step(term=ERROR, code=1), define=(2, 7, None)),
                                     step(), ),
    "throttle_inside_mutex": prog([([sync(0, step(kids=[tsync(1, step(term=EXT_OK, delay=1), define=(1, 12, None))])),
                                     step()], None),
                                   ([sync(0, step(kids=[tsync(1, step())])), step()], None),
                                   ([tsync(1, step(kids=[sync(0, step())])), step()], None)]),
    # two branches admitted together at t5; the first fails in its section,
    # which cancels the second before it enters: its place is not given back,
    # so r2 waits for the window at t10
    "throttle_admitted_then_cancelled": prog([([par([tsync(0, step(), define=(2, 5, None)), tsync(0, step())]),
                                                step()], None),
                                              ([par([tsync(0, step(term=ERROR, code=2)), tsync(0, step())],
                                                    handler=eh(EH_RECOVER, vals=[7])), step()], None),
                                              ([step(term=EXT_OK, delay=1), tsync(0, step()), step()], None)],
                                             exact=True),
    "throttle_burst_1": prog([([tsync(0, step(), define=(2, 5, 1)), step()], None),
                              ([step(), tsync(0, step()), step()], None),
                              ([tsync(0, step()), step(), tsync(0, step())], None)], burst=1, exact=True),
    "throttle_window_tie_invariants": prog([([tsync(0, step(), define=(1, 10, None)), step()], None),
                                            ([tsync(0, step()), step()], None),
                                            ([step(term=EXT_OK, delay=10), tsync(0, step()), step()], None)]),
    # limiter sections: a Mutex(concurrent, max_queue) with a Throttle(rate,
    # period, burst) nested inside; define=(concurrent, queue, rate, period, burst)
    # r1 waits for the slot, gets it when r0 leaves at t0, then waits for the
    # rate: admitted by the window timer at t10
    "limiter_two_flows": prog([([lsync(0, step(), define=(1, None, 1, 10, None)), step()], None),
                               ([lsync(0, step()), step()], None)], exact=True),
    # the spec defaults' shape: r1 finds the slot taken (queue 0), r2 finds
    # the slot free at t5 but the window [0, 30) used (burst 0)
    "limiter_defaults_reject": prog([([lsync(0, step(term=EXT_OK, delay=3), define=(1, 0, 1, 30, 0)), step()],
                                      None),
                                     ([lsync(0, step()), step()], None),
                                     ([step(term=EXT_OK, delay=5), lsync(0, step()), step()], None)], exact=True),
    "limiter_queue_full": prog([([lsync(1, step(term=EXT_OK, delay=2), define=(1, 1, 2, 10, None)), step()],
                                 None),
                                ([lsync(1, step()), step()], None),
                                ([step(kids=[lsync(1, step())], handler=eh(EH_RECOVER, vals=[3])), step()],
                                 None)], exact=True),
    # r1 holds the second slot and fills the burst queue; when r0 leaves at
    # t2 the slot goes to the first branch, which is rejected at the rate
    # stage (freeing it again), then to the second, rejected too
    "limiter_burst_full_cascade": prog([([lsync(0, step(term=EXT_OK, delay=2), define=(2, None, 1, 10, 1)),
                                          step()], None),
                                        ([lsync(0, step()), step()], None),
                                        ([par([step(kids=[lsync(0, step())], handler=eh(EH_RECOVER, vals=[1])),
                                               step(kids=[lsync(0, step())], handler=eh(EH_RECOVER, vals=[2]))]),
                                          step()], None)], exact=True),
    # r1 waits for the rate holding a slot; its cancel at t4 frees the slot
    # for r2, which then waits for the rate itself until t10
    "limiter_cancel_rate_waiter": prog([([lsync(0, step(term=EXT_OK, delay=6), define=(2, None, 1, 10, None)),
                                          step()], None),
                                        ([lsync(0, step()), step()], 4),
                                        ([lsync(0, step()), step()], None)], exact=True),
    "limiter_timeout_rate_waiter": prog([([lsync(1, step(), define=(1, None, 1, 20, None)), step()], None),
                                         ([step(timeout=5, kids=[lsync(1, step())],
                                                handler=eh(EH_RECOVER, vals=[5])), step()], None),
                                         ([lsync(1, step()), step()], None)], exact=True),
    "limiter_cancel_slot_waiter": prog([([lsync(0, step(term=EXT_OK, delay=5), define=(1, 2, 1, 5, None)),
                                          step()], None),
                                        ([lsync(0, step(term=SUCCESS, vals=[1])), step()], 2),
                                        ([lsync(0, step()), step()], None)], exact=True),
    # both branches admitted at t0; the first fails in its section and the
    # second is aborted before entering: its slot comes back, its rate
    # entry does not, so r1 waits for the window at t10
    "limiter_admitted_then_cancelled": prog([([par([lsync(0, step(term=ERROR, code=2), define=(2, None, 2, 10, None)),
                                                    lsync(0, step())], handler=eh(EH_RECOVER, vals=[7])),
                                               step()], None),
                                             ([step(term=EXT_OK, delay=1), lsync(0, step()), step()], None)], exact=True),
    "limiter_reentrant_burst0": one(lsync(1, step(kids=[lsync(1, step(term=SUCCESS, vals=[4]))]),
                                          define=(1, 0, 1, 10, 0)), step(), exact=True),
    "limiter_error_in_section": one(lsync(0, step(term=ERROR, code=1), define=(2, 0, 3, 7, 0)), step(), exact=True),
    # unlock hands the slot to r1, which passes the rate at once (3 a window)
    "limiter_unlock_hands_slot": prog([([lsync(0, step(term=EXT_OK, delay=2), define=(1, None, 3, 10, None)),
                                         step()], None),
                                        ([lsync(0, step(kids=[step()])), step()], None),
                                        ([lsync(0, step()), step()], None)], exact=True),
    "limiter_unlock_admits_nobody_early": prog([([lsync(1, step(term=EXT_OK, delay=2), define=(2, None, 1, 20, 2)),
                                                  step()], None),
                                                 ([lsync(1, step(kids=[step()])), step()], None)], exact=True),
    "limiter_inside_mutex": prog([([sync(0, step(kids=[lsync(0, step(term=EXT_OK, delay=1),
                                                              define=(1, None, 1, 12, None))])), step()], None),
                                  ([sync(0, step(kids=[lsync(0, step())])), step()], None),
                                  ([step(term=EXT_OK, delay=2), lsync(0, step(kids=[sync(0, step())])), step()],
                                   None)], exact=True),
    "limiter_burst_1": prog([([lsync(0, step(), define=(2, None, 2, 5, 1)), step()], None),
                             ([step(), lsync(0, step()), step()], None),
                             ([lsync(0, step()), step(), lsync(0, step())], None)], burst=1, exact=True),
    "limiter_window_tie_invariants": prog([([lsync(0, step(), define=(1, None, 1, 10, None)), step()], None),
                                           ([lsync(0, step()), step()], None),
                                           ([step(term=EXT_OK, delay=10), lsync(0, step()), step()], None)], exact=True),
    # successStep, relinquish
    "success_step": one(step(kids=[step(), value([1, "b2"])]), step()),
    "success_step_top": one(value(["b9"]), step()),
    "relinquish_interleave": prog([([step(), relinquish(), step()], None),
                                   ([step(term=EXT_OK, imm=True), step(), step()], None)]),
    "relinquish_passes_results": one(step(term=SUCCESS, vals=[4]), relinquish(), step()),
    "relinquish_cancelled": one(step(kids=[relinquish(), step()], timeout=0, handler=eh(EH_RECOVER)), step(),
                                cancel_at=0),
    # break/continue from error handlers
    "eh_break": one(loop(label="a", count=3, kids=[step(term=ERROR, handler=eh(EH_BREAK, label="a"))]), step()),
    "eh_continue": one(loop(repeat=True, count=2, kids=[step(term=ERROR, handler=eh(EH_CONTINUE))]), step()),
    "eh_break_no_loop": one(step(kids=[step(term=ERROR, handler=eh(EH_BREAK))], handler=eh(EH_RECOVER)), step()),
    "eh_break_cancels_outer": one(loop(count=2, kids=[step(cancel=True, kids=[
        step(term=ERROR, handler=eh(EH_BREAK))])]), step()),
    # cancel handlers that cancel or free their root (invariants only)
    "cancel_handler_cancels_root": one(step(cancel=True, kids=[step(term=FOREVER, cancel=True, timeout=2,
                                                                    cancel_action=CA_CANCEL_ROOT)]), step()),
    "cancel_handler_frees_root": one(par([step(term=FOREVER, cancel=True, timeout=1,
                                               cancel_action=CA_FREE_ROOT),
                                          step(term=FOREVER, cancel=True)]), step()),
    "cancel_handler_cancels_in_branch": one(par([step(term=FOREVER, cancel=True, timeout=3,
                                                      cancel_action=CA_CANCEL_ROOT),
                                                 step(term=ERROR)]), step()),
    # cross-root actions: a callback cancels or frees a root (invariants only)
    "xact_step_frees_mutex_holder": prog(
        [([sync(0, step(term=EXT_OK, delay=10, vals=[1]))], None),
         ([step(term=EXT_OK, delay=2, vals=[2])], None),
         ([sync(0, step(term=SUCCESS, vals=[3]))], None)],
        exact=True, actions=[xact(2, X_FREE_ROOT, 0, X_EXEC)]),
    "xact_eh_cancels_own_root": one(step(term=ERROR, handler=eh(EH_RECOVER, vals=[1])), step(),
                                    actions=[xact(0, X_CANCEL_ROOT, 0, X_EH)]),
    "xact_step_frees_own_root": one(step(term=SUCCESS, vals=["b1"], kids=[step()]), step(),
                                    actions=[xact(0, X_FREE_ROOT, 0, X_EXEC)]),
    "xact_cancel_handler_frees_limited_root": prog(
        [([step(term=FOREVER, cancel=True, timeout=3)], None),
         ([par([step(term=FOREVER, cancel=True),
                lsync(0, step(term=EXT_OK, delay=9, vals=["b2"]), define=(1, 1, 1, 10, 1)),
                lsync(0, step())])], None)],
        exact=True, actions=[xact(0, X_FREE_ROOT, 1, X_CANCEL)]),
    "xact_mutual_teardown": prog(
        [([step(term=EXT_OK, delay=5, vals=[1], cancel=True)], None),
         ([step(term=EXT_OK, delay=2, vals=[2])], None)],
        exact=True, actions=[xact(1, X_CANCEL_ROOT, 0, X_EXEC), xact(0, X_FREE_ROOT, 1, X_CANCEL)]),
    "xact_step_revives_own_root": one(
        step(cancel=True, term=SUCCESS, vals=["b1"], kids=[step()]), step(),
        actions=[xact(0, X_CANCEL_ROOT, 0, X_EXEC, revive=True)]),
    "xact_revive_other_root_waiting_for_mutex": prog(
        [([sync(0, step(term=EXT_OK, delay=6, vals=[1]))], None),
         ([sync(0, step(term=SUCCESS, vals=[2])), step()], None),
         ([step(term=EXT_OK, delay=2, vals=[3])], None)],
        exact=True, actions=[xact(5, X_CANCEL_ROOT, 1, X_EXEC, revive=True)]),
    "xact_loop_iteration_cancels_own_root": one(
        loop(repeat=True, count=3, term_iter=2, term=SUCCESS), step(),
        actions=[xact(0, X_CANCEL_ROOT, 0, X_EXEC)], burst=100),
    # re-entry hooks: cleanups (values, stack(), state variables), allocators
    # and cancel handlers act on roots (invariants only)
    "reentry_value_cleanup_frees_other_root": prog(
        [([step(term=SUCCESS, vals=["b1"]), step()], None),
         ([step(term=EXT_OK, delay=4, vals=[2])], None)],
        exact=True, reentry=[rhook(0, H_VALUE, A_FREE, target=1)]),
    "reentry_value_cleanup_cancels_waiting_root": prog(
        [([step(term=EXT_OK, delay=3, vals=["b1", "b2"]), step()], None),
         ([step(term=FOREVER, cancel=True), step()], None)],
        exact=True, reentry=[rhook(0, H_VALUE, A_CANCEL, target=1)]),
    "reentry_recover_value_revives_other_root": prog(
        [([step(term=ERROR, handler=eh(EH_RECOVER, vals=["b3"])), step()], None),
         ([step(term=EXT_OK, delay=1, vals=[1], cancel=True), step()], None)],
        exact=True, reentry=[rhook(0, H_VALUE, A_REVIVE, target=1)]),
    "reentry_branch_values_other_root_freed": prog(
        [([step(term=SUCCESS, vals=["b1"]), par([step(term=SUCCESS, vals=["b2", 3])], handler=eh(EH_RECOVER)),
           step()], None),
         ([step(term=EXT_OK, delay=3, vals=["b4"], cancel=True)], None)],
        exact=True, reentry=[rhook(0, H_VALUE, A_FREE, target=1)]),
    "reentry_stack_cleanup_cancels_own_root": one(
        step(kids=[step(term=FOREVER, cancel=True, timeout=3)]), step(),
        reentry=[rhook(1, H_STACK, A_CANCEL), rhook(0, H_STACK, A_ADD, hbits=1)]),
    "reentry_stack_cleanup_frees_other_root": prog(
        [([step(term=SUCCESS, vals=[1]), step()], None),
         ([par([step(term=EXT_OK, delay=2, vals=[2]), step(term=FOREVER, cancel=True)])], None)],
        exact=True, reentry=[rhook(0, H_STACK, A_FREE, target=1)]),
    "reentry_state_cleanup_cancels_own_root": one(
        step(term=SUCCESS, vals=[1]), step(), reentry=[rhook(0, H_SCLEAN, A_CANCEL, hbits=1)]),
    "reentry_state_alloc_adds_to_other_root": prog(
        [([step(), step()], None), ([step(term=EXT_OK, delay=2), step()], None)],
        exact=True, reentry=[rhook(0, H_SALLOC, A_ADD, target=1, hbits=2),
                             rhook(2, H_SCLEAN, A_REVIVE, target=0, hbits=3)]),
    "reentry_state_alloc_frees_own_root": one(
        loop(repeat=True, count=2, kids=[step()]), step(),
        reentry=[rhook(0, H_SALLOC, A_FREE)]),
    "reentry_cancel_handler_makes_state": prog(
        [([step(term=FOREVER, cancel=True, timeout=2), step()], None),
         ([step(term=EXT_OK, delay=5, vals=[2])], None)],
        exact=True, reentry=[rhook(0, H_CANCEL, A_STATE, target=1, name=2),
                             rhook(1, H_EXEC, A_ADD, target=0)]),
    "reentry_cancel_handler_adds_step": one(
        par([step(term=FOREVER, cancel=True), step(term=ERROR)]), step(),
        reentry=[rhook(1, H_CANCEL, A_ADD)]),
    "reentry_eh_state_and_stack": one(
        step(kids=[step(term=ERROR)], handler=eh(EH_RECOVER, vals=["b4"])), step(),
        reentry=[rhook(0, H_EH, A_STATE, name=1), rhook(0, H_STACK, A_NONE),
                 rhook(1, H_SCLEAN, A_NONE)]),
    # deep nesting: chains of levels around a node (invariants only)
    "chain_parallel_64": one(step(term=SUCCESS, vals=["b1"]), step(),
                             reentry=[rchain(0, CH_PAR, 64, stack=True, cancel=True)]),
    "chain_add_512": one(step(term=SUCCESS, vals=[2]), step(),
                         reentry=[rchain(0, CH_ADD, 512, cancel=True)]),
    "chain_loop_break_outer": one(loop(label="a", count=3, kids=[step(term=BREAK, label="a")]), step(),
                                  reentry=[rchain(1, CH_LOOP, 200, stack=True)]),
    "chain_mixed_4096": one(step(term=EXT_OK, delay=3, vals=["b1"]), step(),
                            reentry=[rchain(0, CH_MIX, 4096, stack=True, cancel=True)]),
    "chain_add_4096_cancelled": one(step(term=FOREVER, cancel=True), step(), cancel_at=5,
                                    reentry=[rchain(0, CH_ADD, 4096, stack=True, cancel=True)]),
    "chain_loop_4096_value_frees_other_root": prog(
        [([step(term=SUCCESS, vals=["b1"]), step()], None),
         ([step(term=EXT_OK, delay=2, vals=[1], cancel=True)], None)],
        exact=True, reentry=[rchain(0, CH_LOOP, 4096, cancel=True), rhook(0, H_VALUE, A_FREE, target=1)]),
    "chain_parallel_error_unwinds": one(step(term=ERROR, code=1), step(),
                                        reentry=[rchain(0, CH_PAR, 1024)]),
    # execute() without an unhandled_error callback: the misuse handler reports
    "unhandled_null_callback": prog([([step(term=ERROR, code=2), step()], None, True),
                                     ([step(kids=[step(term=ERROR)], handler=eh(EH_RECOVER)), step()], None, True)]),
    # deep nesting (frame stack growth)
    "deep_nesting": one(step(kids=[step(kids=[step(kids=[step(kids=[step(kids=[step(kids=[
        step(term=SUCCESS, vals=["b1"])])])])])])]), step()),
    # scheduling: several roots, bursts
    "roots_interleave": prog([([step(), step(), step()], None), ([step(), step()], None),
                              ([step(kids=[step(), step()])], None)]),
    "burst_1_immediates": prog([([step(term=EXT_OK, imm=True), step(), step()], None),
                                ([step(), step(), step(), step()], None)], burst=1),
    "burst_2_mixed": prog([([par([step(), step(), step()]), step()], None),
                           ([step(term=EXT_OK, imm=True, vals=[1]), step()], None)], burst=2),
}


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out_dir, exist_ok=True)
    SEEDS.update(late_seeds())
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), out_dir), file=sys.stderr)


if __name__ == "__main__":
    main()
