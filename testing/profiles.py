"""Hypothesis profiles of strata's property tests, chosen by HYPOTHESIS_PROFILE:

- `ci` (the default; `make test`): 200 examples a property, derandomized, so that a
  run is reproducible and a known failure (an xfail) fails every time;
- `long`: 5,000 examples a property, random, for a search before a release;
- `dev`: 20 examples a property, for a quick look while writing a test.

Generation is slower than hypothesis expects of a test, and run times vary with the
programs drawn, so the deadline and the speed health checks are off.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)

settings.register_profile("ci", max_examples=200, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=5000, **_COMMON)
settings.register_profile("dev", max_examples=20, **_COMMON)


def load() -> str:
    """Loads the profile HYPOTHESIS_PROFILE names (ci by default); returns its name."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(name)
    return name


PROFILE = load()
