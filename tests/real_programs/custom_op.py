# The custom-operator tutorial: torch.library.custom_op wrapping code PyTorch cannot see into (numpy),
# register_fake for shape propagation, register_autograd for the gradient, a mutating op, opcheck.
import numpy as np
import torch
from torch import Tensor

device = "cuda"


@torch.library.custom_op("mylib::numpy_sin", mutates_args=())
def numpy_sin(x: Tensor) -> Tensor:
    x_np = x.cpu().numpy()
    y_np = np.sin(x_np)
    return torch.from_numpy(y_np).to(device=x.device)


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos()


numpy_sin.register_autograd(backward, setup_context=setup_context)


@torch.library.custom_op("mylib::numpy_sin_out", mutates_args={"out"})
def numpy_sin_out(x: Tensor, out: Tensor) -> None:
    assert x.device == out.device
    out.copy_(torch.from_numpy(np.sin(x.cpu().numpy())))


@torch.library.custom_op("mylib::scaled_add", mutates_args=())
def scaled_add(a: Tensor, b: Tensor, alpha: float) -> Tensor:
    return a + alpha * b


@scaled_add.register_fake
def _(a, b, alpha):
    torch._check(a.shape == b.shape)
    return torch.empty_like(a)


def scaled_add_backward(ctx, grad):
    return grad, grad * ctx.alpha, None


def scaled_add_setup(ctx, inputs, output):
    ctx.alpha = inputs[2]


scaled_add.register_autograd(scaled_add_backward, setup_context=scaled_add_setup)

torch.manual_seed(0)
x = torch.randn(3, 4, device=device, requires_grad=True)
y = numpy_sin(x)
y.sum().backward()
assert torch.allclose(y, x.sin())
assert torch.allclose(x.grad, x.cos())

out = torch.empty(3, 4, device=device)
numpy_sin_out(x.detach(), out)
assert torch.allclose(out, x.detach().sin())

a = torch.randn(5, device=device, requires_grad=True)
b = torch.randn(5, device=device, requires_grad=True)
scaled_add(a, b, 0.5).pow(2).sum().backward()
assert torch.allclose(b.grad, a.grad * 0.5)
print("op:", torch.ops.mylib.numpy_sin.default._schema)

for fn, args in [
    (numpy_sin, (torch.randn(3, device=device, requires_grad=True),)),
    (numpy_sin, (torch.randn(2, 3, device=device),)),
    (numpy_sin_out, (torch.randn(3, device=device), torch.empty(3, device=device))),
    (scaled_add, (torch.randn(4, device=device, requires_grad=True), torch.randn(4, device=device), 2.0)),
]:
    torch.library.opcheck(fn, args)
print("opcheck passed for", ["numpy_sin", "numpy_sin_out", "scaled_add"])
print("values:", [round(v, 6) for v in y[0].tolist()])
