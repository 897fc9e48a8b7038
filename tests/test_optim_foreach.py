"""The multi-tensor (_foreach_*) and fused optimizer operators (csrc/backend_sdk/ops/Foreach.cpp) and the
optimizers' foreach=/fused= paths: each overload equals its per-tensor operator on cpu, accel and meta; the
optimizers' foreach path equals the per-parameter one bit for bit and the fused path to rounding; PyTorch's
defaults and errors; an optimizer step on accel is a handful of launches."""
from __future__ import annotations

import json

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import optim
from backend_sdk.optim.optimizer import _default_to_fused_or_foreach

A = torch.ops.aten


def _lists(device, n=3, seed=0, low=0.5, high=2.0):
    rng = np.random.default_rng(seed)
    shapes = [(3,), (2, 4), ()][:n]
    return [torch.tensor(rng.uniform(low, high, s), dtype=torch.float32, device=device) for s in shapes]


def _np(ts):
    return [t.cpu().numpy() for t in ts]


# (foreach overload, per-tensor function of (self_i, i) given the lists) for the binary families
def _cases(a, b, c):
    s = [0.5, 2.0, -1.5]
    return [
        ("_foreach_add.Scalar", (a, 2.5), lambda i: a[i] + 2.5),
        ("_foreach_add.List", (a, b), lambda i: a[i] + b[i]),
        ("_foreach_sub.ScalarList", (a, s), lambda i: a[i] - s[i]),
        ("_foreach_mul.Tensor", (a, torch.tensor(3.0, device=a[0].device)), lambda i: a[i] * 3.0),
        ("_foreach_div.List", (a, b), lambda i: a[i] / b[i]),
        ("_foreach_addcmul.Scalar", (a, b, c, 0.5), lambda i: a[i] + 0.5 * b[i] * c[i]),
        ("_foreach_addcdiv.ScalarList", (a, b, c, s), lambda i: a[i] + s[i] * (b[i] / c[i])),
        ("_foreach_addcdiv.Tensor", (a, b, c, torch.tensor(s, device=a[0].device)),
         lambda i: a[i] + s[i] * (b[i] / c[i])),
        ("_foreach_lerp.Scalar", (a, b, 0.25), lambda i: torch.lerp(a[i], b[i], 0.25)),
        ("_foreach_lerp.List", (a, b, c), lambda i: torch.lerp(a[i], b[i], c[i])),
        ("_foreach_sqrt", (a,), lambda i: a[i].sqrt()),
        ("_foreach_neg", (a,), lambda i: -a[i]),
        ("_foreach_reciprocal", (a,), lambda i: a[i].reciprocal()),
    ]


def _call(name, args, inplace):
    packet, _, overload = name.partition(".")
    fn = getattr(A, packet + ("_" if inplace else ""))
    return getattr(fn, overload)(*args) if overload else fn(*args)


@pytest.mark.parametrize("inplace", [False, True])
def test_foreach_overloads_equal_the_per_tensor_operators(device, inplace) -> None:
    a, b, c = _lists(device, seed=1), _lists(device, seed=2), _lists(device, seed=3, low=0.1, high=0.9)
    for name, args, ref in _cases(a, b, c):
        want = [ref(i).cpu().numpy() for i in range(len(a))]
        if inplace:
            target = [t.clone() for t in a]
            ret = _call(name, (target,) + tuple(args[1:]), True)
            assert ret is None, name
            got = _np(target)
        else:
            before = _np(a)
            got = _np(_call(name, args, False))
            for x, y in zip(_np(a), before):
                np.testing.assert_array_equal(x, y)  # functional forms leave their inputs alone
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} inplace={inplace}")


def test_zero_copy_maximum_norm(device) -> None:
    a, b = _lists(device, seed=4), _lists(device, seed=5)
    A._foreach_maximum_(a, b)
    for x, y, z in zip(_np(a), _np(_lists(device, seed=4)), _np(b)):
        np.testing.assert_array_equal(x, np.maximum(y, z))
    norms = A._foreach_norm(b)
    np.testing.assert_allclose([n.item() for n in norms], [np.linalg.norm(x) for x in _np(b)], rtol=1e-6)
    A._foreach_copy_(a, b)
    for x, y in zip(_np(a), _np(b)):
        np.testing.assert_array_equal(x, y)
    A._foreach_zero_(a)
    assert all(not x.any() for x in _np(a))


def test_meta_runs_size_results() -> None:
    a = [torch.empty(3, device="meta"), torch.empty(2, 4, device="meta")]
    out = A._foreach_add(a, a, alpha=2)
    assert [tuple(t.shape) for t in out] == [(3,), (2, 4)] and all(t.is_meta for t in out)
    A._foreach_addcdiv_(a, a, a, [1.0, 2.0])
    A._fused_adamw_(a, a, [t.clone() for t in a], [t.clone() for t in a], [], [torch.empty((), device="meta")] * 2,
                    lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)


