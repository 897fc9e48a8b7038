"""``python -m backend_sdk <command>``: the SDK's command line.

Commands:
  demo         the accel sample backend on the simulated device: devices, tensors, streams, events,
               memory statistics, results checked against the CPU, a nanoGPT-shaped model trained on
               accel and on the CPU, a profile and its Chrome trace
  conformance  NAME: runs the conformance suite on a backend and prints its operator coverage table
  new          NAME [--python-only | --stable] [--dir PATH]: writes a vendor backend project PATH/NAME/
"""
from __future__ import annotations

import argparse
import sys


def demo() -> int:
    """The bring-up demo: the accel sample backend on the simulated device."""
    import os
    import tempfile
    import time

    import numpy as np

    import accel
    import backend_sdk as sdk
    from backend_sdk import _C
    from backend_sdk.profiler import ProfilerActivity, profile, record_function

    scope: list[record_function] = []

    def section(title: str) -> None:
        # Each section is a record_function scope of the profile, so the trace shows the demo's structure.
        if scope:
            scope.pop().__exit__(None, None, None)
        print(f"\n=== {title} " + "=" * max(0, 64 - len(title)))
        scope.append(record_function(f"demo: {title}"))
        scope[-1].__enter__()

    started = time.perf_counter()
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], profile_memory=True)
    prof.start()

    section("simulated devices")
    print(f"accel.is_available() = {accel.is_available()}, device_count() = {accel.device_count()}")
    for i in range(accel.device_count()):
        p = accel.get_device_properties(i)
        free, total = accel.mem_get_info(i)
        print(f"  accel:{i}  {p.name}, {total / 2**20:.0f} MiB ({free / 2**20:.0f} MiB free), stream priorities "
              f"{p.stream_priority_greatest}..{p.stream_priority_least}")

    section("tensors on accel:0 and accel:1")
    rng = np.random.default_rng(0)
    a_host = sdk.from_numpy(rng.standard_normal((256, 256)).astype(np.float32))
    b_host = sdk.from_numpy(rng.standard_normal((256, 256)).astype(np.float32))
    a0, b0 = a_host.to("accel:0"), b_host.accel(0)
    a1 = a_host.to("accel:1", non_blocking=True)
    print("a0:", a0.shape, a0.dtype, a0.device, "| a1:", a1.device, "| a0.is_accel =", a0.is_accel)
    print("(a0 + 1)[:2, :4] =", (a0 + 1)[:2, :4])

    section("two streams ordered with events, timed")
    producer, consumer = accel.Stream(0), accel.Stream(0, priority=-1)
    start, done = accel.Event(enable_timing=True), accel.Event(enable_timing=True)
    with accel.stream(producer):
        start.record()
        c0 = (a0 @ b0).relu()               # queued on the producer stream; returns at once
        done.record()
    consumer.wait_event(done)               # the consumer's work waits for the producer's
    with accel.stream(consumer):
        total = c0.sum()
        c0.record_stream(consumer) if hasattr(c0, "record_stream") else sdk._runtime.record_stream(c0, consumer)
    done.synchronize()
    print(f"matmul + relu on the producer stream: {start.elapsed_time(done):.3f} ms (event timing)")
    expected = np.maximum(a_host.numpy() @ b_host.numpy(), 0)
    print(f"sum on the consumer stream: {total.item():.4f} (CPU: {expected.sum():.4f})")

    section("results checked against the CPU")
    checks = {
        "matmul + relu": (c0, expected),
        "softmax(dim=1)": (sdk.softmax(a1, 1), sdk.softmax(a_host, 1).numpy()),
        "cross-device copy": ((a1 * 2).to("accel:0"), a_host.numpy() * 2),
        "mean over dim 0": (a0.mean(0), a_host.numpy().mean(0)),
    }
    for name, (got, want) in checks.items():
        err = float(np.max(np.abs(got.cpu().numpy() - want)))
        print(f"  {name:<18} max |accel - cpu| = {err:.2e}  {'ok' if err < 1e-3 else 'MISMATCH'}")
        if err >= 1e-3:
            while scope:
                scope.pop().__exit__(None, None, None)
            prof.stop()
            return 1

    section("memory (caching allocator)")
    print(f"memory_allocated(0) = {accel.memory_allocated(0)} bytes, memory_reserved(0) = {accel.memory_reserved(0)}")
    del a0, b0, c0, total, checks
    print(f"after freeing: memory_allocated(0) = {accel.memory_allocated(0)}, reserved (cached) = "
          f"{accel.memory_reserved(0)}")
    print(accel.memory_summary(0))

    section("dispatch table of aten::add.Tensor (accel kernels registered by the sample)")
    table = _C._dispatch_dump_table("aten::add.Tensor")
    print("\n".join(line for line in table.splitlines() if "Accel" in line or "CPU" in line.split(":")[0]))

    section("autograd: a small MLP trained on accel and on the CPU")
    _demo_mlp(sdk)

    section("models: a nanoGPT-shaped GPT trained on accel and on the CPU")
    if not _demo_gpt():
        while scope:
            scope.pop().__exit__(None, None, None)
        prof.stop()
        return 1

    accel.synchronize(0)
    accel.synchronize(1)
    scope.pop().__exit__(None, None, None)
    prof.stop()
    path = os.path.join(tempfile.gettempdir(), "backend_sdk_demo_trace.json")
    prof.export_chrome_trace(path)
    section("profile (backend_sdk.profiler)")
    scope.pop().__exit__(None, None, None)
    events = prof.events()
    kernels = sum(len(e.kernels) for e in events)
    print(f"{len(events)} operator calls and scopes on the host, {kernels} kernels and copies on the devices")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=6), end="")
    print(f"Chrome trace (host and device tracks, flow arrows from operators to kernels) written to {path}\n"
          f"(open it in chrome://tracing or https://ui.perfetto.dev)")
    print(f"demo took {time.perf_counter() - started:.2f} s")
    section("next")
    print("Start your own backend: python -m backend_sdk new NAME (a project with a device, kernels, tests and "
          "the conformance suite; its README walks from the first kernel to conformance)")
    return 0


