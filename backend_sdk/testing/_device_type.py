"""Device-generic tests, as ``torch.testing._internal.common_device_type`` makes them.

A generic class ``TestFooDeviceType`` whose tests take ``(self, device)`` (and ``dtype`` under
:class:`dtypes`) is instantiated once per device type the process has: ``TestFooCPU``,
``TestFooACCEL``, ``TestFooPYACCEL``..., with tests named ``test_bar_cpu``, ``test_bar_accel_float32``.
The device types are cpu and every renamed PrivateUse backend with an attached device (so a vendor's
backend joins the SDK's own tests by being imported), filtered by ``only_for`` / ``except_for`` and by
PyTorch's environment variables ``PYTORCH_TESTING_DEVICE_ONLY_FOR`` / ``PYTORCH_TESTING_DEVICE_EXCEPT_FOR``.

The generated classes are plain classes (or subclasses of the generic class's unittest base), so they
work under pytest with fixtures and ``pytest.mark`` marks, and under unittest. A skip raises
:class:`unittest.SkipTest`, which both runners report as a skip.
"""
from __future__ import annotations

import functools
import inspect
import os
import unittest
from typing import Any, Callable, Iterable, Optional, Sequence, Union

__all__ = [
    "instantiate_device_type_tests", "get_device_type_test_bases", "DeviceTypeTestBase", "dtypes", "dtypesIfCPU",
    "onlyOn", "onlyCPU", "onlyNativeDeviceTypes", "skipIf", "skipCPUIf", "skipMeta", "deviceCountAtLeast",
    "expectedFailure", "available_device_types",
]

_NATIVE_DEVICE_TYPES = ("cpu",)


def _split_env(name: str) -> list[str]:
    return [d.strip().lower() for d in os.environ.get(name, "").split(",") if d.strip()]


def available_device_types() -> list[str]:
    """cpu, then every renamed PrivateUse backend of this process that has an attached device, in slot order.

    Unrenamed slots (``privateuseone``...) are left out: tests in the process may attach a device there
    for themselves. Meta is not a test device type here (it holds no data)."""
    from backend_sdk import _C, _runtime

    names = [_C._get_privateuse_backend_name(which) for which in (1, 2, 3)]
    renamed = [n for n in names if not n.startswith("privateuse") and _runtime.has_device(n)]
    return ["cpu"] + renamed


class DeviceTypeTestBase:
    """The base of every instantiated class: ``device_type`` and the device a test receives."""

    device_type: str = "generic_device_type"

    @classmethod
    def get_primary_device(cls) -> str:
        """The device string a test receives: ``"cpu"``, or ``"<backend>:<current device>"``."""
        if cls.device_type == "cpu":
            return "cpu"
        import backend_sdk

        module = getattr(backend_sdk, cls.device_type, None)
        current = module.current_device() if module is not None and hasattr(module, "current_device") else 0
        return f"{cls.device_type}:{current}"

    @classmethod
    def get_all_devices(cls) -> list[str]:
        """Every device of this type, the primary one first (what ``deviceCountAtLeast`` hands a test)."""
        if cls.device_type == "cpu":
            return ["cpu"]
        import backend_sdk

        module = getattr(backend_sdk, cls.device_type, None)
        count = module.device_count() if module is not None and hasattr(module, "device_count") else 1
        primary = cls.get_primary_device()
        return [primary] + [f"{cls.device_type}:{i}" for i in range(count) if f"{cls.device_type}:{i}" != primary]


def get_device_type_test_bases(except_for: Optional[Sequence[str]] = None,
                               only_for: Optional[Sequence[str]] = None) -> list[type]:
    """One :class:`DeviceTypeTestBase` subclass per device type selected (see the module docstring)."""
    types = available_device_types()
    only = [d.lower() for d in (only_for or [])] or _split_env("PYTORCH_TESTING_DEVICE_ONLY_FOR")
    excluded = [d.lower() for d in (except_for or [])] + _split_env("PYTORCH_TESTING_DEVICE_EXCEPT_FOR")
    if only:
        types = [t for t in types if t in only]
    types = [t for t in types if t not in excluded]
    return [type(f"{t.upper()}TestBase", (DeviceTypeTestBase,), {"device_type": t}) for t in types]


def _dtype_name(dtype: Any) -> str:
    return str(dtype).split(".")[-1]


