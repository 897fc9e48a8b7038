"""``backend_sdk.testing.conformance``: the suite a vendor runs to know their backend is right.

Five areas, each a module of pytest checks shipped in this package:

* ``runtime`` (runtime_checks.py): stream ordering, events and elapsed time, waits across
  streams and devices, allocator reuse across streams (record_stream), out-of-memory, faults
  surfacing at synchronisation points (where the backend offers fault injection), fork safety.
* ``device_module`` (device_module_checks.py): every function of the generated device module
  (``backend_sdk.<name>``) present and behaving like ``torch.cuda``'s.
* ``operators`` (operator_checks.py): every operator the backend implements (a kernel under its
  dispatch key) checked against the CPU over the operator database's sample inputs (dtypes, 0-d,
  empty, broadcast, non-contiguous; functional, method, in-place and out= forms). A mismatch names
  the first mismatching element (index, expected, actual).
* ``autograd`` (autograd_checks.py): gradients on the backend against the CPU's for operators
  with derivative formulas.
* ``models`` (model_checks.py): the acceptance models (backend_sdk.testing.models: a nanoGPT-shaped
  GPT and a small CNN) trained a few steps on the backend and on the CPU; a failure names the first
  step and layer (activation, gradient or parameter) where they diverge.

Run it as a pytest plugin (``pytest --backend NAME [--conformance-area AREA ...]``, enabled in
every pytest run through the ``pytest11`` entry point; it does nothing without ``--backend``),
from the command line (``python -m backend_sdk conformance NAME [--area AREA ...]``, which also
prints the coverage table), or from Python with :func:`run`.

With ``--backend NAME`` the plugin imports the vendor package ``NAME`` (which renames a
PrivateUse backend to ``NAME`` and attaches its device on import).

Fault injection: the runtime area's fault checks call the vendor package's
``conformance_inject_fault(device_index)`` if it defines one (it must make the next kernel or the
next synchronising call on that device fail asynchronously); backends on the simulator
(device_sim) are injected through ``device_sim.inject``; other backends skip those checks with a
reason.

Known failures: the vendor package's ``CONFORMANCE_XFAIL = {"sum-functional": "reason", ...}`` or
``--conformance-xfail ID`` (repeatable) mark checks, by test parameter or name, as
``xfail(strict=True)``: they are reported, and a check that starts passing fails until removed.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Iterable, Sequence

__all__ = [
    "AREAS", "AREA_MODULES", "OperatorCoverage", "operator_coverage", "first_mismatch", "area_files", "run",
    "pytest_args",
]

#: The areas, in the order they run.
AREAS = ("runtime", "device_module", "operators", "autograd", "models")
#: The check module of each area (files of this package).
AREA_MODULES = {
    "runtime": "runtime_checks.py",
    "device_module": "device_module_checks.py",
    "operators": "operator_checks.py",
    "autograd": "autograd_checks.py",
    "models": "model_checks.py",
}

_HERE = os.path.dirname(os.path.abspath(__file__))


def area_files(areas: Sequence[str] | None = None) -> list[str]:
    """Absolute paths of the check modules of ``areas`` (default: every area); ValueError for an unknown one."""
    selected = list(AREAS) if not areas else list(dict.fromkeys(areas))
    unknown = [a for a in selected if a not in AREA_MODULES]
    if unknown:
        raise ValueError(f"unknown conformance area(s) {', '.join(map(repr, unknown))}; expected one of "
                         f"{', '.join(AREAS)}")
    return [os.path.join(_HERE, AREA_MODULES[a]) for a in selected]


# ---- operator coverage ----

@dataclasses.dataclass
class OperatorCoverage:
    """How each aten operator overload is served on a backend.

    ``kinds`` maps "aten::add.Tensor" to one of
      "native"    - a kernel registered for the backend's dispatch key,
      "composite" - the SDK's CompositeExplicit/ImplicitAutograd kernel (built from other operators),
      "fallback"  - the backend's fallback (e.g. the CPU fallback),
      "missing"   - nothing: a call raises NotImplementedError.
    """

    backend: str
    kinds: dict[str, str]

    def by_kind(self, kind: str) -> list[str]:
        """The overloads of one kind, sorted."""
        return sorted(name for name, k in self.kinds.items() if k == kind)

    def counts(self) -> dict[str, int]:
        """How many overloads of each kind."""
        out = {k: 0 for k in ("native", "composite", "fallback", "missing")}
        for k in self.kinds.values():
            out[k] += 1
        return out


def _dense_key_name(backend: str) -> str:
    from ... import _C

    return _C._dispatch_key_name(backend)


def _classify(table: str, key: str) -> str:
    for line in table.splitlines():
        name, _, rest = line.partition(": ")
        if name != key:
            continue
        if rest.strip() == "missing" or not rest:
            return "missing"
        if "[backend fallback]" in rest:
            return "fallback"
        if "[kernel]" in rest:
            return "native"
        return "composite"
    return "missing"


def operator_coverage(backend: str, namespace: str = "aten") -> OperatorCoverage:
    """Queries the dispatcher: how every ``namespace`` operator overload is served on ``backend``."""
    from ... import _C

    key = _dense_key_name(backend)
    kinds = {}
    for name in _C._registered_operators():
        if not name.startswith(namespace + "::"):
            continue
        kinds[name] = _classify(_C._dispatch_dump_table(name), key)
    return OperatorCoverage(backend, kinds)


# ---- comparison ----

def _index_str(index: tuple) -> str:
    return "(" + ", ".join(str(int(i)) for i in index) + ("," if len(index) == 1 else "") + ")"


def first_mismatch(expected: Any, actual: Any, atol: float = 0.0, rtol: float = 0.0,
                   equal_nan: bool = True) -> str | None:
    """None if the numpy arrays ``expected`` and ``actual`` agree (same shape, values within
    ``atol + rtol * |expected|``, NaN matching NaN); otherwise a message naming the first mismatching
    element: "first mismatching element at index (1, 2): expected 3.0, actual 4.0 (3 of 12 elements
    differ, atol=1e-05, rtol=1.3e-06)"."""
    import numpy as np

    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return f"shape mismatch: expected {tuple(expected.shape)}, actual {tuple(actual.shape)}"
    if expected.size == 0:
        return None
    if expected.dtype.kind in "biu" and actual.dtype.kind in "biu":
        bad = expected != actual
    else:
        e = expected.astype(np.float64)
        a = actual.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(e - a) <= atol + rtol * np.abs(e)
            close |= e == a  # infinities of the same sign
            if equal_nan:
                close |= np.isnan(e) & np.isnan(a)
        bad = ~close
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    exp_v, act_v = expected[index].item(), actual[index].item()
    tol = f", atol={atol:g}, rtol={rtol:g}" if expected.dtype.kind not in "biu" else ""
    return (f"first mismatching element at index {_index_str(index)}: expected {exp_v!r}, actual {act_v!r} "
            f"({int(bad.sum())} of {bad.size} elements differ{tol})")


