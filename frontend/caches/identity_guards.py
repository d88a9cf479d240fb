"""Identity guards carried across processes, for frontend/caches/dynamo_cache.py.

Dynamo guards some values by identity: which function, class, module or builtin a name
refers to (ID_MATCH, CLOSURE_MATCH and the guards built on them). An id means nothing in
another process, so these guards cannot go into a package as they are, and a process
that loaded one without them would not notice `m.act = torch.sigmoid` after the compile.

So each of them is saved aside (`saving_portable_guards`): the guard itself, without
its weak references, and a description of the value it saw (frontend/caches/describe.py: a
function by its qualified name and code, a class, module or builtin by name, another
object by its class and attributes). When a loaded entry is first offered a frame,
each guard's source is read from that frame (`frame_values`). If every value has the
description the trace saw, the guards are built on those values, beside the saved
ones, just as a trace of the frame would have built them (`reading`); from then on
Dynamo's guard tree checks their identity on every call, at the cost of any other
guard. A value with another description means the entry is not that frame's: it is not
used, and Dynamo traces the frame.

The guard types are torch's caching_precompile list (CheckFunctionManager): those it
drops because they cannot be serialized.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import dataclasses
import functools
import logging
import weakref
from typing import Any

from strata.frontend.caches.describe import Describer

log = logging.getLogger("strata.cache")

ATTR = "strata_identity"  # the GuardsState attribute that holds them in a package
DROPPED = ("ID_MATCH", "CLOSURE_MATCH", "WEAKREF_ALIVE", "DICT_VERSION")

# The left-out guards of the frame being saved, between serialize_guards and its pickling.
_left_out: contextvars.ContextVar[list | None] = contextvars.ContextVar("strata_left_out", default=None)
# The frame's values that the guard builder being made reads (see `reading`).
_frame_values: contextvars.ContextVar[dict | None] = contextvars.ContextVar("strata_frame_values", default=None)


def serializable(guards) -> list[bool]:
    """Which guards (GuardFilterEntry) torch can write: the others are saved aside."""
    return [not (g.guard_type in DROPPED or any(t in DROPPED for t in g.derived_guard_types)) for g in guards]


@contextlib.contextmanager
def saving_portable_guards(active):
    """While a frame whose package `active()` returns compiles, CheckFunctionManager
    writes the guards torch can serialize as it does, and the identity guards with a
    description of their values under ATTR; it still builds and checks all of them.
    Guards that cannot be written leave the package unsaved (`package.unsave(why)`).
    Other threads' compiles (for which active() is None) are untouched."""
    from torch._dynamo import guards as torch_guards  # private

    manager = torch_guards.CheckFunctionManager
    real_serialize, real_pickle = manager.__dict__["serialize_guards"], torch_guards.pickle_guards_state

    def serialize_guards(self, builder, sorted_guards, output_graph):
        package = active()
        if package is None:
            return real_serialize(self, builder, sorted_guards, output_graph)
        try:
            keep = serializable([torch_guards.make_guard_filter_entry(g, builder) for g in sorted_guards])
            token = _left_out.set(_described(builder, [g for g, k in zip(sorted_guards, keep) if not k]))
            try:
                return real_serialize(self, builder, [g for g, k in zip(sorted_guards, keep) if k], output_graph)
            finally:
                _left_out.reset(token)
        except Exception as e:  # noqa: BLE001 - e.g. a guard on a class defined in a function
            # Not raised: torch fails the whole compile on anything but a PackageError,
            # and torch 2.13 on that too. The package is not saved; the frame compiles.
            package.unsave(f"its guards cannot be saved ({type(e).__name__}: {e})")
            return b""

    def pickle_guards_state(state, builder):
        left_out = _left_out.get()
        if left_out is not None:
            setattr(state, ATTR, left_out)
        return real_pickle(state, builder)

    manager.serialize_guards, torch_guards.pickle_guards_state = serialize_guards, pickle_guards_state
    try:
        yield
    finally:
        manager.serialize_guards, torch_guards.pickle_guards_state = real_serialize, real_pickle


