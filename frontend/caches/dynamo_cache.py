"""Dynamo's work kept on disk: `options={"dynamo_cache": True}`, the default.

With the graph cache and the capture cache (runtime/graph_cache.py,
frontend/caches/capture_cache.py), a warm compile is only TorchDynamo's bytecode trace, which
alone is a second or two for a BERT. This cache stores what that trace made for a
function (its transformed bytecode, its guards, the resume functions of graph breaks)
with, for each graph, what strata needs to rebuild the compiled callable from the
capture cache; a second process that compiles the same model loads it and runs no
trace at all.

The format and the loader are torch's own (torch/_dynamo/package.py: CompilePackage,
the machinery behind torch._dynamo.config.caching_precompile). What differs:

- torch's config flag is never set. It is global (every torch.compile of the process,
  Inductor's too, would drop guards and save packages); strata hands its own package
  to torch._dynamo.optimize for this compile only.
- No guard is dropped. torch leaves out of a package the guards it cannot serialize
  (ID_MATCH, CLOSURE_MATCH, WEAKREF_ALIVE, DICT_VERSION and those built on them: which
  function, class or module a name refers to), and filters them before building the
  guards, so that even the process that traced loses them. Here the process that
  traced checks them all, and they are saved with a description of the object each saw
  and rebuilt in a loading process on the frame's own objects when those match
  (frontend/caches/identity_guards.py).
- torch installs loaded entries as "precompile entries" of the code object, which the
  C frame evaluator consults before its cache for ANY compiled callable running that
  code, whatever its backend: an Inductor compile of the same model would run strata's
  graphs. strata keeps the loaded entries itself and hands one to Dynamo (as if it had
  just traced it) the first time a frame of this compile misses Dynamo's cache; Dynamo
  then stores it as an ordinary cache entry of this backend. Calls after the first run
  entirely in C, exactly as after a normal compile.
- Saved only when every graph can be rebuilt by strata (an inference graph the capture
  cache stored); a training graph, or one the capture cache refuses, leaves the package
  unsaved and the compile as usual.
- What torch 2.11-2.13 get wrong for transformers' models is mended here: the module of
  a decorated forward (Package.initialize), modules Dynamo's bytecode loads by an
  id-made name (_bind_globals), guard values it could not save (_Entry), guard sources
  torch 2.11 pickles so that they cannot load (_fixed_source_pickling), the names of
  globals a later trace would pick again (_skip_unique_ids).
- Any entry that fails to load (missing capture-cache entry, changed source, corrupt or
  truncated file: a digest covers it) is a miss with a warning, never a wrong answer.

torch keys a package by the function's qualified name and first line, and refuses it
when the source of any function the trace inlined changed. strata adds a fingerprint
to the key: every module reachable from the compiled callable (the module itself; for
a function, modules in its closure, defaults and the globals its code names), each
submodule's class, its `training` flag and other attributes (values of primitives,
names of functions and classes, config objects by their attributes), parameters' and
buffers' names, shapes, dtypes, devices and requires_grad; the globals the function's
code names; strata's options, fullgraph and dynamic, Dynamo's config, versions, and the
global state at compile time. A model that differs there is a miss; what it cannot see
(a global an inlined function reads) the saved guards and identity guards check.

Every private torch API used is named here or in identity_guards.py, and only there; a
torch without them, or one that raises while this is set up, compiles as usual after
one warning.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import inspect
import itertools
import logging
import pickle
import re
import sys
import types
import warnings
from typing import Any, Callable

import torch

from strata.frontend.caches import identity_guards
from strata.frontend.caches.describe import Describer, codes, qualname
from strata.runtime import cache

KIND = "dynamo"
SUFFIX = ".pkl"
FORMAT = "strata-dynamo-2"
log = logging.getLogger("strata.cache")

try:  # private: the base class of a backend's part of a package
    from torch._dynamo.precompile_context import BackendCacheArtifact as _ArtifactBase
except Exception:  # noqa: BLE001 - another torch: _machinery() says so
    _ArtifactBase = object


class StrataArtifact(_ArtifactBase):
    """A graph's part of a package: the capture cache's key, the inputs' devices and the
    options, from which `after_deserialization` rebuilds the compiled callable as the
    capture cache's hit path in frontend/backend.py does."""

    def __init__(self, key: str, content: dict[str, Any]) -> None:
        self.key, self.content = key, content

    def after_deserialization(self) -> Callable:
        from strata.frontend.caches import capture_cache
        from strata.frontend.compile_graph import compile_captured

        c = self.content
        hit = capture_cache.read(c["capture"])
        if hit is None:
            raise RuntimeError(f"the capture cache has no entry {c['capture']} for graph {self.key}")
        # compile_captured reads only which inputs are tensors and their devices.
        inputs = [0 if d is None else torch.empty(0, device=d) for d in c["devices"]]
        return capture_cache.as_dynamo_callable(compile_captured(*hit, inputs, c["options"]))


