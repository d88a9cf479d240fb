"""reduce-overhead: a compiled graph replayed as a CUDA graph.

`CudaGraphRunner` wraps a compiled graph's boxed callable (a list of arguments in, a
list of outputs out). For each *signature* of the arguments (every tensor's shape,
strides, dtype and device, every other argument's value) the first call runs the graph
plainly: a warm-up that compiles and autotunes whatever it needs. The second call
records it: the graph is captured into a CUDA graph with a private memory pool. From
then on a call replays the graph: one launch, whatever the number of kernels.

Inputs. A tensor input that came at the same address in the warm-up and the recording
call (a parameter, a buffer, or an activation passed again) is read in place: the
recording keeps a reference to it, so that its memory cannot be reused, and a later
call whose tensor sits at that address is that memory, read as it is now. Parameters
and buffers (as AOTAutograd's metadata names them, and any nn.Parameter) are read in
place always. Other inputs are copied into static buffers of the recording at each
replay. A call whose in-place inputs moved does not match the recording: a new one is
made for it, which copies those, and from then on the runner copies an input it has
seen move (a decode loop's position, a fresh tensor each generation but the same one
within it): the recordings that read it in place are dropped, rather than recorded
again for each address until MAX_RECORDINGS runs out and the calls run plainly.

Outputs live in the recording's pool, and as in torch.compile's reduce-overhead they
are overwritten by a later replay of the same recording. Before replaying, the runner
checks whether the outputs it handed out last time are still referenced (the tensor
objects, or views of their storage); if so it replays another recording of the same
signature (at most MAX_RECORDINGS of them, each with its own pool), or else runs the
graph plainly: a result is never overwritten while someone can see it, e.g. `y = f(x)`
in a loop holds the last `y` while the next call runs, and a training step's forward
outputs are held by autograd until the backward.

A graph of fixed shapes (no shape symbols) is called only with the shapes, strides,
dtypes and devices it was traced for: Dynamo's guards hold every call to them, and the
compiled kernels depend on them anyway. Its signature is computed once, at the first
call whose arguments are all tensors on the GPU: a decode step's hundreds of arguments
(each layer's weights and caches) took a few hundred microseconds of Python a call to
describe, while the GPU ran the step in under a millisecond. The inputs a recording reads
in place are checked by one C++ call where torch has it.

Without CUDA (or with any tensor argument off the GPU, or a graph whose capture fails,
which is announced once) calls go to the graph unchanged.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

# Why a graph is not replayed (STRATA_LOGS=cudagraphs): each reason once per runner.
log = logging.getLogger("strata.cudagraphs")

# Recordings of one signature (each holds its outputs and its memory pool).
MAX_RECORDINGS = 3
# Signatures of one runner; beyond this, new signatures run plainly.
MAX_SIGNATURES = 16


def static_input_indices(kind: str) -> set[int]:
    """The indices of the graph's inputs that are parameters or buffers, from
    AOTAutograd's metadata (for the forward graph being compiled now)."""
    if kind == "backward":
        return set()
    try:
        from torch._guards import TracingContext

        context = TracingContext.try_get()
        if context is not None and context.fw_metadata is not None:
            return set(context.fw_metadata.static_input_indices or ())
    except Exception:  # an older or newer torch without this metadata
        pass
    return set()


def wrap(fn: Callable[[list], list], device: torch.device, kind: str = "forward", fixed_shapes: bool = False) -> Callable[[list], list]:
    """`fn` replayed as CUDA graphs on a CUDA device, or `fn` itself elsewhere.
    `fixed_shapes`: the graph has no shape symbols (its signature never changes)."""
    if torch.device(device).type != "cuda" or not torch.cuda.is_available():
        log.info("no CUDA graph: the graph runs on %s", torch.device(device).type if torch.device(device).type != "cuda" else "a machine without CUDA")
        return fn
    return CudaGraphRunner(fn, static_input_indices(kind), fixed_shapes)


# C++: whether the tensors at `indices` have the data pointers `ptrs` (CUDA builds)
_PTRS_EQUAL = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)


