"""Regression tests for what the fuzzers (tests/fuzz/) found, minimised; they run in the normal suite without atheris."""
