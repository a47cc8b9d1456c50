"""Hypothesis: random exploration locally, a fixed derandomised search in CI (CI=true), so that a CI run is
reproducible while local runs keep looking for new counterexamples."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