def test_bad_lists(device) -> None:
    a = _lists(device)
    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor."):
        A._foreach_add_([], 1.0)
    with pytest.raises(RuntimeError, match="Tensor lists must have the same number of tensors, got 3 and 2"):
        A._foreach_add_(a, a[:2])
    with pytest.raises(RuntimeError, match="Tensor list must have same number of elements as scalar list"):
        A._foreach_mul_(a, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad must match its parameter's shape"):
        A._fused_adamw_(a, a[::-1], a, a, [], [torch.tensor(1.0, device=device)] * 3, lr=0.1, beta1=0.9,
                        beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    ints = [torch.ones(3, dtype=torch.int64, device=device)]
    with pytest.raises(TypeError, match="fused optimizer kernels support float32 and float64"):
        A._fused_sgd_(ints, ints, [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False,
                      maximize=False, is_first_step=False)


CONFIGS = [
    (optim.Adam, dict(lr=0.1, weight_decay=0.1)), (optim.Adam, dict(lr=0.05, amsgrad=True, maximize=True)),
    (optim.AdamW, dict(lr=0.1)), (optim.AdamW, dict(lr=0.1, amsgrad=True, weight_decay=0.3)),
    (optim.SGD, dict(lr=0.1)), (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.1, maximize=True)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5)), (optim.RMSprop, dict(lr=0.01, weight_decay=0.1)),
]


def _train(device, cls, kw, impl, steps=4):
    torch.manual_seed(0)
    params = [torch.randn(5, 3).to(device).requires_grad_(), torch.randn(4).to(device).requires_grad_(),
              torch.randn(2, 2, dtype=torch.float64).to(device).requires_grad_()]  # two dtype groups
    opt = cls(params, **kw, **impl)
    grads = []
    for it in range(steps):
        for p in params:
            p.grad = (p.detach() * 0.3 + 0.1 * it - 0.05).clone()
        grads.append(_np([p.grad for p in params]))
        opt.step()
        # the .grad tensors are never written by a step
        for g, p in zip(grads[-1], params):
            np.testing.assert_array_equal(g, p.grad.cpu().numpy())
    return _np([p.detach() for p in params]), opt


@pytest.mark.parametrize("cls,kw", CONFIGS, ids=lambda v: getattr(v, "__name__", None) or str(sorted(v.items())))
def test_foreach_and_fused_steps_equal_the_per_parameter_step(device, cls, kw) -> None:
    base, _ = _train(device, cls, kw, dict(foreach=False))
    fe, _ = _train(device, cls, kw, dict(foreach=True))
    for x, y in zip(fe, base):
        np.testing.assert_array_equal(x, y)  # same operators, same order: bit for bit
    if cls is not optim.RMSprop:
        fu, opt = _train(device, cls, kw, dict(fused=True))
        for x, y in zip(fu, base):
            np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-7)  # one pass: rounding of the fused formula
        if cls is not optim.SGD:
            step = opt.state[opt.param_groups[0]["params"][0]]["step"]
            assert step.device.type == device and step.item() == 4.0  # fused keeps steps on the device


def test_defaults_and_constructor_errors(device) -> None:
    p = [torch.zeros(2, device=device).requires_grad_()]
    fused, foreach = _default_to_fused_or_foreach(p, differentiable=False)
    assert not fused and foreach == (device != "cpu")  # foreach on device backends, per-parameter on the CPU
    assert _default_to_fused_or_foreach(p, differentiable=True) == (False, False)
    assert _default_to_fused_or_foreach(p, False, use_fused=True) == (True, False)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        optim.AdamW(p, foreach=True, fused=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        optim.SGD(p, lr=0.1, fused=True, differentiable=True)


def _kernel_launches(fn) -> int:
    import device_sim

    torch.accelerator.synchronize()
    device_sim.start_trace()
    fn()
    torch.accelerator.synchronize()
    device_sim.stop_trace()
    import os
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        device_sim.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)
    finally:
        os.unlink(path)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return sum(1 for e in events if e.get("cat") == "kernel")


def launches_per_step(cls, impl: dict, n_params: int = 20, **kw) -> int:
    """Kernel launches of one optimizer step on accel over n_params parameters (after a warm-up step)."""
    torch.manual_seed(0)
    params = [torch.randn(8, 8).to("accel").requires_grad_() for _ in range(n_params)]
    for p in params:
        p.grad = torch.ones(8, 8, device="accel")
    opt = cls(params, **kw, **impl)
    opt.step()
    return _kernel_launches(opt.step)


def test_accel_step_is_a_handful_of_launches() -> None:
    pytest.importorskip("device_sim")
    pytest.importorskip("accel")
    per_param = launches_per_step(optim.AdamW, dict(foreach=False), lr=0.1)
    default = launches_per_step(optim.AdamW, {}, lr=0.1)  # foreach by default on accel
    fused = launches_per_step(optim.AdamW, dict(fused=True), lr=0.1)
    sgd = launches_per_step(optim.SGD, {}, lr=0.1, momentum=0.9)
    print(f"AdamW step over 20 parameters on accel: per-parameter {per_param}, foreach {default}, fused {fused} "
          f"launches; SGD(momentum) foreach {sgd}")
    assert per_param >= 20 * 6
    assert default <= 10 and fused <= 3 and sgd <= 4