def _demo_mlp(sdk) -> None:
    """Trains a 4-16-3 MLP (matmul, add, relu, cross_entropy) with autograd on each device; losses must match."""
    import numpy as np

    devices = ["cpu"]
    try:
        import accel  # noqa: F401  (the sample backend: renames PrivateUse1 to 'accel')

        devices.append("accel")
    except ImportError as e:
        print(f"  (accel sample backend not importable: {e}; training on the CPU only)")
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((3, 4)) * 2
    labels = rng.integers(0, 3, size=64)
    data = centers[labels] + rng.standard_normal((64, 4)) * 0.5  # synthetic, three separable clusters
    init = [rng.standard_normal((4, 16)) * 0.5, np.zeros(16), rng.standard_normal((16, 3)) * 0.5, np.zeros(3)]
    losses = {}
    for device in devices:
        params = [sdk.tensor(p, dtype=sdk.float32, device=device, requires_grad=True) for p in init]
        x = sdk.tensor(data, dtype=sdk.float32, device=device)
        y = sdk.tensor(labels, device=device)
        history = []
        for step in range(20):
            w1, b1, w2, b2 = params
            logits = (x.matmul(w1) + b1).relu().matmul(w2) + b2
            loss = sdk.ops.aten.cross_entropy_loss(logits, y)
            loss.backward()
            with sdk.no_grad():
                for p in params:
                    p -= 0.5 * p.grad
                    p.grad = None
            history.append(loss.item())
        losses[device] = history
        print(f"  {device:6s} loss: " + " ".join(f"{v:.4f}" for v in history[::4]) + f" ... {history[-1]:.4f}"
              f"  (grad_fn of the last loss: {loss.grad_fn.name()})")
    if "accel" in losses:
        diff = max(abs(a - b) for a, b in zip(losses["cpu"], losses["accel"]))
        print(f"  largest |cpu - accel| loss difference over 20 steps: {diff:.2e}"
              f" -> {'match' if diff < 1e-4 else 'MISMATCH'}")


