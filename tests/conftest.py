import os
import tempfile

import pytest
import torch

# Generated kernels go to a fresh cache for each test session.
os.environ.setdefault("STRATA_CACHE_DIR", tempfile.mkdtemp(prefix="strata-cache-"))


@pytest.fixture(autouse=True)
def _graph_cache_of_its_own(monkeypatch, request):
    """Each test reads only the graphs it compiled itself: a test that patches a pass
    must see that pass run, not a lowering an earlier test left in the graph cache."""
    from strata.runtime import graph_cache

    monkeypatch.setattr(graph_cache, "KIND", f"graphs/{abs(hash(request.node.nodeid)):x}")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
