"""The outcome collector behind ``python -m backend_sdk conformance``: a pytest plugin object that
records each check's outcome and prints the coverage table (kept apart from plugin.py so that
importing it does not import the plugin module before pytest loads it)."""
from __future__ import annotations

from typing import Any

from . import operator_coverage

class Report:
    """A plugin object that collects outcomes for the coverage table (used by conformance.run)."""

    def __init__(self, backend: str | None = None) -> None:
        self.backend = backend
        self.outcomes: dict[str, str] = {}
        self.failures: list[tuple[str, str]] = []
        self.operator_results: dict[str, str] = {}  # OpInfo name -> "passed" / "failed"
        self.skipped: list[tuple[str, str]] = []

    def pytest_configure(self, config: Any) -> None:
        self.backend = config.getoption("backend", None) or self.backend

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and not (report.failed or report.skipped):
            return
        nodeid = report.nodeid
        if report.failed:
            self.outcomes[nodeid] = "failed"
            message = getattr(report.longrepr, "reprcrash", None)
            text = message.message if message is not None else str(report.longrepr).splitlines()[-1]
            self.failures.append((nodeid, text))
        elif report.skipped and hasattr(report, "wasxfail"):
            self.outcomes[nodeid] = "xfailed"
        elif report.skipped:
            self.outcomes.setdefault(nodeid, "skipped")
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.skipped.append((nodeid, reason))
        elif report.when == "call":
            self.outcomes.setdefault(nodeid, "passed")
        op = _operator_of(nodeid)
        if op is not None:
            state = "failed" if report.failed else ("xfailed" if hasattr(report, "wasxfail") else
                                                    "skipped" if report.skipped else "passed")
            rank = ("skipped", "passed", "xfailed", "failed")  # an operator shows its worst outcome
            previous = self.operator_results.get(op, "skipped")
            if rank.index(state) >= rank.index(previous):
                self.operator_results[op] = state

    def format_table(self) -> str:
        """The coverage table (native / composite / fallback / missing per operator) and the failures."""
        lines: list[str] = []
        if self.backend:
            try:
                coverage = operator_coverage(self.backend)
            except Exception as e:  # noqa: BLE001 - the backend did not load: the failures say why
                lines.append(f"(no coverage table: {e})")
                coverage = None
            if coverage is not None:
                lines += _coverage_lines(coverage, self.operator_results)
            lines += _registration_lines()
        passed = sum(1 for v in self.outcomes.values() if v == "passed")
        failed = sum(1 for v in self.outcomes.values() if v == "failed")
        skipped = sum(1 for v in self.outcomes.values() if v == "skipped")
        xfailed = sum(1 for v in self.outcomes.values() if v == "xfailed")
        lines.append("")
        lines.append(f"conformance of '{self.backend}': {passed} passed, {failed} failed, {skipped} skipped"
                     + (f", {xfailed} known failures (xfail)" if xfailed else ""))
        if self.failures:
            lines.append("failures:")
            for nodeid, text in self.failures:
                lines.append(f"  FAILED {nodeid.split('/')[-1]}")
                for t in text.splitlines()[:8]:
                    lines.append(f"      {t}")
        return "\n".join(lines)


def _registration_lines() -> list[str]:
    """Kernels of never-defined operators (Note [Closed namespaces]) and declined calls
    (Note [Declining kernels]), for the table."""
    from ... import _C

    lines: list[str] = []
    undefined = _C._kernels_for_undefined_operators()
    if undefined:
        lines.append("kernels for operators that were never defined (a misspelled name never runs): "
                     + ", ".join(f"{op} for {key} ({where})" for op, key, where in undefined))
    if _C._kernel_checks_enabled():
        lines.append(f"kernel checker (BACKEND_SDK_CHECK_KERNELS): on, {_C._kernel_checks_run()} native kernel calls "
                     "checked against the Meta kernels and for writes past their tensors' allocations")
    declines = _C._kernel_declines()
    if declines:
        total = sum(n for _, _, n in declines)
        lines.append(f"declined calls (run by the fallback): {total}: "
                     + ", ".join(f"{op} ({reason}): {n}" for op, reason, n in declines))
    return lines


def _operator_of(nodeid: str) -> str | None:
    """The OpInfo name of an operators/autograd check's node id ("...operator_checks.py::test_x[add-...]")."""
    if "operator_checks.py" not in nodeid and "autograd_checks.py" not in nodeid:
        return None
    if "[" not in nodeid:
        return None
    param = nodeid.rsplit("[", 1)[1].rstrip("]")
    if not param or param == "none":
        return None
    return param.split("-")[0].split(".")[0]


def _coverage_lines(coverage: Any, results: dict[str, str]) -> list[str]:
    by_name: dict[str, dict[str, list[str]]] = {}
    for overload, kind in coverage.kinds.items():
        base = overload.split("::", 1)[1]
        name = base.split(".", 1)[0].rstrip("_") if not base.startswith("_") else base.split(".", 1)[0]
        by_name.setdefault(name, {}).setdefault(kind, []).append(base)
    counts = coverage.counts()
    lines = [f"operator coverage on '{coverage.backend}' (aten overloads): {counts['native']} native, "
             f"{counts['composite']} composite (SDK, built on other operators), {counts['fallback']} served by "
             f"the fallback, {counts['missing']} missing",
             f"{'operator':<28} {'native':>6} {'comp.':>6} {'fallb.':>6} {'miss.':>6}  checked"]
    for name in sorted(by_name):
        kinds = by_name[name]
        status = results.get(name, "-")
        lines.append(f"{name:<28} {len(kinds.get('native', [])):>6} {len(kinds.get('composite', [])):>6} "
                     f"{len(kinds.get('fallback', [])):>6} {len(kinds.get('missing', [])):>6}  {status}")
    missing = coverage.by_kind("missing")
    if missing:
        lines.append("missing (a call raises NotImplementedError): " + ", ".join(m.split("::", 1)[1]
                                                                                for m in missing))
    return lines
