"""nn.Module: registration, iteration, state_dict/load_state_dict (PyTorch's texts), modes, conversions,
hooks, repr; Parameter and Buffer."""
from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_parameter_is_a_leaf_tensor_sharing_storage():
    data = torch.ones(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, nn.Parameter) and isinstance(p, torch.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.data_ptr() == data.data_ptr()
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\n")
    assert type(p * 2) is torch.Tensor  # operations on a Parameter give Tensors
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.data_ptr() != p.data_ptr()


def test_buffer_marks_tensors_and_registers_on_assignment():
    m = nn.Module()
    m.b = nn.Buffer(torch.ones(2))
    m.np_b = nn.Buffer(torch.ones(1), persistent=False)
    assert "b" in m._buffers and "np_b" in m._buffers
    assert list(m.state_dict()) == ["b"]
    assert isinstance(m.b, nn.Buffer) and not isinstance(torch.ones(1), nn.Buffer)


def test_registration_and_named_iterators():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.fc1.weight"
    assert [n for n, _ in net.named_parameters(recurse=False)] == []
    assert net.get_submodule("fc1") is net.fc1
    assert net.get_parameter("fc2.weight") is net.fc2.weight
    assert net.fc2.bias is None
    shared = nn.Module()
    shared.a = shared.b = nn.Linear(2, 2)
    assert len(list(shared.parameters())) == 2
    assert [n for n, _ in shared.named_parameters(remove_duplicate=False)] == ["a.weight", "a.bias", "b.weight",
                                                                               "b.bias"]
    assert [n for n, _ in shared.named_modules()] == ["", "a"]


def test_setattr_rules_and_messages():
    m = nn.Module()
    m.w = nn.Parameter(torch.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign '.*Tensor' as parameter 'w' \(torch.nn.Parameter or None "
                                        r"expected\)"):
        m.w = torch.ones(1)
    m.w = None
    assert m.w is None and "w" in m._parameters
    m.sub = nn.Linear(1, 1)
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'sub'"):
        m.sub = 3
    with pytest.raises(KeyError, match="attribute 'sub' already exists"):
        m.register_buffer("sub", torch.ones(1))
    with pytest.raises(KeyError, match='contain'):
        m.register_buffer("a.b", torch.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'list' object to buffer 'x' \(torch Tensor or None required\)"):
        m.register_buffer("x", [1])
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'nl'"):
        p = nn.Parameter(torch.ones(1))
        q = p * 2
        q.__class__ = nn.Parameter
        m.register_parameter("nl", q)
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nothing'"):
        m.nothing

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(torch.ones(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    del m.sub
    assert "sub" not in m._modules


def test_state_dict_keys_metadata_and_keep_vars():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight"]  # own entries first, then children
    assert not sd["fc1.weight"].requires_grad
    assert sd["fc1.weight"].data_ptr() == net.fc1.weight.data_ptr()
    assert sd._metadata[""] == {"version": 1} and "fc1" in sd._metadata
    assert net.state_dict(keep_vars=True)["fc1.weight"] is net.fc1.weight
    assert list(net.state_dict(prefix="m."))[1] == "m.fc1.weight"


def test_load_state_dict_strict_messages_exactly():
    net = Net()
    sd = Net().state_dict()
    result = net.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    assert np.array_equal(net.fc1.weight.detach().numpy(), sd["fc1.weight"].numpy())
    bad = OrderedDict(sd)
    del bad["fc1.bias"]
    bad["fc3.weight"] = torch.ones(1)
    bad["fc1.extra"] = torch.ones(1)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(bad)
    assert str(e.value) == ('Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc1.bias". '
                            '\n\tUnexpected key(s) in state_dict: "fc3.weight", "fc1.extra". ')
    res = net.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["fc3.weight", "fc1.extra"]
    shape = OrderedDict(sd)
    shape["fc1.weight"] = torch.ones(5, 3)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(shape)
    assert str(e.value) == ("Error(s) in loading state_dict for Net:\n\tsize mismatch for fc1.weight: copying a param "
                            f"with shape {torch.Size([5, 3])} from checkpoint, the shape in current model is "
                            f"{torch.Size([4, 3])}.")
    with pytest.raises(RuntimeError, match="size mismatch"):
        net.load_state_dict(shape, strict=False)  # size mismatches are errors even when not strict
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        net.load_state_dict([1])


def test_load_state_dict_assign_and_cross_device(device):
    net = Net().to(device)
    sd = Net().state_dict()  # cpu tensors
    net.load_state_dict(sd)
    assert net.fc1.weight.device.type == device
    assert np.array_equal(net.fc1.weight.detach().cpu().numpy(), sd["fc1.weight"].numpy())
    net2 = Net()
    net2.load_state_dict(sd, assign=True)
    assert net2.fc1.weight.data_ptr() == sd["fc1.weight"].data_ptr() and isinstance(net2.fc1.weight, nn.Parameter)


def test_train_eval_requires_grad_zero_grad_apply():
    net = Net()
    assert net.training and net.fc1.training
    net.eval()
    assert not net.training and not net.fc1.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.train()
    net(torch.ones(2, 3)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert float(net.fc1.weight.grad.abs().sum().item()) == 0.0
    net.zero_grad()
    assert net.fc1.weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Net"]


def test_to_dtype_and_device_conversions(device):
    net = Net()
    net(torch.ones(1, 3)).sum().backward()
    net.to(device)
    assert net.fc1.weight.device.type == device and isinstance(net.fc1.weight, nn.Parameter)
    assert net.fc1.weight.grad.device.type == device
    assert net.steps.device.type == device
    net.double()
    assert net.fc1.weight.dtype == torch.float64 and net.steps.dtype == torch.int64  # integer buffers keep dtype
    net.to(torch.float32)
    assert net.fc1.weight.dtype == torch.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                        "dtype=backend_sdk.int32"):
        net.to(torch.int32)
    out = net(torch.ones(2, 3, device=device))
    assert out.device.type == device
    net.cpu()
    assert net.fc1.weight.is_cpu


def test_generated_backend_method_moves_modules():
    net = Net()
    assert net.accel() is net
    assert net.fc1.weight.device.type == "accel" and net.fc1.weight.is_accel


def test_forward_hooks_with_kwargs_always_call_and_removal():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append("post") or out + 1)
    out = lin(torch.ones(1, 2))
    assert np.allclose(out.detach().numpy(), lin.bias.detach().numpy() + 1) and calls == ["post"]
    h1.remove()
    h2.remove()
    assert not lin._forward_hooks and not lin._forward_pre_hooks

    class Kw(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    k = Kw()
    k.register_forward_pre_hook(lambda m, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    k.register_forward_hook(lambda m, args, kwargs, out: out + kwargs["scale"], with_kwargs=True)
    assert float(k(torch.ones(1)).item()) == 6.0

    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    hits = []
    b.register_forward_hook(lambda m, a, o: hits.append("always"), always_call=True)
    b.register_forward_hook(lambda m, a, o: hits.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        b(torch.ones(1))
    assert hits == ["always"]
    bad = nn.Linear(1, 1)
    bad.register_forward_pre_hook(lambda m, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        bad(torch.ones(1, 1))


def test_full_backward_hooks_see_and_replace_gradients():
    lin = nn.Linear(3, 2)
    seen = {}

    def pre(m, grad_output):
        seen["pre"] = grad_output[0].numpy().copy()
        return (grad_output[0] * 2,)

    def hook(m, grad_input, grad_output):
        seen["grad_out"] = grad_output[0].numpy().copy()
        seen["grad_in"] = grad_input[0].numpy().copy()
        return (grad_input[0] * 0 + 7,)

    lin.register_full_backward_pre_hook(pre)
    lin.register_full_backward_hook(hook)
    x = torch.ones(1, 3).requires_grad_()
    lin(x).sum().backward()
    assert np.array_equal(seen["pre"], np.ones((1, 2), np.float32))
    assert np.array_equal(seen["grad_out"], np.full((1, 2), 2, np.float32))
    expected_in = 2 * lin.weight.detach().numpy().sum(0, keepdims=True)
    assert np.allclose(seen["grad_in"], expected_in)
    assert np.array_equal(x.grad.numpy(), np.full((1, 3), 7, np.float32))
    # inputs without grad: the hook still runs, with grad_input None
    lin2 = nn.Linear(3, 2)
    got = []
    lin2.register_full_backward_hook(lambda m, gi, go: got.append(gi))
    lin2(torch.ones(1, 3)).sum().backward()
    assert got == [(None,)]


def test_repr_matches_pytorch_layout():
    net = Net()
    assert repr(net) == ("Net(\n  (fc1): Linear(in_features=3, out_features=4, bias=True)\n  (act): ReLU()\n"
                         "  (fc2): Linear(in_features=4, out_features=2, bias=False)\n)")
    nested = nn.Sequential(nn.Sequential(nn.Linear(1, 1)), nn.Dropout(0.1))
    assert repr(nested) == ("Sequential(\n  (0): Sequential(\n    (0): Linear(in_features=1, out_features=1, bias=True)"
                            "\n  )\n  (1): Dropout(p=0.1, inplace=False)\n)")
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == \
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)"


def test_missing_forward_message():
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(torch.ones(1))


def test_extra_state_round_trip():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    a, b = WithExtra(), WithExtra()
    a.value = 5
    sd = a.state_dict()
    assert sd["_extra_state"] == {"value": 5}
    b.load_state_dict(sd)
    assert b.value == 5
