"""Runs one fuzz target for a bounded time: ``python -m tests.fuzz.run TARGET --seconds N``.

Targets (``--list``):

* ``schema_cpp``, ``device_cpp``: libFuzzer harnesses in C++ (tests/fuzz/cpp/) for the schema
  parser and device strings, compiled with clang++ -fsanitize=fuzzer,address,undefined together
  with the few SDK sources they need (into build-fuzz/, rebuilt when a source changes): coverage of
  the C++ parser itself. Skipped, with a message, where no clang++ with libFuzzer is installed.
* ``schema``, ``device``, ``binding``, ``indexing``: atheris targets (tests/fuzz/targets.py) through
  the Python API, with Python-level coverage; under tools/sanitize.sh --fuzz they run against the
  ASan build.

Seeds are read from tests/fuzz/corpus/<corpus>/ and never written there: new inputs go to a working
corpus (--work-dir, default a temporary folder), crashes to <work-dir>/artifacts/ (printed). A
crash, an oracle failure (an undocumented exception type, a round-trip or numpy mismatch) or a hang
(--timeout seconds for one input) exits non-zero, unless the target is listed in the environment
variable SDK_FUZZ_KNOWN_FAILING (targets that still find a known, open defect; .ci/run says which). The last line is a summary: executions, coverage
(libFuzzer's ``cov``/``ft``: edges and features), corpus size.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

CPP_TARGETS = {
    # target: (harness, SDK sources it links, corpus, dictionary)
    "schema_cpp": ("schema_fuzzer.cpp", ["csrc/backend_sdk/dispatch/FunctionSchema.cpp"], "schema",
                   "schema.dict"),
    "device_cpp": ("device_fuzzer.cpp", ["csrc/backend_sdk/core/DeviceType.cpp"], "device", None),
}
PY_TARGETS = {"schema": ("schema", "schema.dict"), "device": ("device", None), "binding": ("binding", None),
              "indexing": ("indexing", None)}
TARGETS = list(CPP_TARGETS) + list(PY_TARGETS)


def _clang() -> str | None:
    for name in ("clang++", "clang++-14", "clang++-15", "clang++-16"):
        path = shutil.which(name)
        if path:
            return path
    return None


def build_cpp(target: str, build_dir: Path) -> Path | None:
    """The libFuzzer binary of `target`, rebuilt if a source is newer; None without clang."""
    clang = _clang()
    if clang is None:
        return None
    harness, sources, _, _ = CPP_TARGETS[target]
    inputs = [HERE / "cpp" / harness] + [ROOT / s for s in sources]
    binary = build_dir / target
    headers = list((ROOT / "csrc" / "core").glob("*.h")) + list((ROOT / "csrc" / "dispatch").glob("*.h"))
    if binary.exists() and binary.stat().st_mtime > max(p.stat().st_mtime for p in inputs + headers):
        return binary
    build_dir.mkdir(parents=True, exist_ok=True)
    cmd = [clang, "-std=c++17", "-O1", "-g", "-fno-omit-frame-pointer",
           "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all",
           f"-I{ROOT / 'csrc'}", *map(str, inputs), "-o", str(binary)]
    print(f"fuzz: building {target}: {' '.join(cmd)}", flush=True)
    subprocess.run(cmd, check=True)
    return binary


_STAT = re.compile(r"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)\s+cov: (\d+) ft: (\d+) corp: (\d+)")


def run(target: str, seconds: int, work_dir: Path, timeout: int, rss_limit_mb: int, jobs_env: dict) -> int:
    artifacts = work_dir / "artifacts"
    corpus_out = work_dir / "corpus"
    artifacts.mkdir(parents=True, exist_ok=True)
    corpus_out.mkdir(parents=True, exist_ok=True)
    env = dict(jobs_env)
    if target in CPP_TARGETS:
        binary = build_cpp(target, ROOT / "build-fuzz")
        if binary is None:
            print(f"fuzz {target}: skipped: no clang++ with libFuzzer (apt-get install clang)")
            return 0
        _, _, corpus, dictionary = CPP_TARGETS[target]
        cmd = [str(binary)]
        # The harness carries clang's own ASan runtime; the GCC one tools/sanitize.sh preloads
        # for Python must not be loaded into it.
        env.pop("LD_PRELOAD", None)
        env["LSAN_OPTIONS"] = f"suppressions={ROOT / 'tools' / 'lsan.supp'}"
    else:
        if importlib.util.find_spec("atheris") is None:
            print(f"fuzz {target}: skipped: atheris is not installed (pip install \".[fuzz]\")")
            return 0
        corpus, dictionary = PY_TARGETS[target]
        cmd = [sys.executable, "-m", "tests.fuzz.targets", target]
        env["PYTHONPATH"] = os.pathsep.join(p for p in [env.get("PYTHONPATH", ""), str(ROOT)] if p)
    seeds = HERE / "corpus" / corpus
    cmd += [str(corpus_out), str(seeds), f"-max_total_time={seconds}", f"-timeout={timeout}",
            f"-rss_limit_mb={rss_limit_mb}", f"-artifact_prefix={artifacts}/", "-print_final_stats=1",
            "-print_pcs=0"]
    if dictionary:
        cmd.append(f"-dict={HERE / dictionary}")
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True, errors="replace", cwd=ROOT)
    elapsed = time.monotonic() - start
    log = proc.stderr
    (work_dir / f"{target}.log").write_text(log)
    execs = re.search(r"stat::number_of_executed_units: (\d+)", log)
    stats = _STAT.findall(log)
    cov, ft, corp = (stats[-1][1:] if stats else ("n/a", "n/a", "n/a"))  # n/a: no coverage feedback
    found = sorted(str(p) for p in artifacts.iterdir())
    status = "ok" if proc.returncode == 0 and not found else "FINDING"
    if status != "ok":
        # The part of the log that says what happened: from the first report to the end.
        marker = min((i for i in (log.find("==ERROR"), log.find("runtime error"), log.find("Uncaught Python"),
                                  log.find("ALARM"), log.find("schema_fuzzer:"), log.find("device_fuzzer:"),
                                  log.find("Traceback")) if i >= 0), default=max(0, len(log) - 4000))
        sys.stderr.write(log[marker:marker + 8000] + "\n")
    print(f"fuzz {target}: {status} in {elapsed:.0f} s: {execs.group(1) if execs else '?'} executions, "
          f"cov {cov}, ft {ft}, corpus {corp} (seeds {len(list(seeds.iterdir()))}); "
          f"exit {proc.returncode}; artifacts: {', '.join(found) or 'none'}; log {work_dir / (target + '.log')}",
          flush=True)
    known = os.environ.get("SDK_FUZZ_KNOWN_FAILING", "").replace(",", " ").split()
    if status != "ok" and target in known:
        print(f"fuzz {target}: a known finding (SDK_FUZZ_KNOWN_FAILING): not failing the run", flush=True)
        return 0
    return 0 if status == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__.split("\n")[0])
    parser.add_argument("target", nargs="?", choices=TARGETS)
    parser.add_argument("--list", action="store_true", help="print the targets and exit")
    parser.add_argument("--reproduce", type=Path, metavar="FILE",
                        help="run one input (a crash artifact) in-process and show what happens")
    parser.add_argument("--seconds", type=int, default=30, help="how long to fuzz (default 30)")
    parser.add_argument("--timeout", type=int, default=20, help="seconds one input may take (a hang; default 20)")
    parser.add_argument("--rss-limit-mb", type=int, default=4096)
    parser.add_argument("--work-dir", type=Path, help="working corpus and artifacts (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(TARGETS))
        return 0
    if args.target is None:
        parser.error("a target is required (or --list)")
    if args.reproduce:
        if args.target in CPP_TARGETS:
            binary = build_cpp(args.target, ROOT / "build-fuzz")
            return subprocess.run([str(binary), str(args.reproduce)]).returncode if binary else 0
        return subprocess.run([sys.executable, "-m", "tests.fuzz.targets", args.target, "--reproduce",
                               str(args.reproduce)], cwd=ROOT).returncode
    work = args.work_dir or Path(tempfile.mkdtemp(prefix=f"fuzz_{args.target}_"))
    return run(args.target, args.seconds, work, args.timeout, args.rss_limit_mb, dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
