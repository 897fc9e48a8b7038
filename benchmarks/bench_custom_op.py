"""Call overhead of a Python custom operator: backend_sdk.library.custom_op vs torch.library.custom_op.

    python benchmarks/bench_custom_op.py

Each op's kernel returns x.clone() of a 1-element tensor; the same clone called
directly is measured too, so "overhead" (op - clone) isolates the custom-op path.
PyTorch (CPU build) is measured in the same run when installed. Forward plus
backward of a small op is measured when the autograd layer exists.
"""
from __future__ import annotations

import timeit

import backend_sdk
from backend_sdk.library import custom_op

torch = None  # set by torch_case


def best_us(fn, number: int = 20000, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def sdk_case() -> dict[str, float]:
    @custom_op("bench_sdk::myclone", mutates_args=())
    def myclone(x: backend_sdk.Tensor) -> backend_sdk.Tensor:
        return x.clone()

    @custom_op("bench_sdk::myadd_", mutates_args={"x"})
    def myadd_(x: backend_sdk.Tensor) -> None:
        x.add_(1)

    x = backend_sdk.ones(1)
    out = {"op": best_us(lambda: myclone(x)), "clone": best_us(lambda: x.clone())}
    m = backend_sdk.ones(1)
    out["mutable"] = best_us(lambda: myadd_(m))
    out["add_"] = best_us(lambda: m.add_(1))
    default = backend_sdk.ops.bench_sdk.myclone.default
    out["ops.ns.op.default"] = best_us(lambda: default(x))
    if hasattr(backend_sdk.Tensor, "requires_grad"):
        @custom_op("bench_sdk::mysin", mutates_args=())
        def mysin(x: backend_sdk.Tensor) -> backend_sdk.Tensor:
            return backend_sdk.sin(x)

        mysin.register_autograd(lambda ctx, g: g * backend_sdk.cos(ctx.saved_tensors[0]),
                                setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
        y = backend_sdk.ones(16)
        y.requires_grad_(True)
        out["fwd+bwd"] = best_us(lambda: mysin(y).sum().backward(), number=2000)
    return out


def torch_case() -> dict[str, float] | None:
    global torch  # torch's infer_schema evaluates the string annotations in module globals
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)

    @torch.library.custom_op("bench_torch::myclone", mutates_args=())
    def myclone(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @torch.library.custom_op("bench_torch::mysin", mutates_args=())
    def mysin(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x)

    mysin.register_autograd(lambda ctx, g: g * torch.cos(ctx.saved_tensors[0]),
                            setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))

    @torch.library.custom_op("bench_torch::myadd_", mutates_args={"x"})
    def myadd_(x: torch.Tensor) -> None:
        x.add_(1)

    m = torch.ones(1)
    x = torch.ones(1)
    y = torch.ones(16, requires_grad=True)
    default = torch.ops.bench_torch.myclone.default
    return {
        "op": best_us(lambda: myclone(x)),
        "clone": best_us(lambda: x.clone()),
        "ops.ns.op.default": best_us(lambda: default(x)),
        "fwd+bwd": best_us(lambda: mysin(y).sum().backward(), number=2000),
        "mutable": best_us(lambda: myadd_(m)),
        "add_": best_us(lambda: m.add_(1)),
    }


def main() -> None:
    ours = sdk_case()
    theirs = torch_case()
    print(f"{'1-element tensor, us/call':34s} {'sdk':>8s} {'torch':>8s} {'sdk/torch':>10s}")
    for key, label in (("op", "custom_op(x) -> x.clone()"), ("ops.ns.op.default", "ops.ns.op.default(x)"),
                       ("clone", "x.clone() alone"), ("mutable", "mutable custom_op(x) -> x.add_(1)"),
                       ("add_", "x.add_(1) alone"), ("fwd+bwd", "sin op fwd+bwd (16 elements)")):
        a = ours.get(key)
        b = theirs.get(key) if theirs else None
        sa = f"{a:8.2f}" if a is not None else f"{'n/a':>8s}"
        sb = f"{b:8.2f}" if b is not None else f"{'n/a':>8s}"
        ratio = f"{a / b:10.2f}" if a is not None and b is not None else f"{'':>10s}"
        print(f"{label:34s} {sa} {sb} {ratio}")
    overhead = ours["op"] - ours["clone"]
    line = f"custom-op overhead (op - clone): sdk {overhead:.2f} us"
    if theirs:
        line += f", torch {theirs['op'] - theirs['clone']:.2f} us"
    print(line)
    print(f"mutable / functional custom op: sdk {ours['mutable'] / ours['op']:.2f}"
          + (f", torch {theirs['mutable'] / theirs['op']:.2f}" if theirs else ""))


if __name__ == "__main__":
    main()