class CudaGraphRunner:
    def __init__(self, fn: Callable[[list], list], static: set[int] = frozenset(), fixed_shapes: bool = False):
        self.fn = fn
        self.fixed_shapes = fixed_shapes
        self.fixed_key: tuple | None = None  # a fixed-shape graph's one signature, once seen
        self.static = set(static)
        self.recordings: dict[tuple, list[Recording]] = {}
        self.addresses: dict[tuple, list[int | None]] = {}  # each signature's last call's tensor addresses
        self.moved: dict[tuple, set[int]] = {}  # each signature's inputs seen at two addresses: copied
        self.broken = False
        self.replays = 0
        self.plain_calls = 0
        self.said: set[str] = set()

    def _say(self, reason: str) -> None:
        if reason not in self.said:
            self.said.add(reason)
            log.info("a call runs without its CUDA graph: %s", reason)

    def __call__(self, args: list) -> list:
        key = self.fixed_key
        if key is None and not self.broken:
            key = self._signature(args)
            if key is not None and self.fixed_shapes and all(isinstance(a, torch.Tensor) for a in args):
                self.fixed_key = key
        if key is None or self.broken:
            self._say("its capture failed" if self.broken else "an argument off the GPU, or of a kind a graph cannot hold")
            return self._plain(args)
        recordings = self.recordings.get(key)
        if recordings is None:
            if len(self.recordings) >= MAX_SIGNATURES:
                self._say(f"more than {MAX_SIGNATURES} argument signatures (shapes, strides, scalars)")
                return self._plain(args)
            self.recordings[key] = []  # warm-up: compile, autotune, allocate
            self.addresses[key] = _addresses(args)
            return self._plain(args)
        for rec in recordings:
            if rec.matches(args) and not rec.outputs_alive():
                self.replays += 1
                return rec.replay(args)
        moved = self._forget_moved(key, recordings, args)
        if len(recordings) >= MAX_RECORDINGS:
            self._say(f"the outputs of all {MAX_RECORDINGS} recordings of its signature are still held")
            return self._plain(args)
        previous, self.addresses[key] = self.addresses[key], _addresses(args)
        in_place = [
            isinstance(a, torch.Tensor) and (
                self._static(i, a) or (a.data_ptr() == previous[i] and i not in moved))
            for i, a in enumerate(args)
        ]
        try:
            rec = Recording(self.fn, args, in_place)
        except Exception as e:
            self.broken = True
            warnings.warn(f"strata: this graph cannot be captured as a CUDA graph ({type(e).__name__}: {e}); it runs without one")
            return self._plain(args)
        recordings.append(rec)
        self.replays += 1
        return rec.replay(args)

    def _static(self, i: int, a: torch.Tensor) -> bool:
        return i in self.static or isinstance(a, torch.nn.Parameter)

    def _forget_moved(self, key: tuple, recordings: list, args: list) -> set[int]:
        """Adds the inputs (not parameters or buffers) that moved from where a recording
        reads them to the signature's moved set, and drops the recordings that read a
        moved input in place: from now on it is copied."""
        moved = self.moved.setdefault(key, set())
        for rec in recordings:
            moved.update(i for i, address in rec.in_place if args[i].data_ptr() != address and not self._static(i, args[i]))
        if moved:
            recordings[:] = [rec for rec in recordings if not any(i in moved for i, _ in rec.in_place)]
        return moved

    def _plain(self, args: list) -> list:
        self.plain_calls += 1
        return self.fn(args)

    def _signature(self, args: Sequence[Any]) -> tuple | None:
        """The arguments' signature, or None when the call cannot be replayed (a
        tensor off the GPU, an argument of a kind a graph cannot hold)."""
        out = []
        for a in args:
            if isinstance(a, torch.Tensor):
                if not a.is_cuda:
                    return None
                out.append((a.shape, a.stride(), a.dtype, a.get_device()))
            elif a is None or isinstance(a, (int, float, bool)):
                out.append((type(a), a))
            else:
                return None
        return tuple(out)


class Recording:
    """One captured CUDA graph: its inputs (read in place, or static copies), its
    outputs, its memory pool."""

    def __init__(self, fn: Callable[[list], list], args: Sequence[Any], in_place: list[bool]):
        self.inputs: list[Any] = []
        self.copied: list[tuple[torch.Tensor, int]] = []  # (static buffer, argument index)
        self.in_place: list[tuple[int, int]] = []  # (argument index, address)
        for i, (a, keep) in enumerate(zip(args, in_place)):
            if isinstance(a, torch.Tensor) and not keep:
                if _overlapping(a):  # an expanded input: its static buffer is dense
                    buffer = torch.empty(a.shape, dtype=a.dtype, device=a.device)
                else:
                    buffer = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device)
                buffer.copy_(a)
                self.copied.append((buffer, i))
                self.inputs.append(buffer)
            else:
                if isinstance(a, torch.Tensor):
                    self.in_place.append((i, a.data_ptr()))
                self.inputs.append(a)  # held: its memory stays this tensor's
        # for the C++ check: the indices, and each argument's address there (by index)
        self.in_place_indices = [i for i, _ in self.in_place]
        self.in_place_ptrs: list[int | None] = [None] * len(args)
        for i, address in self.in_place:
            self.in_place_ptrs[i] = address
        self.pool = torch.cuda.graph_pool_handle()
        self.graph = torch.cuda.CUDAGraph()
        # a warm-up run on the capture's side stream, as torch's own recipe does
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn(list(self.inputs))
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(self.graph, pool=self.pool):
            outputs = fn(list(self.inputs))
        self.outputs: list[Any] = list(outputs)
        del outputs
        # An output that is an input read in place (a KV cache written where it lives,
        # runtime/in_place.py) is the caller's memory, not the pool's: a replay cannot
        # overwrite it behind anyone's back, and its references are the caller's.
        own = {self.inputs[i].untyped_storage().data_ptr() for i, _ in self.in_place}
        self.tensors = [t for t in self.outputs if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in own]
        self.baseline = _references(self.tensors)

    def matches(self, args: Sequence[Any]) -> bool:
        """Whether the inputs this recording reads in place are where they were."""
        if _PTRS_EQUAL is not None:
            return _PTRS_EQUAL(args, self.in_place_ptrs, self.in_place_indices)
        return all(args[i].data_ptr() == address for i, address in self.in_place)

    def outputs_alive(self) -> bool:
        """Whether an output handed out by the last replay is still referenced
        outside this recording (the tensor itself, or a view of its storage)."""
        return _references(self.tensors) != self.baseline

    def replay(self, args: Sequence[Any]) -> list:
        for buffer, i in self.copied:
            buffer.copy_(args[i])
        self.graph.replay()
        return list(self.outputs)


def _addresses(args: Sequence[Any]) -> list[int | None]:
    return [a.data_ptr() if isinstance(a, torch.Tensor) else None for a in args]


def _references(tensors: list[torch.Tensor]) -> list[tuple[int, int]]:
    """(Python references, storage users) of each tensor, counted the same way each
    time, so that a difference from the baseline means someone else holds one."""
    counts = []
    for t in tensors:
        counts.append((sys.getrefcount(t), torch._C._storage_Use_Count(t.untyped_storage()._cdata)))
    return counts


def _overlapping(t: torch.Tensor) -> bool:
    """Whether two elements of `t` share memory (a stride of 0 over a dim longer than 1)."""
    return any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))