# ---- running ----

def _entry_point_present() -> bool:
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    try:
        from importlib.metadata import entry_points

        return any(ep.value.strip() == "backend_sdk.testing.conformance.plugin"
                   for ep in entry_points(group="pytest11"))
    except Exception:  # noqa: BLE001 - metadata of some other distribution is broken
        return False


def pytest_args(name: str, areas: Sequence[str] | None = None) -> list[str]:
    """The pytest arguments that run the suite on backend ``name``: ``-p`` loads the plugin where its
    entry point is not installed (a development checkout), never twice."""
    args = [] if _entry_point_present() else ["-p", "backend_sdk.testing.conformance.plugin"]
    args += ["--backend", name]
    for area in areas or ():
        args += ["--conformance-area", area]
    return args


def run(name: str, areas: Sequence[str] | None = None, extra_args: Iterable[str] = (), *,
        print_table: bool = True) -> int:
    """Runs the suite on backend ``name`` (importing the package ``name``) and prints the coverage
    table and the failures. Returns 0 iff every selected check passed (pytest's exit code otherwise)."""
    import pytest

    from ._report import Report

    files = area_files(areas)  # unknown areas are a ValueError before anything runs
    report = Report(name)
    # The check modules are given as paths, so nothing else (the current directory) is collected; the
    # rootdir and the emptied ini options keep a vendor project's pytest configuration out of this run.
    args = pytest_args(name, areas) + ["-q", "-p", "no:cacheprovider", "--rootdir", _HERE, "-c", os.devnull,
                                       *files]
    args += list(extra_args)
    code = int(pytest.main(args, plugins=[report]))
    if print_table:
        if not report.outcomes and code not in (0, 5):
            print(f"conformance of '{name}': did not run (pytest exit code {code}; the error is above)")
        else:
            print(report.format_table())
    return code
