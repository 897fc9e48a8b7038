"""autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against hand-derived derivatives, with
PyTorch's argument handling and errors (strict, create_graph, v checks, strategy)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk.autograd import functional as AF


def t(values):
    return B.tensor(np.asarray(values, dtype=np.float64))


def close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), np.asarray(b, dtype=np.float64), rtol=1e-10, atol=1e-12)


X = [0.5, -1.0, 2.0]


def cube_sum(x):
    return (x ** 3).sum()


def test_public_names():
    assert set(AF.__all__) == {"vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"}
    assert B.autograd.functional is AF


def test_jacobian_single_input_output():
    x = t(X)
    jac = AF.jacobian(lambda x: x ** 2, x)
    close(jac, np.diag(2 * np.array(X)))
    assert not jac.requires_grad
    assert x.grad is None and not x.requires_grad  # the caller's tensor is untouched


def test_jacobian_tuples_have_output_by_input_layout_and_shapes():
    a, b = t([[1.0, 2.0], [3.0, 4.0]]), t([5.0, 6.0])

    def f(a, b):
        return a * b, (a.sum(1) * b).sum()

    jac = AF.jacobian(f, (a, b))
    assert isinstance(jac, tuple) and len(jac) == 2 and all(len(r) == 2 for r in jac)
    assert tuple(jac[0][0].shape) == (2, 2, 2, 2) and tuple(jac[0][1].shape) == (2, 2, 2)
    assert tuple(jac[1][0].shape) == (2, 2) and tuple(jac[1][1].shape) == (2,)
    # d(a*b)[i,j]/db[k] = a[i,j] * (j == k)
    expect = np.zeros((2, 2, 2))
    for i in range(2):
        for j in range(2):
            expect[i, j, j] = [[1, 2], [3, 4]][i][j]
    close(jac[0][1], expect)
    close(jac[1][1], [3.0, 7.0])  # row sums of a
    close(jac[1][0], [[5, 5], [6, 6]])  # b[i] for every a[i, j]


def test_jacobian_of_unused_input_is_zeros_or_strict_error():
    a, b = t([1.0, 2.0]), t([3.0])
    jac = AF.jacobian(lambda a, b: a * 2, (a, b))  # one output, two inputs: one entry per input
    close(jac[0], 2 * np.eye(2))
    close(jac[1], np.zeros((2, 1)))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1. "
                                           "This is not allowed in strict mode."):
        AF.jacobian(lambda a, b: a * 2, (a, b), strict=True)


def test_jacobian_strict_requires_differentiable_outputs():
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        AF.jacobian(lambda x: x.detach(), t(X), strict=True)


def test_jacobian_vectorize_matches_loop():
    a = t([[1.0, 2.0], [3.0, 4.0]])
    f = lambda a: (a.exp() * a.sum(), a.prod())  # noqa: E731
    loop = AF.jacobian(f, a)
    vec = AF.jacobian(f, a, vectorize=True)
    for l_row, v_row in zip(loop, vec):
        close(v_row, l_row.numpy())


def test_jacobian_strategy_and_vectorize_errors():
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode" or "reverse-mode"'):
        AF.jacobian(cube_sum, t(X), strategy="sideways")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(cube_sum, t(X), strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        AF.jacobian(cube_sum, t(X), strategy="forward-mode", create_graph=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        AF.jacobian(cube_sum, t(X), strict=True, vectorize=True)


def test_jacobian_create_graph_allows_differentiating_the_result():
    x = t(X).requires_grad_()
    jac = AF.jacobian(lambda x: x ** 3, x, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()  # d/dx sum(diag(3x^2)) = 6x
    close(x.grad, 6 * np.array(X))


def test_inputs_must_be_tensors():
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or a tuple of Tensors "
                                        "but the value at index 1 has type <class 'int'>."):
        AF.jacobian(lambda a, b: a, (t(X), 3))
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to vjp must be either"):
        AF.vjp(lambda x: 3, t(X), t(X))


def test_hessian_of_cube_sum_is_diagonal():
    h = AF.hessian(cube_sum, t(X))
    close(h, np.diag(6 * np.array(X)))


def test_hessian_two_inputs_blocks():
    a, b = t([1.0, 2.0]), t([3.0, -1.0])
    h = AF.hessian(lambda a, b: (a * a * b).sum(), (a, b))
    close(h[0][0], np.diag(2 * np.array([3.0, -1.0])))
    close(h[0][1], np.diag(2 * np.array([1.0, 2.0])))
    close(h[1][0], np.diag(2 * np.array([1.0, 2.0])))
    close(h[1][1], np.zeros((2, 2)))


def test_hessian_requires_single_element_output():
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hessian should contain a "
                                           "single element"):
        AF.hessian(lambda x: x ** 2, t(X))
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single Tensor"):
        AF.hessian(lambda x: (x.sum(), x.sum()), t(X))


def test_hessian_strict_linear_function_errors():
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is "
                                           "independent of the input"):
        AF.hessian(lambda x: (2 * x).sum(), t(X), strict=True)


def test_vjp_and_its_v_checks():
    x = t(X)
    v = t([1.0, 2.0, 3.0])
    out, g = AF.vjp(lambda x: x ** 2, x, v)
    close(out, np.array(X) ** 2)
    close(g, 2 * np.array(X) * np.array([1, 2, 3.0]))
    _, g = AF.vjp(cube_sum, x)  # v may be omitted for a single-element output
    close(g, 3 * np.array(X) ** 2)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns a "
                                           "single Tensor with a single element."):
        AF.vjp(lambda x: x ** 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be .*3.* but got .*2"):
        AF.vjp(lambda x: x ** 2, x, t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1."):
        AF.vjp(lambda x: (x, x), x, (v,))


def test_jvp_by_double_backward_trick():
    x = t(X)
    v = t([1.0, 0.0, -1.0])
    out, jv = AF.jvp(lambda x: x ** 3, x, v)
    close(out, np.array(X) ** 3)
    close(jv, 3 * np.array(X) ** 2 * np.array([1.0, 0.0, -1.0]))
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    out, jv = AF.jvp(lambda a, b: a * b, (a, b), (t([1.0, 0.0]), t([0.0, 1.0])))
    close(jv, [3.0, 2.0])
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the user-provided "
                                           "function is a single Tensor with a single element."):
        AF.jvp(lambda x: x, x)


def test_hvp_and_vhp_agree_with_the_hessian():
    x = t(X)
    v = t([1.0, 2.0, 3.0])
    h = np.diag(6 * np.array(X))
    out, hv = AF.hvp(cube_sum, x, v)
    close(out, sum(a ** 3 for a in X))
    close(hv, h @ np.array([1, 2, 3.0]))
    out, vh = AF.vhp(cube_sum, x, v)
    close(vh, np.array([1, 2, 3.0]) @ h)
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hvp should contain a single "
                                           "element"):
        AF.hvp(lambda x: x * 2, x, v)
    with pytest.raises(RuntimeError, match="The function given to vhp should return a single Tensor"):
        AF.vhp(lambda x: (x.sum(),), x, v)


def test_vhp_create_graph_result_is_differentiable():
    x = t(X).requires_grad_()
    v = t([1.0, 1.0, 1.0])
    _, vh = AF.vhp(cube_sum, x, v, create_graph=True)
    assert vh.requires_grad
    vh.sum().backward()  # d/dx sum(6x * v) = 6
    close(x.grad, [6.0, 6.0, 6.0])


def test_results_are_detached_without_create_graph():
    x = t(X).requires_grad_()
    out, g = AF.vjp(cube_sum, x)
    assert not out.requires_grad and not g.requires_grad
