"""Triton 3.6's interpreter under NumPy 2: a one-element scalar as a loop bound
(codegen/triton_interpreter_compat.py)."""

import types

import numpy
import pytest
import torch

from strata.codegen import triton_interpreter_compat as compat


def _interpreter_3_6():
    """A stand-in for Triton 3.6's interpreter module: `int(array)` as its `__index__`."""
    def _patch_lang_tensor(tensor, scope):
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))
        scope.set_attr(tensor, "__bool__", lambda self: bool(self.handle.data))
    return types.SimpleNamespace(_patch_lang_tensor=_patch_lang_tensor)


def _interpreter_3_9():
    def _patch_lang_tensor(tensor, scope):
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))
    return types.SimpleNamespace(_patch_lang_tensor=_patch_lang_tensor)


class _Scope:
    def __init__(self):
        self.attrs = {}

    def set_attr(self, obj, name, value):
        self.attrs[name] = value


def _scalar(value):
    return types.SimpleNamespace(handle=types.SimpleNamespace(data=numpy.array([value])))


@pytest.mark.skipif(numpy.lib.NumpyVersion(numpy.__version__) < "2.0.0", reason="NumPy 1 converts one-element arrays")
def test_an_interpreter_that_refuses_one_element_arrays_is_patched():
    interpreter = _interpreter_3_6()
    scope = _Scope()
    interpreter._patch_lang_tensor(object, scope)
    with pytest.raises(TypeError):
        scope.attrs["__index__"](_scalar(7))
    assert compat.patch_interpreter(interpreter)
    scope = _Scope()
    interpreter._patch_lang_tensor(object, scope)
    assert scope.attrs["__index__"](_scalar(7)) == 7
    assert scope.attrs["__bool__"](_scalar(1)) is True  # the rest of its patch is kept


def test_an_interpreter_that_converts_them_is_left_alone():
    interpreter = _interpreter_3_9()
    original = interpreter._patch_lang_tensor
    assert not compat.patch_interpreter(interpreter)
    assert interpreter._patch_lang_tensor is original


def test_an_interpreted_loop_bounded_by_an_argument_runs():
    triton = pytest.importorskip("triton")
    import triton.language as tl

    from strata.codegen.triton_gpu import _interpreting

    with _interpreting():
        @triton.jit
        def count(out, n, STEP: tl.constexpr):
            total = 0
            for i in range(0, n, STEP):  # a bound the interpreter holds as a one-element array
                total += 1
            tl.store(out, total)

        out = torch.zeros(1, dtype=torch.int32)
        count[(1,)](out, 10, STEP=4)
    assert int(out) == 3
