"""Hypothesis profiles: a fixed, derandomised, small search in CI (``CI`` set, as CI services do), so that
a CI run is reproducible and bounded (tests/test_fuzz.py takes about 10 s on two shared cores, well under its
two-minute budget), and a random search locally, which keeps looking for new counterexamples. Tests that pin
``max_examples`` themselves keep their own budget under either profile; tests/test_fuzz.py scales its
booster and GP searches from the profile's.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=150,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI", "").lower() not in ("", "0", "false") else "dev")