# The package whose frame Dynamo is compiling now (for record()).
_compiling: contextvars.ContextVar[Any] = contextvars.ContextVar("strata_dynamo_package", default=None)


def record(gm: torch.fx.GraphModule, capture_key: str, example_inputs, options: dict[str, Any]) -> None:
    """Called by the backend for a graph the capture cache holds: under a dynamo_cache
    compile, what rebuilds it goes into the package of the frame being compiled."""
    package = _compiling.get()
    backend_id = gm.meta.get("backend_id")
    if package is None or backend_id is None:
        return
    devices = [str(x.device) if isinstance(x, torch.Tensor) else None for x in example_inputs]
    content = {"capture": capture_key, "devices": devices, "options": dict(options)}
    package.artifacts[backend_id] = StrataArtifact(backend_id, content)


def compile(model: Callable, backend: Callable, options: dict[str, Any], fullgraph: bool, dynamic: bool | None):
    """torch.compile(model, backend=backend) with Dynamo's result kept on disk and read
    back; None where this torch lacks the machinery (the caller compiles as usual)."""
    if not (options["graph_cache"] and options["capture_cache"]):
        log.info("dynamo_cache: off, as the capture cache it rebuilds graphs from is (graph_cache=False or "
                 "capture_cache=False)")
        return None
    if not _machinery():
        return None
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    if not hasattr(getattr(fn, "__func__", fn), "__code__"):  # a builtin (torch.fmax): no Python code to keep
        log.info("dynamo_cache: %r has no Python code; compiled without the cache", fn)
        return None
    try:
        key = _key(model, fn, options, fullgraph, dynamic)
        package, loaded = _load(key, fn)
        ctx = torch._dynamo.optimize(backend, nopython=fullgraph, dynamic=dynamic, package=package)
        if loaded:
            _serve(ctx, loaded)
        return ctx(model)
    except Exception as e:  # noqa: BLE001 - the cache must never cost the compile
        _warn(f"dynamo_cache could not be set up ({type(e).__name__}: {e}); compiling without it")
        return None


# -- the package: saved after each frame Dynamo compiles -----------------------------


