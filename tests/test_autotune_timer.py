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


def test_a_longer_kernel_times_longer():
    small, large = torch.randn(256, 256, device="cuda"), torch.randn(2048, 2048, device="cuda")
    fast = triton_autotune._cuda_timer(lambda: torch.matmul(small, small), rounds=5)
    slow = triton_autotune._cuda_timer(lambda: torch.matmul(large, large), rounds=5)
    assert 0 < fast < slow, (fast, slow)
    assert slow > 10 * fast  # 512 times the work: the small one is not timed as a launch


def test_a_random_generator_is_left_usable():
    x = torch.randn(1 << 12, device="cuda")
    triton_autotune._cuda_timer(lambda: torch.nn.functional.dropout(x, 0.5), rounds=3)
    assert torch.rand(4, device="cuda").shape == (4,)