def _strip_params(fn: Callable[..., Any], names: Iterable[str]) -> inspect.Signature:
    """fn's signature without the parameters the instantiation supplies, so that pytest does not look
    for fixtures named ``device`` or ``dtype``."""
    sig = inspect.signature(fn)
    drop = set(names)
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name not in drop])


def _instantiate_test(base: type, name: str, fn: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    device_type = base.device_type
    params = inspect.signature(fn).parameters
    wants_devices = hasattr(fn, "num_required_devices")
    dtype_variants: list[Any] = [None]
    dtype_table = getattr(fn, "dtypes", None)
    if dtype_table:
        dtype_variants = list(dtype_table.get(device_type, dtype_table.get("all", [None])))
    if dtype_table and "dtype" not in params:
        raise TypeError(f"{fn.__qualname__} is decorated with @dtypes but takes no 'dtype' argument")
    tests: dict[str, Callable[..., Any]] = {}
    for dtype in dtype_variants:
        suffix = f"_{device_type}"
        if dtype is not None:
            suffix += "_" + ("_".join(_dtype_name(d) for d in dtype) if isinstance(dtype, (list, tuple))
                             else _dtype_name(dtype))

        def instantiated(self: Any, *args: Any, _dtype: Any = dtype, **kwargs: Any) -> Any:
            if wants_devices:
                devices = type(self).get_all_devices()
                if len(devices) < fn.num_required_devices:  # type: ignore[attr-defined]
                    raise unittest.SkipTest(f"fewer than {fn.num_required_devices} devices detected")  # type: ignore[attr-defined]
                device_arg: Any = devices
            else:
                device_arg = type(self).get_primary_device()
            if _dtype is not None:
                kwargs["dtype"] = _dtype
            return fn(self, device_arg, *args, **kwargs)

        functools.update_wrapper(instantiated, fn)
        del instantiated.__wrapped__  # pytest must see the stripped signature, not fn's
        supplied = ["devices" if wants_devices else "device"] + (["dtype"] if dtype_table else [])
        instantiated.__signature__ = _strip_params(fn, supplied)  # type: ignore[attr-defined]
        instantiated.__name__ = name + suffix
        instantiated.__qualname__ = name + suffix
        tests[name + suffix] = instantiated
    return tests


def instantiate_device_type_tests(generic_test_class: type, scope: dict[str, Any],
                                  except_for: Optional[Sequence[str]] = None,
                                  only_for: Optional[Sequence[str]] = None,
                                  include_lazy: bool = False, allow_mps: bool = False,
                                  allow_xpu: bool = False) -> None:
    """Create ``<Name>CPU``, ``<Name>ACCEL``... in ``scope`` from ``generic_test_class`` and remove the
    generic class from ``scope`` (so its tests are not collected without a device).

    ``Name`` is the generic class's name without a trailing ``DeviceType``; ``include_lazy``,
    ``allow_mps`` and ``allow_xpu`` are accepted for PyTorch's signature (the SDK has no such devices)."""
    del include_lazy, allow_mps, allow_xpu
    if not isinstance(generic_test_class, type):
        raise TypeError(f"instantiate_device_type_tests(): expected a class, got {type(generic_test_class).__name__}")
    scope.pop(generic_test_class.__name__, None)
    stem = generic_test_class.__name__
    if stem.endswith("DeviceType"):
        stem = stem[: -len("DeviceType")]
    generic_tests = {n: v for n, v in vars(generic_test_class).items() if n.startswith("test") and callable(v)}
    for base in get_device_type_test_bases(except_for=except_for, only_for=only_for):
        class_name = stem + base.device_type.upper()
        members: dict[str, Any] = {"__module__": generic_test_class.__module__, "__qualname__": class_name}
        for name, fn in generic_tests.items():
            members[name] = None  # hides the generic test inherited from generic_test_class
            members.update(_instantiate_test(base, name, fn))
        scope[class_name] = type(class_name, (base, generic_test_class), members)


def _device_matches(device_type: str, wanted: Union[str, Sequence[str]]) -> bool:
    return device_type in ([wanted] if isinstance(wanted, str) else list(wanted))


class dtypes:
    """``@dtypes(float32, int64)``: the test runs once per dtype (a tuple entry: several dtype arguments
    in one run); ``device_type=`` limits the list to one device type, overriding the ``"all"`` list."""

    def __init__(self, *args: Any, device_type: str = "all") -> None:
        if len(args) == 1 and isinstance(args[0], (list, tuple)) and all(isinstance(a, (list, tuple)) for a in args[0]):
            args = tuple(args[0])
        self.args = args
        self.device_type = device_type

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        table = dict(getattr(fn, "dtypes", {}))
        if self.device_type in table:
            raise ValueError(f"dtypes redefinition for {self.device_type}")
        table[self.device_type] = self.args
        fn.dtypes = table  # type: ignore[attr-defined]
        return fn


class dtypesIfCPU(dtypes):
    """``@dtypes`` for the cpu device type only."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args, device_type="cpu")


def _skipping(fn: Callable[..., Any], should_skip: Callable[[Any], Optional[str]]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        reason = should_skip(self)
        if reason is not None:
            raise unittest.SkipTest(reason)
        return fn(self, *args, **kwargs)

    return _same_test(wrapper, fn)


def _same_test(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """wrapper keeps fn's signature (for pytest's fixtures) and the marks the instantiation reads."""
    del wrapper.__wrapped__  # type: ignore[attr-defined]
    wrapper.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    for attr in ("dtypes", "num_required_devices"):
        if hasattr(fn, attr):
            setattr(wrapper, attr, getattr(fn, attr))
    return wrapper


class onlyOn:
    """``@onlyOn("accel")`` / ``@onlyOn(["cpu", "accel"])``: skip on every other device type."""

    def __init__(self, device_type: Union[str, Sequence[str]]) -> None:
        self.device_type = device_type

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return _skipping(fn, lambda test: None if _device_matches(test.device_type, self.device_type)
                         else f"Only runs on {self.device_type}")


def onlyCPU(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Skip on every device type but cpu."""
    return onlyOn("cpu")(fn)