def _described(builder, guards) -> list[tuple[Any, Any]]:
    describe = Describer()
    left_out = []
    for guard in guards:
        description = describe(builder.get(guard), [])
        log.debug("dynamo_cache: %s guard on %s saved as %r", guard.create_fn_name(), guard.name, description)
        left_out.append((_without_weakrefs(guard), description))
    return left_out


def _without_weakrefs(guard):
    """The guard as torch's serialize_guards writes the others."""
    fn = guard.create_fn
    if isinstance(fn, functools.partial):
        def deref(x):
            return x() if isinstance(x, weakref.ref) else x

        fn = functools.partial(fn.func, *map(deref, fn.args), **{k: deref(v) for k, v in fn.keywords.items()})
    return dataclasses.replace(guard, obj_weakref=None, guarded_class_weakref=None, create_fn=fn)


def frame_values(state, f_locals: dict, f_globals: dict) -> dict | None:
    """{source: value} from the frame for the builder that builds a loaded entry's
    guards with its identity guards (`with_identity_guards`), or None when a value in
    the frame is not what the trace saw. Each identity guard's own source is read from
    the frame, and so is each source on its way that the saved scope cannot give (a
    global no saved guard reads); everything else, read by the saved guards too, comes
    from the saved scope, so that no saved guard is built from the frame it checks."""
    from torch._dynamo.guards import _get_closure_vars, _Missing  # private

    left_out = getattr(state, ATTR, ())
    if not left_out:
        return {}
    scratch = dict(_get_closure_vars())  # get_value's locals: it adds and removes a temporary
    live: dict = {}
    frame = {"L": f_locals, "G": f_globals, "__builtins__": builtins.__dict__}
    describe = Describer()
    for guard, description in left_out:
        try:
            value = guard.originating_source.get_value(frame, scratch, live)
        except Exception as e:  # noqa: BLE001 - the name is gone: not the traced frame
            log.info("dynamo_cache: %s is not in this frame (%s: %s)", guard.name, type(e).__name__, e)
            return None
        here = describe(value, [])
        if here != description:
            log.info("dynamo_cache: %s is %r here, not %r as traced", guard.name, here, description)
            return None
    saved = {"L": state.output_graph.local_scope, "G": state.output_graph.global_scope, "__builtins__": builtins.__dict__}
    values = {}
    for guard, _ in left_out:
        source = guard.originating_source
        values[source] = live[source]
        while (source := getattr(source, "base", None)) is not None and source in live:
            try:
                if not isinstance(source.get_value(saved, scratch, {}), _Missing):
                    break
            except Exception:  # noqa: BLE001 - not in the saved scope: the frame's
                pass
            values[source] = live[source]
    return values


def with_identity_guards(state):
    """The saved guards state with its identity guards among the guards to build."""
    from torch._guards import GuardsSet
    from torch.utils._ordered_set import OrderedSet

    left_out = getattr(state, ATTR, ())
    if not left_out:
        return state
    output_graph = state.output_graph
    guards = GuardsSet(OrderedSet([*output_graph.guards, *(g for g, _ in left_out)]))
    return dataclasses.replace(state, output_graph=dataclasses.replace(output_graph, _guards=guards))


@contextlib.contextmanager
def reading(values: dict):
    """While a loaded entry's guards are built, the guard builder reads `values` (the
    frame's, from frame_values) before its saved scope."""
    from torch._dynamo.guards import GuardBuilder  # private

    real = GuardBuilder.__dict__["__init__"]

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        wanted = _frame_values.get()
        if wanted:
            self.src_get_value_cache.update(wanted)

    token = _frame_values.set(values)
    GuardBuilder.__init__ = init
    try:
        yield
    finally:
        GuardBuilder.__init__ = real
        _frame_values.reset(token)
