"""sdk::ops::device::register_contract_kernels(m, local_copy), the C++ glue that registers a device
backend's contract-backed kernels (ops/DeviceOps.h; issue 17, "Glue the SDK provides"). The accel sample
and the C++ scaffold register theirs with it, so their tests cover the kernels; here: its bad inputs."""
from __future__ import annotations

import os
import shutil
import textwrap

import pytest

from backend_sdk.utils import cpp_extension

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler")


def build(tmp_path, monkeypatch, name: str, key: str, local_copy: str) -> None:
    monkeypatch.setenv("BACKEND_SDK_EXTENSIONS_DIR", str(tmp_path / "ext"))
    src = tmp_path / f"{name}.cpp"
    src.write_text(textwrap.dedent(f"""
        #include <backend_sdk/ops/DeviceOps.h>
        namespace {{
        void my_local_copy(const sdk::Tensor& dst, const sdk::Tensor& src) {{}}
        }}
        SDK_LIBRARY_IMPL(aten, {key}, m) {{ sdk::ops::device::register_contract_kernels(m, {local_copy}); }}
    """))
    cpp_extension.load(name, [str(src)], is_python_module=False)


def test_a_library_of_no_device_backend_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"register_contract_kernels: expected the library of a device backend "
                                        r"\(SDK_LIBRARY_IMPL\(aten, PrivateUse1, m\)\), got one for CPU"):
        build(tmp_path, monkeypatch, "contract_on_cpu", "CPU", "&my_local_copy")


def test_a_null_local_copy_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="register_contract_kernels: local_copy must not be null"):
        build(tmp_path, monkeypatch, "contract_null_copy", "PrivateUse3", "nullptr")
