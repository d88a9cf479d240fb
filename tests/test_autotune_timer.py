"""The tuner's GPU timer measures the GPU's work, not the host's launches: a candidate
made of several launches (a product and its epilogue, a library call) must not lose to
one kernel because Python launches it more slowly."""

from __future__ import annotations

import time

import pytest
import torch

from strata.codegen import triton_autotune

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_host_time_between_launches_is_not_counted():
    x = torch.randn(1 << 16, device="cuda")
    y = torch.empty_like(x)

    def slow_host_fast_kernel():
        time.sleep(0.002)  # 2 ms of host work per launch
        torch.mul(x, 2, out=y)

    seconds = triton_autotune._cuda_timer(slow_host_fast_kernel, rounds=5)
    assert seconds < 0.5e-3, seconds  # the kernel takes microseconds
    torch.testing.assert_close(y, x * 2)


def test_a_launch_that_cannot_be_captured_is_timed_live():
    x = torch.randn(1 << 16, device="cuda")

    def synchronizes():
        torch.mul(x, 2)
        torch.cuda.synchronize()  # not allowed while capturing

    seconds = triton_autotune._cuda_timer(synchronizes, rounds=3)
    assert 0 < seconds < 0.1
    torch.cuda.synchronize()  # the failed capture left the device usable
    torch.testing.assert_close(torch.mul(x, 2), x * 2)


def test_a_launch_that_allocates_is_timed_from_a_graph():
    x = torch.randn(256, 256, device="cuda")

    def allocates():
        torch.matmul(x, x)

    seconds = triton_autotune._cuda_timer(allocates, rounds=5)
    assert 0 < seconds < 1e-3
