"""Parsed kernel programs kept on disk, so that a warm compile does not parse them.

A warm compile reads the lowered program from the capture or graph cache as text
(runtime/graph_cache.py) and parses it back into xDSL ops for the runtime to walk.
xDSL's parser is Python, token by token: BERT-base's 390-op program takes 0.24 s to
parse on a 2-core CPU, more than a third of a warm compile that Dynamo's cache
(frontend/caches/dynamo_cache.py) has otherwise brought to 0.6 s. The same module, pickled,
loads in 5-20 ms.

The text stays the cache's record (what the digest checks, what a reader sees); the
pickle is a derived copy, stored under a key made of the text itself, xDSL's version
and strata's source digest, so it can only ever stand for that text as this code
parses it. The compile that lowers a program stores its pickle (`store`); `parse`
loads it, or parses the text and stores one where none is readable. A pickle that does
not load (corrupt, written by other classes) is a miss: the text is parsed.

Like the kernel binaries beside them (Triton's cubins, llvmlite's objects), these
files are code: a cache folder others can write to is code they can run.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import io
import logging
import pickle

import xdsl
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region

from strata.runtime import cache

KIND = "parsed"
SUFFIX = ".pkl"
FORMAT = "strata-parsed-1"
log = logging.getLogger("strata.cache")


def _key(text: str) -> str:
    from strata.runtime.graph_cache import source_digest

    return cache.cache_key(KIND, _xdsl_version(), source_digest(), hashlib.sha256(text.encode()).hexdigest())


@functools.cache
def _xdsl_version() -> str:
    return str(getattr(xdsl, "__version__", "?"))


def parse(text: str) -> ModuleOp:
    """The module `text` prints, from its pickle where one loads, else parsed (and its
    pickle stored for the next process). Never shared: each call returns a new module."""
    key = _key(text)
    data = cache.read(KIND, key, SUFFIX)
    if data is not None:
        try:
            return _loads(data)
        except Exception as e:  # noqa: BLE001 - a corrupt or foreign file: parse the text
            log.info("parsed program %s is unreadable (%s: %s); parsing its text", key, type(e).__name__, e)
    from strata.dialects.context import parse_module

    module = parse_module(text)
    _write(key, module)
    return module


def store(text: str, module: ModuleOp) -> None:
    """Keeps `module`, which prints as `text`, for later `parse(text)` calls."""
    _write(_key(text), module)


def _write(key: str, module: ModuleOp) -> None:
    try:
        data = _dumps(module)
    except Exception as e:  # noqa: BLE001 - an attribute pickle cannot write: the text stays the record
        log.info("parsed program %s not stored (%s: %s)", key, type(e).__name__, e)
        return
    cache.store(KIND, key, SUFFIX, data)


# The IR is a linked graph (each op points to the next, each value to its users): pickled
# as it is, it nests one level per op and overflows the stack past a few hundred ops.
# So it is pickled flat: first every op, region and block as an empty object, then each
# one's attributes, whose references to those nodes are then back-references.
_NODES = (Operation, Region, Block)


class _FlatPickler(pickle.Pickler):
    def reducer_override(self, obj):
        # Reached only for nodes not yet written (pickle answers the others from its memo):
        # the node list, first, writes each as an empty object.
        if isinstance(obj, _NODES):
            return _empty, (type(obj),)
        return NotImplemented


def _empty(cls: type):
    return cls.__new__(cls)


def _dumps(module: ModuleOp) -> bytes:
    nodes: list = []
    for op in module.walk():
        nodes.append(op)
        for region in op.regions:
            nodes.append(region)
            nodes.extend(region.blocks)
    buffer = io.BytesIO()
    _FlatPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((FORMAT, nodes, [vars(n) for n in nodes]))
    return buffer.getvalue()


def _loads(data: bytes) -> ModuleOp:
    with _no_collection():  # a load makes ~10^5 objects: no full collection midway
        form, nodes, states = pickle.loads(data)
    if form != FORMAT or len(nodes) != len(states) or not nodes or not isinstance(nodes[0], ModuleOp):
        raise TypeError("it is not a parsed program of this format")
    for node, state in zip(nodes, states):
        node.__dict__.update(state)
    return nodes[0]


@contextlib.contextmanager
def _no_collection():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
