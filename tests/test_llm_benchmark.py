"""benchmarks/llm.py's profile: each kernel's marginal time on the stream."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

from llm import marginal_table  # noqa: E402


def _kernel(name: str, start: float, duration: float) -> dict:
    return {"cat": "kernel", "name": name, "ts": start, "dur": duration}


def test_a_kernel_adds_the_time_from_its_predecessor_s_end_to_its_own():
    """`wait` starts (PDL) while `norm` runs, so its duration (8 µs) holds a wait; what
    it adds is from norm's end (4) to its own end (9): 5 µs. A gap of a step's host
    time is not counted, nor is a memcpy or a CPU op."""
    events = [
        _kernel("norm", 0, 4), _kernel("wait", 1, 8), _kernel("matvec", 9, 3),
        {"cat": "cpu_op", "name": "aten::mm", "ts": 2, "dur": 100},
        _kernel("norm", 500, 4), _kernel("wait", 501, 8), _kernel("matvec", 509, 5),
    ]
    rows = {line.split()[0]: line.split()[1:] for line in marginal_table(events).splitlines()[1:]}
    assert set(rows) == {"wait", "matvec"}  # each first norm follows no kernel of its step
    count, median, total, _ = rows["wait"]
    assert (count, float(median), float(total)) == ("2", 5.0, 10.0)
    count, median, total, share = rows["matvec"]
    assert (count, float(median), float(total), share) == ("2", 4.0, 8.0, "44.4%")
