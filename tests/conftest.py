import os
import tempfile

import pytest
import torch

# Generated kernels go to a fresh cache for each test session, and each pytest-xdist
# worker has one of its own: a test that expects its first compile to miss the cache
# must not find what the other worker compiled.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["STRATA_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"strata-cache-{os.environ['PYTEST_XDIST_WORKER']}-")
else:
    os.environ.setdefault("STRATA_CACHE_DIR", tempfile.mkdtemp(prefix="strata-cache-"))


@pytest.fixture(autouse=True)
def _graph_cache_of_its_own(monkeypatch, request):
    """Each test reads only the graphs it compiled itself: a test that patches a pass
    must see that pass run, not a lowering an earlier test left in the graph cache, and
    a test's compile must trace, not load a package an earlier test saved."""
    from strata.frontend.caches import dynamo_cache
    from strata.runtime import graph_cache

    test = f"{abs(hash(request.node.nodeid)):x}"
    monkeypatch.setattr(graph_cache, "KIND", f"graphs/{test}")
    monkeypatch.setattr(dynamo_cache, "KIND", f"dynamo/{test}")  # nor Dynamo's work


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (the full training matrix)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long test (the full training matrix); skipped unless --slow")


def pytest_collection_modifyitems(config, items):
    # The default suite stays within its time budget; --slow runs everything.
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