def onlyNativeDeviceTypes(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Skip on device types that are not built in (in the SDK: every vendor backend)."""
    return _skipping(fn, lambda test: None if test.device_type in _NATIVE_DEVICE_TYPES
                     else f"onlyNativeDeviceTypes: doesn't run on {test.device_type}")


class skipIf:
    """``@skipIf(condition, reason, device_type=None)``: skip when ``condition`` (a bool, or a callable of
    the test instance) holds, on ``device_type`` only when given."""

    def __init__(self, dep: Any, reason: str, device_type: Optional[str] = None) -> None:
        self.dep, self.reason, self.device_type = dep, reason, device_type

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def should_skip(test: Any) -> Optional[str]:
            if self.device_type is not None and test.device_type != self.device_type:
                return None
            hit = self.dep(test) if callable(self.dep) else self.dep
            return self.reason if hit else None

        return _skipping(fn, should_skip)


class skipCPUIf(skipIf):
    """``@skipIf`` on cpu only."""

    def __init__(self, dep: Any, reason: str) -> None:
        super().__init__(dep, reason, device_type="cpu")


def skipMeta(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Skip on the meta device type (the SDK does not instantiate one; kept for PyTorch's spelling)."""
    return skipIf(True, "test doesn't work with meta tensors", device_type="meta")(fn)


class deviceCountAtLeast:
    """The test receives ``devices`` (every device of the type, the primary first) and is skipped when
    there are fewer than ``num_required_devices``."""

    def __init__(self, num_required_devices: int) -> None:
        self.num_required_devices = num_required_devices

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if hasattr(fn, "num_required_devices"):
            raise ValueError(f"deviceCountAtLeast redefinition for {fn.__name__}")
        fn.num_required_devices = self.num_required_devices  # type: ignore[attr-defined]
        return fn


class expectedFailure:
    """``@expectedFailure("accel")``: on that device type the test must fail (an unexpected pass fails)."""

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(test: Any, *args: Any, **kwargs: Any) -> Any:
            if test.device_type != self.device_type:
                return fn(test, *args, **kwargs)
            try:
                fn(test, *args, **kwargs)
            except unittest.SkipTest:
                raise
            except Exception:
                raise unittest.SkipTest(f"expected failure on {self.device_type}")
            raise AssertionError(f"unexpected success: {fn.__name__} passed on {self.device_type}")

        return _same_test(wrapper, fn)
