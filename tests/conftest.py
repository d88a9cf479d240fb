import os
import tempfile

import pytest
import torch

# Generated kernels go to a fresh cache for each test session.
os.environ.setdefault("STRATA_CACHE_DIR", tempfile.mkdtemp(prefix="strata-cache-"))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