@functools.cache
def _package_class():
    from torch._dynamo.package import CompilePackage  # private

    class Package(CompilePackage):
        def __init__(self, key: str) -> None:
            super().__init__(fn=None)  # initialized by _load
            self.strata_key = key
            self.artifacts: dict[str, StrataArtifact] = {}
            self.unsaved: str | None = None  # why this package is no longer saved

        def __reduce__(self):
            # A compiled module pickles its Dynamo context, whose frame converter holds
            # this package: the pickle leaves it out (see unpickled_package).
            return unpickled_package, ()

        def initialize(self, fn, dynamo=None, ignore_inlined_sources=False) -> None:
            super().initialize(fn, dynamo, ignore_inlined_sources)
            # torch names the frame's module by fn.__module__, which functools.wraps
            # copies from the wrapped function (transformers decorates forward): the
            # bytecode's globals, and its guards' G[...], are those of the module whose
            # code it is.
            func = getattr(self._innermost_fn, "__func__", self._innermost_fn)
            self._codes[func.__code__].python_module = func.__globals__["__name__"]

        @contextlib.contextmanager
        def code_context(self, code):
            # convert_frame._compile runs the whole frame compile (trace, backend,
            # guards) inside this context: on a clean exit the package holds it all.
            if code not in self._codes:
                try:
                    self._add_user_function(code)
                except Exception as e:  # noqa: BLE001 - a code torch cannot name again
                    self.unsave(f"{code.co_name} cannot be found again by name ({e})")
                    self._add_function(code, code.co_filename)  # a placeholder; never saved
            token = _compiling.set(self)
            try:
                with (super().code_context(code), _fixed_source_pickling(),
                      identity_guards.saving_portable_guards(_compiling.get)):
                    yield
            finally:
                _compiling.reset(token)
            self._save()

        def forget(self, dynamo_code: types.CodeType) -> None:
            """Drops a loaded entry that cannot be used from what is saved next."""
            from torch._dynamo.package import SerializedCode

            for entry in self._codes.values():
                entry.guarded_codes = [g for g in entry.guarded_codes
                                       if SerializedCode.to_code_object(g.dynamo_code) is not dynamo_code]

        def unsave(self, why: str) -> None:
            if self.unsaved is None:
                self.unsaved = why
                log.info("dynamo_cache: not saved: %s", why)

        def _save(self) -> None:
            if self.unsaved is not None:
                return
            try:
                entry = self.cache_entry()
                for code in entry.codes:
                    if code.bypassed:
                        return self.unsave("Dynamo could not serialize a frame's guards")
                    if why := _bind_globals(code):
                        return self.unsave(why)
                    for backend_id in code.backend_ids:
                        if backend_id not in self.artifacts:
                            return self.unsave(f"graph {backend_id} is not one the capture cache "
                                                "holds (training, or a graph it cannot key)")
                backends = {b: self.artifacts[b] for b in entry.backend_ids}
                payload = pickle.dumps({"format": FORMAT, "dynamo": entry, "backends": backends})
                cache.write(KIND, self.strata_key, SUFFIX, hashlib.sha256(payload).hexdigest().encode() + payload)
                log.info("dynamo_cache: stored %s (%d frames, %d graphs)", self.strata_key, len(entry.codes), len(backends))
            except Exception as e:  # noqa: BLE001 - an unsaved package costs the next process time only
                self.unsave(f"{type(e).__name__}: {e}")

    return Package


def unpickled_package() -> None:
    """What a pickled package loads as: none. The package belongs to the compile that
    made it (its frames, the entries it loaded); a compiled module loaded from a pickle
    compiles at its first call as torch.compile's does, without the dynamo cache."""
    return None


# OutputGraph.install_global_by_id's names: f"{prefix}_{id(value)}_c{compile id}".
_BY_ID = re.compile(r"_(\w*_)?\d{6,}_c\d+")


def _bind_globals(entry) -> str | None:
    """The transformed bytecode reads objects Dynamo put in the module's globals under a
    name made of their id. torch saves those that are imports it made itself
    (`__import_torch_dot_nn`), not the modules codegen loads (`___module_collections_<id>_c0`,
    which rebuilding a ModelOutput reads): those are added to the entry's imports here.
    Any other such object cannot be saved: why, or None. Identity guards name such
    modules too where the bytecode does not (`G['_<id>_c3'].Tensor`, under autocast):
    every module Dynamo put there is bound, so that a loading process finds them."""
    from torch._dynamo.package import SerializedCode

    scope = vars(sys.modules[entry.python_module])
    read = {name for guarded in entry.guarded_codes
            for code in codes(SerializedCode.to_code_object(guarded.dynamo_code)) for name in code.co_names}
    for name in sorted(read | {n for n, v in scope.items() if isinstance(v, types.ModuleType)}):
        if name in entry.import_sources or not _BY_ID.fullmatch(name):
            continue
        value = scope.get(name)
        if not isinstance(value, types.ModuleType):
            return f"the bytecode reads {name}, an object Dynamo put in the module's globals"
        entry.import_sources[name] = value.__name__
    return None


