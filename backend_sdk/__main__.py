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
    return 0


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
