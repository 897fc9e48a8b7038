# torch.autograd.Function: the tutorial's LegendrePolynomial3 fitting sin(x) by hand-written gradient descent,
# a Function with setup_context, mark_non_differentiable, needs_input_grad, and gradcheck.
import math

import torch

device = "cuda"
dtype = torch.float


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class ScaledSort(torch.autograd.Function):
    @staticmethod
    def forward(x, scale):
        values, indices = torch.sort(x)
        return values * scale, indices

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        _, indices = output
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.zeros_like(grad_values).scatter(0, indices, grad_values * ctx.scale)
        return grad_x, None


torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)
a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

learning_rate = 1e-5
first = None
for t in range(200):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if first is None:
        first = loss.item()
    if t % 50 == 49:
        print(t, f"{loss.item():.4f}")
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
print(f"Result: y = {a.item():.4f} + {b.item():.4f} * P3({c.item():.4f} + {d.item():.4f} x)")
assert loss.item() < 0.5 * first

v = torch.tensor([3.0, 1.0, 2.0], device=device, requires_grad=True)
values, indices = ScaledSort.apply(v, 2.0)
assert not indices.requires_grad
values.sum().backward()
print("sorted:", values.tolist(), "indices:", indices.tolist(), "grad:", v.grad.tolist())

inp = torch.randn(6, dtype=torch.double, device=device, requires_grad=True)
assert torch.autograd.gradcheck(LegendrePolynomial3.apply, (inp,), eps=1e-6, atol=1e-4)
assert torch.autograd.gradcheck(lambda t: ScaledSort.apply(t, 3.0)[0], (inp,))
print("gradcheck passed")