@contextlib.contextmanager
def _fixed_source_pickling():
    """torch 2.11 pickles a guard Source's init=False fields too (DefaultsSource's
    `field` and `_name`, for a guard on a decorator's inner function), which unpickling
    passes to __init__: no process could load the entry. While this package's guards are
    pickled, those classes pickle their init fields only, as torch 2.13 does."""
    classes = _sources_to_fix()
    saved = [c.__dict__.get("__reduce__") for c in classes]
    for c in classes:
        c.__reduce__ = _reduce_init_fields
    try:
        yield
    finally:
        for c, reduce in zip(classes, saved):
            if reduce is None:
                del c.__reduce__
            else:
                c.__reduce__ = reduce


@functools.cache
def _sources_to_fix() -> list[type]:
    import torch._guards
    from torch._dynamo import source  # private

    classes = {c for m in (source, torch._guards) for c in vars(m).values()
               if isinstance(c, type) and issubclass(c, torch._guards.Source) and dataclasses.is_dataclass(c)}
    return [c for c in classes if "dataclass_with_cached_hash" in getattr(c.__reduce__, "__qualname__", "")
            and any(not f.init for f in dataclasses.fields(c))]


def _reduce_init_fields(self):
    return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self) if f.init)


# -- loading ---------------------------------------------------------------------------


def _load(key: str, fn: Callable):
    """(package, {code: [_Entry]}) from the stored package,
    or (a fresh package, None)."""
    from torch._dynamo.utils import counters  # private

    Package = _package_class()
    data = cache.read(KIND, key, SUFFIX)
    if data is None:
        counters["dynamo_cache"]["dynamo_cache_miss"] += 1
        log.info("dynamo_cache: miss %s", key)
        return _fresh(Package, key, fn), None
    package = Package(key)
    try:
        digest, payload = data[:64], data[64:]
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            raise ValueError("its digest does not match its contents (truncated or corrupt)")
        stored = pickle.loads(payload)
        if stored.get("format") != FORMAT:
            raise ValueError(f"format {stored.get('format')!r}, not {FORMAT!r}")
        # strata's graphs first: a capture-cache miss fails here, before torch installs anything.
        built = {b: _Built(a.after_deserialization()) for b, a in stored["backends"].items()}
        # torch checks Python and torch versions and each inlined function's source.
        package.initialize(fn, stored["dynamo"], ignore_inlined_sources=False)
        loaded = _install(package, built)
    except _Taken as e:  # not an error: this process has its own copy of what it needs
        counters["dynamo_cache"]["dynamo_cache_miss"] += 1
        log.info("dynamo_cache: %s not loaded: %s", key, e)
        return _fresh(Package, key, fn), None
    except Exception as e:  # noqa: BLE001 - a bad entry is a miss, never a wrong answer
        counters["dynamo_cache"]["dynamo_cache_error"] += 1
        _warn(f"dynamo_cache entry {key} cannot be used ({type(e).__name__}: {e}); compiling afresh", once=False)
        with contextlib.suppress(Exception):
            package.uninstall()  # the globals install() may have set
        return _fresh(Package, key, fn), None
    package.artifacts.update(stored["backends"])  # a recompile saves them again beside its own
    counters["dynamo_cache"]["dynamo_cache_hit"] += 1
    log.info("dynamo_cache: hit %s (%d guarded entries)", key, sum(map(len, loaded.values())))
    return package, loaded


class _Taken(Exception):
    """A global the package installs is already set in this process."""


def _fresh(Package, key: str, fn: Callable):
    package = Package(key)
    package.initialize(fn, None, ignore_inlined_sources=False)
    return package


