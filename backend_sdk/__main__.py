"""``python -m backend_sdk <command>``: the SDK's command line.

Commands:
  demo   show devices, tensors, a dispatch through the keys and an operator's dispatch table
"""
from __future__ import annotations

import argparse
import sys


def demo() -> int:
    """The bring-up demo (this release: the core runtime)."""
    import numpy as np

    import backend_sdk as sdk
    from backend_sdk import _C
    from backend_sdk.library import Library

    def section(title: str) -> None:
        print(f"\n=== {title} " + "=" * max(0, 60 - len(title)))

    section("devices")
    print("device types:", _C._valid_device_types())
    for spec in ("cpu", "meta", "privateuseone:1"):
        print(f"  backend_sdk.device({spec!r}) -> {sdk.device(spec)!r}")

    section("tensors")
    a = sdk.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = sdk.arange(3, dtype=sdk.float32)
    print("a =", a)
    print("b =", b)
    print("a + b =", a + b)
    print("a * 2 =", a * 2)
    print("a.t() =", a.t(), " (a view: shares storage:", a.t().untyped_storage().data_ptr() == a.untyped_storage().data_ptr(), ")")
    m = sdk.empty(2, 3, device="meta")
    print("meta tensor:", m, "stride", m.stride())
    shared = np.arange(4, dtype=np.float64)
    t = sdk.from_numpy(shared)
    t.add_(1)
    print("from_numpy shares memory: numpy array after t.add_(1) ->", shared)

    section("a dispatch through the keys")
    lib = Library("demo", "DEF")
    lib.define("scaled_add(Tensor x, Tensor y, float alpha=1.0) -> Tensor")
    trace = []

    def autograd_kernel(keyset, x, y, alpha):
        trace.append(f"AutogradCPU kernel (keys: {keyset})")
        return _C._redispatch("demo::scaled_add", keyset.keys_after("AutogradCPU"), x, y, alpha)

    def cpu_kernel(x, y, alpha):
        trace.append("CPU kernel")
        return x + y * alpha

    lib.impl("scaled_add", autograd_kernel, "Autograd", with_keyset=True)
    lib.impl("scaled_add", cpu_kernel, "CPU")
    result = sdk.ops.demo.scaled_add(a, a, alpha=0.5)
    for step in trace:
        print("  ->", step)
    print("result:", result)

    section("the computed dispatch table of demo::scaled_add")
    print(_C._dispatch_dump_table("demo::scaled_add"))
    section("and of aten::add.Tensor")
    print(_C._dispatch_dump_table("aten::add.Tensor"))
    lib._destroy()

    section("autograd: a small MLP trained on accel and on the CPU")
    _demo_mlp(sdk)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m backend_sdk", description="backend_sdk command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show devices, tensors, a dispatch through the keys and a dispatch table")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    return 2


if __name__ == "__main__":
    sys.exit(main())
