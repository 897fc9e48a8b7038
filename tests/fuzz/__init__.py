"""Fuzzers for the parsers and the binding layer (issue 12): see run.py."""