class _Built:
    """A rebuilt graph in the shape CompilePackage.install wants."""

    def __init__(self, compiled: Callable) -> None:
        self.compiled = compiled

    def after_deserialization(self) -> Callable:
        return self.compiled


def _install(package, built: dict) -> dict:
    """CompilePackage.install sets the module globals the transformed bytecode calls
    (graphs, resume functions, imports), then builds each entry's guards and hands the
    entry to the C evaluator's unscoped precompile list. Those last two calls are
    redirected: the entries are collected (see _Serving) and their guards built when
    first needed, when the frame's own values can stand in for those torch could not
    save (_Entry)."""
    import torch._C._dynamo.eval_frame as c_eval_frame  # private
    from torch._dynamo import convert_frame, package as torch_package  # private

    loaded: dict[types.CodeType, list[_Entry]] = {}
    real = c_eval_frame._load_precompile_entry, torch_package.load_guard_manager

    def collect(code, guards, dynamo_code):
        loaded.setdefault(code, []).append(_Entry(package, guards, real[1], dynamo_code))
        # What Dynamo notes of code it made: never to be traced itself, and the code it
        # stands for (in the reasons for a recompile of the frame).
        convert_frame.orig_code_map[dynamo_code] = code
        convert_frame.output_codes.add(dynamo_code)

    # install() sets module globals under the names the first process's Dynamo chose
    # from its counter (resume functions, the builtins dict): one that already exists
    # here belongs to another compile, which overwriting would break.
    codes = package._codes.values()  # private
    modules = {sys.modules[c.python_module] for c in codes}
    for c in codes:
        taken = [n for n in c.function_names if c.install_to_global and n in vars(sys.modules[c.python_module])]
        if taken:
            raise _Taken(f"{c.python_module}.{taken[0]} already exists in this process (compiled before?)")
    before = {m: set(vars(m)) for m in modules}
    # install() looks both up by name when it runs.
    c_eval_frame._load_precompile_entry = collect
    torch_package.load_guard_manager = lambda state, code, scope: (state, code, scope)
    try:
        package.install(built)
    finally:
        c_eval_frame._load_precompile_entry, torch_package.load_guard_manager = real
    _skip_unique_ids([n for m in modules for n in set(vars(m)) - before[m]])
    return loaded


class _Entry:
    """A loaded entry: the transformed code, and its guards, built on first use, from
    the first frame whose objects are those the trace saw (identity_guards).

    torch saves the frame's values that guards were built from, but some it cannot
    (a function that its qualified name does not find again, as a decorator's inner
    function; values no guard reads), and saves a _Missing instead; building a guard on
    one fails. Those are taken from the frame itself, as a fresh trace would; the
    identity guards say which function it must be."""

    def __init__(self, package, guards: tuple, build: Callable, dynamo_code: types.CodeType) -> None:
        self.package, self.guards, self.build, self.code = package, guards, build, dynamo_code
        self.manager = None

    def guard_manager(self, f_locals: dict):
        """The entry's guards, or None while no frame has had the traced objects."""
        if self.manager is None and self.guards is not None:
            state, code, scope = self.guards
            try:
                state = _with_frame_values(state, f_locals)
                values = identity_guards.frame_values(state, f_locals, scope)
                if values is None:  # another function (or class, module) than traced
                    return None
                with identity_guards.reading(values):
                    self.manager = self.build(identity_guards.with_identity_guards(state), code, scope)
            except Exception as e:  # noqa: BLE001 - Dynamo traces the frame instead
                _warn(f"dynamo_cache: the guards of a loaded entry of {code.co_name} cannot be rebuilt "
                      f"({type(e).__name__}: {e}); Dynamo traces the frame")
                self.package.forget(self.code)
            self.guards = None
        return self.manager