def _demo_gpt(steps: int = 3) -> bool:
    """Trains the acceptance GPT (backend_sdk.testing.models: 4 layers, 4 heads, 128 wide, context 64, dropout,
    AdamW, gradient clipping) a few steps on accel and on the CPU from one seed, comparing every activation,
    gradient and parameter at every step; prints the losses and the first divergence. False on a divergence."""
    import time
    import warnings

    from backend_sdk.testing import models

    run = models.make_gpt_run("cpu", batch_size=4)
    n = sum(p.numel() for p in run.model.parameters())
    print(f"  GPT: {models.GPT_CONFIG.n_layer} layers, {models.GPT_CONFIG.n_head} heads, {models.GPT_CONFIG.n_embd}-wide,"
          f" context {models.GPT_CONFIG.block_size}, {n / 1e6:.2f}M parameters; AdamW, clip_grad_norm_(1.0), "
          f"dropout {models.GPT_CONFIG.dropout}")
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CPU fallback's one-time warnings: the section says what runs where
        divergence, losses = models.compare_training(models.make_gpt_run, "accel", steps, atol=0.0, rtol=0.0,
                                                     batch_size=4)
    for device, values in losses.items():
        print(f"  {device:6s} loss: " + " ".join(f"{v:.6f}" for v in values))
    print(f"  {steps} steps on each device in {time.perf_counter() - started:.1f} s, every activation, loss, "
          f"gradient and updated parameter compared at every step")
    if divergence is None:
        print("  cpu and accel agree bit for bit (accel runs the CPU's kernels, simulated on its streams or through "
              "the CPU fallback)")
        return True
    print(f"  MISMATCH: {divergence}")
    return False


def conformance(argv: list[str]) -> int:
    """``python -m backend_sdk conformance NAME [--area AREA ...] [PYTEST ARGS]``: runs the conformance
    suite (backend_sdk.testing.conformance) on backend NAME and prints the coverage table (operators
    native / composite / served by the fallback / missing) and the failures. Exit code 0 iff every
    selected check passed."""
    from backend_sdk.testing import conformance as suite

    parser = argparse.ArgumentParser(prog="python -m backend_sdk conformance",
                                     description="run the conformance suite on a backend")
    parser.add_argument("name", help="the backend (and its Python package), e.g. accel")
    parser.add_argument("--area", action="append", choices=list(suite.AREAS),
                        help="an area to run (repeatable; default all)")
    parser.add_argument("--all-dtypes", action="store_true", help="operators: check every dtype")
    args, extra = parser.parse_known_args(argv)  # anything else goes to pytest (-k, -x, -v, ...)
    extra = [a for a in extra if a != "--"]
    if args.all_dtypes:
        extra += ["--conformance-dtypes", "all"]
    return suite.run(args.name, args.area, extra)


def new_project(name: str, directory: str | None, python_only: bool, stable: bool = False) -> int:
    """``new``: writes the project of backend ``name`` (backend_sdk/_scaffold); 1 with a message on bad input."""
    from backend_sdk._scaffold import create_project

    try:
        path = create_project(name, directory, python_only=python_only, stable=stable)
    except (ValueError, FileExistsError) as e:
        print(f"python -m backend_sdk new: error: {e}", file=sys.stderr)
        return 1
    kind = "pure-Python " if python_only else "stable-ABI " if stable else ""
    print(f"Wrote the {kind}backend project {path}")
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        print(f"  {f.relative_to(path.parent)}")
    print(f"Next: pip install {path} && pytest {path / 'tests'}")
    return 0


def _add_new_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("new", help="write a vendor backend project (pyproject, CMake, device, kernels, tests)")
    p.add_argument("name", help="the backend's device name and Python package, e.g. npu")
    p.add_argument("--python-only", action="store_true", help="no C++: the device and kernels in Python")
    p.add_argument("--stable", action="store_true",
                   help="kernels on the ABI-stable surface only: the library links nothing of libbackend_sdk "
                        "but its C shim, so it survives SDK upgrades of the same major version")
    p.add_argument("--dir", default=None, help="parent directory of the project (default: the current one)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m backend_sdk", description="backend_sdk command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="the accel backend on the simulated device, checked against the CPU")
    sub.add_parser("conformance", help="the conformance suite on a backend, with its coverage table",
                   add_help=False)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["conformance"]:
        return conformance(argv[1:])
    _add_new_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    if args.command == "new":
        return new_project(args.name, args.dir, args.python_only, args.stable)
    return 2


if __name__ == "__main__":
    sys.exit(main())
