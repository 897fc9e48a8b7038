"""Issue 12, Python parts: concurrent JIT builds (finding 5), read-only memory (10), gradient validation
(11), typed errors for huge aranges, hook/backward results and unloadable extensions (12)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _factories, autograd
from backend_sdk.library import Library, register_autograd
from backend_sdk.utils import cpp_extension

SDK_ROOT = Path(backend_sdk.__file__).resolve().parents[1]
needs_compiler = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler")


@pytest.fixture
def fresh_warnings():
    """The read-only warnings are once per process (as PyTorch's TORCH_WARN_ONCE): start each test afresh."""
    _factories._warned_once.clear()
    yield
    _factories._warned_once.clear()


# ---- finding 5: concurrent load_inline of one name with different sources ----------------------------

_RACE_CHILD = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import backend_sdk
    from backend_sdk.utils import cpp_extension

    me, rounds, sync = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    for r in range(rounds):
        # Both processes start each round together, so their builds of the same name overlap.
        (sync / f"ready_{me}_{r}").touch()
        deadline = time.monotonic() + 120
        while not all((sync / f"ready_{p}_{r}").exists() for p in (0, 1)):
            if time.monotonic() > deadline:
                sys.exit("the other process did not start round %d" % r)
            time.sleep(0.01)
        k = 100 * (r + 1) + me  # this process's kernel of this round adds k
        cpp_extension.load_inline("race_inline", f'''
            namespace {{
            sdk::Tensor which(const sdk::Tensor& x) {{ return sdk::ops::add(x, sdk::Scalar({k})); }}
            }}
            SDK_LIBRARY(race_r{r}, m) {{ m.def("which(Tensor x) -> Tensor"); }}
            SDK_LIBRARY_IMPL(race_r{r}, CPU, m) {{ m.impl("which", &which); }}
        ''', is_python_module=False)
        got = getattr(backend_sdk.ops, f"race_r{r}").which(backend_sdk.tensor([0])).tolist()
        if got != [k]:
            sys.exit(f"process {me} round {r}: ran another kernel: expected [{k}], got {got}")
    print("ok")
""")


@needs_compiler
def test_concurrent_load_inline_with_different_sources_loads_own_code(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(_RACE_CHILD)
    sync = tmp_path / "sync"
    sync.mkdir()
    env = dict(os.environ, BACKEND_SDK_EXTENSIONS_DIR=str(tmp_path / "extensions"),
               PYTHONPATH=os.pathsep.join([str(SDK_ROOT), os.environ.get("PYTHONPATH", "")]))
    rounds = 3
    children = [subprocess.Popen([sys.executable, str(script), str(p), str(rounds), str(sync)], cwd=tmp_path,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for p in (0, 1)]
    outputs = []
    try:
        for c in children:
            out, _ = c.communicate(timeout=540)
            outputs.append((c.returncode, out))
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
    for code, out in outputs:
        assert code == 0 and out.strip().endswith("ok"), out


# ---- finding 10: read-only memory ----------------------------------------------------------------------

def test_from_numpy_of_read_only_array_warns_like_pytorch(fresh_warnings):
    array = np.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint8)
    with pytest.warns(UserWarning, match=r"^The given NumPy array is not writable, and PyTorch does not support "
                                         r"non-writable tensors\. This means writing to this tensor will result "
                                         r"in undefined behavior\."):
        t = backend_sdk.from_numpy(array)
    assert t.tolist() == [1, 2, 3, 4]
    with warnings.catch_warnings():  # once per process, as PyTorch's
        warnings.simplefilter("error")
        backend_sdk.from_numpy(array)
        backend_sdk.from_numpy(np.zeros(3))  # a writeable array never warns
        backend_sdk.tensor(array)  # a copy: no warning


def test_frombuffer_semantics_and_read_only_warning(fresh_warnings):
    data = bytearray(b"\x01\x00\x02\x00\x03\x00")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = backend_sdk.frombuffer(data, dtype=backend_sdk.int16)
    assert t.tolist() == [1, 2, 3] and t.dtype == backend_sdk.int16
    t.add_(1)  # shares memory with the bytearray
    assert data == bytearray(b"\x02\x00\x03\x00\x04\x00")
    assert backend_sdk.frombuffer(data, dtype=backend_sdk.uint8, count=2, offset=2).tolist() == [3, 0]
    with pytest.warns(UserWarning, match=r"^The given buffer is not writable, and PyTorch does not support "
                                         r"non-writable tensors\."):
        ro = backend_sdk.frombuffer(b"\x05\x06", dtype=backend_sdk.uint8, requires_grad=False)
    assert ro.tolist() == [5, 6]
    with pytest.raises(ValueError, match=r"both buffer length \(0\) and count \(-1\) must not be 0"):
        backend_sdk.frombuffer(bytearray(), dtype=backend_sdk.uint8)
    with pytest.raises(ValueError, match=r"offset \(6 bytes\) must be non-negative and no greater than buffer "
                                         r"length \(6 bytes\) minus 1"):
        backend_sdk.frombuffer(data, dtype=backend_sdk.uint8, offset=6)
    with pytest.raises(ValueError, match=r"buffer length \(5 bytes\) after offset \(1 bytes\) must be a multiple "
                                         r"of element size \(2\)"):
        backend_sdk.frombuffer(data, dtype=backend_sdk.int16, offset=1)
    with pytest.raises(ValueError, match=r"requested buffer length \(4 \* 2 bytes\) after offset \(0 bytes\) must "
                                         r"not be greater than actual buffer length \(6 bytes\)"):
        backend_sdk.frombuffer(data, dtype=backend_sdk.int16, count=4)
    with pytest.raises(RuntimeError, match="could not retrieve buffer from object"):
        backend_sdk.frombuffer([1, 2], dtype=backend_sdk.uint8)


def test_from_dlpack_of_read_only_array_warns(fresh_warnings):
    array = np.arange(4, dtype=np.float32)
    array.flags.writeable = False
    with pytest.warns(UserWarning, match=r"^The given DLPack tensor is read-only"):
        t = backend_sdk.from_dlpack(array)  # a DLPack 1.0 capsule flagged read-only
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = np.arange(3, dtype=np.int64)
        shared = backend_sdk.from_dlpack(w)  # writeable: no warning, memory shared
        shared.add_(1)
        assert w.tolist() == [1, 2, 3]
        assert backend_sdk.from_dlpack(backend_sdk.tensor([1.0, 2.0])).tolist() == [1.0, 2.0]


# ---- finding 11: gradients that do not fit their input ------------------------------------------------

def _function_returning(grad_of):
    class Fn(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.meta = (list(x.shape), x.dtype, x.device)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return grad_of(*ctx.meta)

    return Fn


def _wrong_device_pairs() -> list[tuple[str, str]]:
    pairs = [("accel:0", "cpu"), ("cpu", "accel:0")]
    import accel

    if accel.device_count() > 1:
        pairs.append(("accel:0", "accel:1"))
    return pairs


@pytest.mark.parametrize("input_device,grad_device", _wrong_device_pairs())
def test_function_gradient_on_another_device_raises(input_device, grad_device):
    Fn = _function_returning(lambda shape, dtype, _: backend_sdk.ones(shape, dtype=dtype, device=grad_device))
    x = backend_sdk.ones(3, device=input_device, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"^Function FnBackward returned an invalid gradient at index 0 - "
                                           rf"expected device {input_device} but got {grad_device}$"):
        Fn.apply(x).sum().backward()
    assert x.grad is None


def test_function_gradient_shape_checked_broadcast_reduced_dtype_cast(device):
    Bad = _function_returning(lambda shape, dtype, dev: backend_sdk.ones(4, dtype=dtype, device=dev))
    x = backend_sdk.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Function FnBackward returned an invalid gradient at index 0 - got "
                                           r"\[4\] but expected shape compatible with \[3\]$"):
        Bad.apply(x).sum().backward()
    Broadcast = _function_returning(lambda shape, dtype, dev: backend_sdk.ones(2, 3, dtype=backend_sdk.float64,
                                                                               device=dev))
    Broadcast.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0] and x.grad.dtype == backend_sdk.float32
    assert str(x.grad.device) == str(x.device)
    # A 0-dim gradient on another device is moved, as PyTorch's engine does.
    Scalar = _function_returning(lambda shape, dtype, dev: backend_sdk.tensor(1.0))
    y = backend_sdk.ones((), device=device, requires_grad=True)
    Scalar.apply(y).backward()
    assert y.grad.item() == 1.0 and str(y.grad.device) == str(y.device)


def test_function_number_and_type_of_gradients():
    class TwoInputs(autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return (g,)

    x = backend_sdk.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^function TwoInputsBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)$"):
        TwoInputs.apply(x, 3).sum().backward()

    class GradForInt(autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match=r"^function GradForIntBackward returned a gradient different than "
                                           r"None at position 2, but the corresponding forward input was not a "
                                           r"Variable$"):
        GradForInt.apply(x, 3).sum().backward()

    IntGrad = _function_returning(lambda *_: 3)
    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got int\)$"):
        IntGrad.apply(x).sum().backward()
    assert x.grad is None


def test_register_autograd_gradient_on_another_device_raises(ns):
    lib = Library(ns, "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
        op = getattr(backend_sdk.ops, ns).twice.default
        register_autograd(op, lambda ctx, g: backend_sdk.ones(list(g.shape), device="cpu"), lib=lib)
        x = backend_sdk.ones(3, device="accel:0", requires_grad=True)
        with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - expected device "
                                               r"accel:0 but got cpu"):
            op(x).sum().backward()
        assert x.grad is None
    finally:
        lib._destroy()


# ---- finding 12 (b): hooks returning something else than a tensor ------------------------------------

def test_tensor_hook_results_are_checked(device):
    def int_hook(g):
        return 5

    x = backend_sdk.ones(3, device=device, requires_grad=True)
    y = x * 2
    y.register_hook(int_hook)
    with pytest.raises(TypeError, match=r"^expected Variable, but hook returned 'int'$"):
        y.sum().backward()

    def bigger(g):
        return backend_sdk.ones(4, device=device)

    x2 = backend_sdk.ones(3, device=device, requires_grad=True)
    x2.register_hook(bigger)
    with pytest.raises(RuntimeError, match=r"^hook 'bigger' has changed the size of value$"):
        (x2 * 2).sum().backward()

    def other_type(g):
        return g.to(dtype=backend_sdk.float64)

    x3 = backend_sdk.ones(3, device=device, requires_grad=True)
    x3.register_hook(other_type)
    with pytest.raises(RuntimeError, match=r"^hook 'other_type' has changed the type of value \(was "
                                           r"\w+FloatType got \w+DoubleType\)$"):
        (x3 * 2).sum().backward()


def test_node_hook_results_are_checked():
    x = backend_sdk.ones(3, requires_grad=True)
    y = x * x

    def not_a_tuple(grad_inputs, grad_outputs):
        return 1

    handle = y.grad_fn.register_hook(not_a_tuple)
    with pytest.raises(TypeError, match=r"^expected tuple, but hook returned 'int'$"):
        y.sum().backward(retain_graph=True)
    handle.remove()

    def too_many(grad_inputs, grad_outputs):
        return grad_inputs + grad_inputs

    y.grad_fn.register_hook(too_many)
    with pytest.raises(RuntimeError, match=r"^hook 'too_many' has returned an incorrect number of values \(got "
                                           r"\d+, but expected \d+\)$"):
        y.sum().backward()


# ---- finding 12 (a): a huge arange is the device's out-of-memory error ----------------------------------

def test_huge_arange_raises_out_of_memory_of_the_device():
    with pytest.raises(backend_sdk.OutOfMemoryError, match=r"Tried to allocate 8\.00 TiB") as info:
        backend_sdk.arange(0, 2**40, device="accel:0")
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, MemoryError)
    assert "accel" in str(info.value)
    with pytest.raises(RuntimeError, match=r"DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                                           r"8796093022208 bytes") as info:
        backend_sdk.arange(0, 2**40)
    assert isinstance(info.value, backend_sdk.OutOfMemoryError)
    # Results larger than the host staging chunk are still right (filled chunk by chunk).
    n = (_factories._ARANGE_CHUNK_BYTES // 8) + 5
    big = backend_sdk.arange(3, 3 + 2 * n, 2, device="accel:0").cpu()
    assert big.shape == (n,) and big[0].item() == 3 and big[-1].item() == 3 + 2 * (n - 1)
    assert backend_sdk.arange(0.0, 1.0, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]


# ---- finding 12 (c): an extension with an unresolved symbol -------------------------------------------

@needs_compiler
def test_extension_with_undefined_symbol_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BACKEND_SDK_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    source = """
        namespace vendor { int missing_helper(int); }
        extern "C" int uses_missing(int x) { return vendor::missing_helper(x); }
    """
    with pytest.raises(cpp_extension.ExtensionLoadError) as info:
        cpp_extension.load_inline("jit_undefined_symbol", source, is_python_module=False)
    message = str(info.value)
    assert isinstance(info.value, OSError)
    assert message.startswith("Error loading extension 'jit_undefined_symbol': the library ")
    assert str(tmp_path / "extensions") in message and ".so has an undefined symbol: _ZN6vendor14missing_helper" in message
    if shutil.which("c++filt"):
        assert "(vendor::missing_helper(int))" in message


# ---- the fuzzer's chunk(empty, 2**40): views are counted before they are made ----

@pytest.mark.parametrize("call", [
    lambda t: backend_sdk.ops.aten.chunk(t, 2**40),            # one overload
    lambda t: backend_sdk.ops.aten.chunk.default(t, 2**40),    # the overload itself
    lambda t: t.chunk(2**40),                                  # the Tensor method
], ids=["packet", "overload", "method"])
def test_too_many_chunks_is_out_of_memory_naming_the_operator(call):
    # An empty dimension splits into `chunks` empty pieces (torch 2.13 too), so 2**40 pieces cannot be
    # made. torch raises MemoryError through torch.ops and RuntimeError through torch.chunk: ours is both,
    # raised before any view is made (Note [Views counted before they are made]).
    empty = backend_sdk.empty(0, 0, dtype=backend_sdk.int32)
    with pytest.raises(backend_sdk.OutOfMemoryError,
                       match=r"^aten::chunk: 1099511627776 views would need .* bytes of host memory, more than this "
                             r"machine has") as info:
        call(empty)
    assert isinstance(info.value, MemoryError) and isinstance(info.value, RuntimeError)
    assert len(empty.chunk(3)) == 3  # a count that fits still gives `chunks` empty pieces


@pytest.mark.parametrize("op, call", [
    ("unbind", lambda t: t.unbind(0)),
    ("split", lambda t: t.split(1)),
    ("split", lambda t: backend_sdk.ops.aten.split.Tensor(t, 3)),
])
def test_too_many_views_of_an_empty_tensor_is_out_of_memory(op, call):
    # empty(2**40, 0) has no elements, so it exists; one view per row of it cannot.
    tall = backend_sdk.empty(2**40, 0)
    with pytest.raises(backend_sdk.OutOfMemoryError, match=rf"^aten::{op}: \d+ views would need "):
        call(tall)
    pieces = backend_sdk.empty(5, 0).split(2)  # a count that fits
    assert [tuple(p.shape) for p in pieces] == [(2, 0), (2, 0), (1, 0)]
    assert [tuple(p.shape) for p in backend_sdk.empty(3, 0).unbind(0)] == [(0,)] * 3


# ---- the binding fuzzer: replication_pad1d of an empty (0, 0, 0) by 2**40 grew a host index vector ----

@pytest.mark.parametrize("op", ["replication_pad1d", "reflection_pad1d"])
@pytest.mark.parametrize("shape", [(0, 0, 0), (2, 0, 3), (0, 2, 0), (0, 3), (3, 0), (4,)])
def test_index_pads_refuse_empty_non_batch_dimensions(op, shape):
    # torch 2.13 (check_valid_input): only the batch dimension of a batched input may be empty.
    with pytest.raises(RuntimeError, match=r"^Expected 2D or 3D \(batch mode\) tensor with possibly 0 batch size and "
                                           r"other non-zero dimensions for input, but got: \["):
        getattr(backend_sdk.ops.aten, op)(backend_sdk.empty(*shape), [1, 1])


def test_replication_pad_of_an_empty_batch_by_a_huge_padding_is_an_empty_result():
    x = backend_sdk.ones(0, 2, 3, requires_grad=True)
    out = backend_sdk.ops.aten.replication_pad1d(x, [2**40, 2**40])  # torch: (0, 2, 2**41 + 3), no memory
    assert tuple(out.shape) == (0, 2, 2**41 + 3) and out.dtype == x.dtype
    out = backend_sdk.ops.aten.reflection_pad1d(x, [1, 2])
    assert tuple(out.shape) == (0, 2, 6) and out.grad_fn is not None  # the history is kept
    out.sum().backward()
    assert tuple(x.grad.shape) == (0, 2, 3)


def test_replication_pad_width_overflow_and_host_exhaustion_are_errors():
    x = backend_sdk.ones(1, 2, 3)
    with pytest.raises(RuntimeError, match=r"replication_pad1d: input \(3\) with padding \(4611686018427387904, "):
        backend_sdk.ops.aten.replication_pad1d(x, [2**62, 2**62])  # 3 + 2**63 overflows int64
    # The index is a tensor from the allocator: its OutOfMemoryError names the bytes (16 TiB of int64).
    with pytest.raises(backend_sdk.OutOfMemoryError, match=r"DefaultCPUAllocator: can't allocate memory: you tried to "
                                                           r"allocate 17592186044440 bytes \(CPU out of memory\)"):
        backend_sdk.ops.aten.replication_pad1d(x, [2**40, 2**40])
    meta = backend_sdk.ops.aten.replication_pad1d(backend_sdk.empty(1, 2, 3, device="meta"), [2**40, 2**40])
    assert tuple(meta.shape) == (1, 2, 2**41 + 3)
    got = backend_sdk.ops.aten.replication_pad1d(backend_sdk.arange(6.0).reshape(1, 2, 3), [2, 1])
    assert got.tolist() == [[[0.0, 0.0, 0.0, 1.0, 2.0, 2.0], [3.0, 3.0, 3.0, 4.0, 5.0, 5.0]]]