def _with_frame_values(state, f_locals: dict):
    from torch._dynamo.guards import _Missing  # private

    saved = state.output_graph.local_scope
    missing = {k: f_locals[k] for k, v in saved.items() if isinstance(v, _Missing) and k in f_locals}
    if not missing:
        return state
    output_graph = dataclasses.replace(state.output_graph, local_scope={**saved, **missing})
    return dataclasses.replace(state, output_graph=output_graph)


def _skip_unique_ids(names: list[str]) -> None:
    """Moves Dynamo's counter for the globals it installs (`__resume_at_30_2`,
    `__builtins_dict___0`) past the numbers the loaded names use: a later trace in this
    process would otherwise pick one of them again and fail on the existing global."""
    from torch._dynamo import bytecode_transformation  # private

    used = [int(m.group(1)) for n in names
            if not n.startswith("__compiled_fn") and (m := re.search(r"_(\d+)$", n))]
    if used:
        current = next(bytecode_transformation._unique_id_counter)
        bytecode_transformation._unique_id_counter = itertools.count(max(current, max(used) + 1))


def _serve(ctx, loaded: dict) -> None:
    """Puts _Serving between Dynamo's error-catching wrapper and its frame converter."""
    from torch._dynamo.convert_frame import CatchErrorsWrapper  # private

    outer = ctx.callback
    if not isinstance(outer, CatchErrorsWrapper):
        raise TypeError(f"Dynamo's callback is a {type(outer).__name__}, not a CatchErrorsWrapper")
    outer._torchdynamo_orig_backend = _Serving(outer._torchdynamo_orig_backend, loaded)


class _Serving:
    """Dynamo's frame converter, answering from the loaded entries first: on a frame of
    this compile that misses Dynamo's cache, the first loaded entry whose guards pass is
    returned as if just compiled, and Dynamo stores it in its own cache for this backend.
    Anything else is traced by the real converter (and saved with the package)."""

    def __init__(self, convert, loaded: dict) -> None:
        self._convert = convert
        self._loaded = loaded
        # Dynamo finds the backend (for its cache entries and stances) by following
        # _torchdynamo_orig_backend: stand in for the converter, keep the chain's length.
        self._torchdynamo_orig_backend = convert._torchdynamo_orig_backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._convert, name)  # _clone_with_backend, _box, _export, ...

    def __reduce__(self):
        # The loaded entries are this process's code objects: a pickle keeps the converter.
        return unserved, (self._convert,)

    def __call__(self, frame, cache_entry, hooks, frame_state, *, skip: int = 0):
        from torch._dynamo.convert_frame import get_compile_id  # private
        from torch._dynamo.types import GuardedCode, wrap_guarded_code  # private

        entries = self._loaded.get(frame.f_code)
        if entries:
            f_locals = frame.f_locals
            for entry in entries:
                manager = entry.guard_manager(f_locals)
                if manager is not None and manager.check(f_locals):
                    compile_id = get_compile_id(frame_state)
                    return wrap_guarded_code(GuardedCode(entry.code, manager, compile_id, "strata dynamo_cache"))
        return self._convert(frame, cache_entry, hooks, frame_state, skip=skip + 1)


def unserved(convert):
    """What a pickled _Serving loads as: the frame converter it stood in front of."""
    return convert


# -- the key: what the dropped guards would have checked -------------------------------


def _key(model: Callable, fn: Callable, options: dict[str, Any], fullgraph: bool, dynamic: bool | None) -> str:
    from torch._dynamo.package import CompilePackage  # private
    from strata.runtime.graph_cache import source_digest

    return cache.cache_key(
        KIND, FORMAT, CompilePackage.source_id_from_fn(fn), fingerprint(model), cache.settings_key(options),
        repr((fullgraph, dynamic)), cache.global_state_key(), _dynamo_config(), source_digest(),
    )


def _dynamo_config() -> str:
    """Dynamo's settings that change what it traces (its get_hash() is not stable across
    processes: it prints sets as they iterate)."""
    config = torch._dynamo.config
    ignored = getattr(config, "_compile_ignored_keys", set())
    settings = {k: v for k, v in config.get_config_copy().items() if k not in ignored}
    return repr(Describer()(settings, []))


