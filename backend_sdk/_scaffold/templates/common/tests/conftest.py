"""The conformance suite runs with these tests: pyproject.toml's addopts pass ``--backend __NAME__`` to
the SDK's pytest plugin (backend_sdk.testing.conformance), which adds its checks for this backend.

An SDK without that plugin (older, or a development checkout whose entry points are not installed)
does not know ``--backend``: the option is then accepted here and only the tests in this folder run.
"""
from __future__ import annotations

import argparse

import pytest

_PLACEHOLDER = False
# The names the plugin is registered under: its pytest11 entry point, or its module with -p.
_PLUGIN_NAMES = ("backend_sdk_conformance", "backend_sdk.testing.conformance.plugin")


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    global _PLACEHOLDER
    if any(pluginmanager.has_plugin(name) for name in _PLUGIN_NAMES):
        return  # the conformance plugin defines --backend
    try:
        parser.addoption("--backend", action="store", default=None,
                         help="backend to check (the SDK's conformance plugin is not installed: ignored)")
        _PLACEHOLDER = True
    except (ValueError, argparse.ArgumentError):  # defined by a plugin registered under another name
        pass


def pytest_report_header(config: pytest.Config) -> str | None:
    if _PLACEHOLDER:
        return "backend_sdk conformance plugin not found: running only the backend's own tests"
    return None