def fingerprint(model: Callable) -> str:
    """A digest of what the compiled callable reaches that Dynamo's dropped guards
    would have checked (see the module's docstring)."""
    describe = Describer()
    roots: list[Any] = []
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    if isinstance(fn, types.MethodType):
        roots.append(fn.__self__)
        fn = fn.__func__
    for _ in range(8):  # the function and what its decorators wrap (functools.wraps)
        if not isinstance(fn, types.FunctionType):
            break
        cells = [c.cell_contents for c in fn.__closure__ or () if _has_contents(c)]
        scope = fn.__globals__
        names = sorted({n for code in codes(fn.__code__) for n in code.co_names if n in scope})
        roots.append((fn, "closure", cells, "defaults", fn.__defaults__, fn.__kwdefaults__,
                      "globals", {n: scope[n] for n in names}))
        fn = getattr(fn, "__wrapped__", None)
    if isinstance(model, torch.nn.Module):
        roots.append(model)
    modules: list[torch.nn.Module] = []
    parts = [describe(r, modules) for r in roots]
    seen: set[int] = set()
    for root in modules:
        for name, m in root.named_modules(remove_duplicate=False):
            if id(m) in seen:
                continue
            seen.add(id(m))
            attrs = {k: v for k, v in vars(m).items() if k != "_modules"}
            parts.append((name, qualname(type(m)), sorted(m._modules), describe(attrs, modules)))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


# -- feature checks and warnings ----------------------------------------------------------


@functools.cache
def _machinery() -> bool:
    """Whether this torch has the private pieces used here (torch 2.11 to 2.13 do)."""
    try:
        import torch._C._dynamo.eval_frame as c_eval_frame
        from torch._dynamo.convert_frame import (  # noqa: F401
            CatchErrorsWrapper, get_compile_id, orig_code_map, output_codes)
        from torch._dynamo.eval_frame import _optimize
        from torch._dynamo.package import CompilePackage
        from torch._dynamo.types import GuardedCode, wrap_guarded_code  # noqa: F401

        params = inspect.signature(_optimize).parameters
        missing = [n for n in ("package",) if n not in params]
        missing += [n for n in ("code_context", "install", "initialize", "cache_entry", "uninstall",
                                "_add_user_function", "_add_function", "source_id_from_fn")
                    if not hasattr(CompilePackage, n)]
        missing += [n for n in ("_load_precompile_entry",) if not hasattr(c_eval_frame, n)]
        from torch._dynamo import guards, package

        missing += [n for n in ("load_guard_manager", "SerializedCode") if not hasattr(package, n)]
        missing += [n for n in ("_Missing", "make_guard_filter_entry", "pickle_guards_state", "_get_closure_vars",
                                "GuardBuilder") if not hasattr(guards, n)]
        serialize = getattr(getattr(guards, "CheckFunctionManager", None), "serialize_guards", None)
        if serialize is None or list(inspect.signature(serialize).parameters) != ["self", "builder", "sorted_guards",
                                                                                 "output_graph"]:
            missing.append("CheckFunctionManager.serialize_guards(self, builder, sorted_guards, output_graph)")
        from torch._dynamo import bytecode_transformation

        missing += [n for n in ("_unique_id_counter",) if not hasattr(bytecode_transformation, n)]
        if _ArtifactBase is object:
            missing.append("BackendCacheArtifact")
        if missing:
            raise ImportError(", ".join(missing))
    except Exception as e:  # noqa: BLE001
        _warn(f"dynamo_cache needs torch's precompile machinery, which torch {torch.__version__} lacks "
              f"({type(e).__name__}: {e}); compiling without it")
        return False
    return True


_warned: set[str] = set()


def _warn(message: str, once: bool = True) -> None:
    if once and message in _warned:
        return
    _warned.add(message)
    warnings.warn(f"strata: {message}", stacklevel=3)
