"""How much glue the C++ scaffold makes a vendor write (issue 17, "Targets"): at most 60 lines in all
for ``python -m backend_sdk new NAME``'s C++ code, and at most 5 lines beyond its arithmetic for one
more native kernel of an existing aten operator. The simulated-device helpers that used to be copied
into the scaffold and samples/accel_sim (launch, host alias, the simulator's contract table) live in
device_sim's public header, device_sim/include/device_sim.hpp; no copy of them is left.

Note [Scaffold glue count]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Glue is every line of the generated ``csrc/*.cpp`` that is neither a kernel's arithmetic nor a
driver call. ``glue_lines`` counts each line except:
 1. blank lines and comments (``//`` lines, ``/* ... */`` blocks);
 2. driver calls: a code line marked ``REAL DRIVER CALL GOES HERE`` / ``REAL LIBRARY CALL GOES HERE``
    in its trailing comment (the line bring-up replaces), and the device contract's slot functions
    ``dev_<slot>`` / ``ccl_<fn>`` whole (Device.cpp: each is one driver call with its status mapping,
    from its signature to its closing brace);
 3. arithmetic: the lines inside a multi-line kernel body launched with ``device_sim::launch(..., [..] {``
    (what runs on the device); the launch line and its closing ``});`` are glue.
Everything else is glue: includes, namespaces, macros, the contract's table and entry point, the
extension struct, every kernel's signature, checks, allocation and return, the registration block.
A one-line elementwise kernel (``return device_sim::elementwise<float>("neg_f32", [](float x) {
return -x; }, self);``) counts as glue in full, arithmetic included.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend_sdk._scaffold import create_project

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ("REAL DRIVER CALL GOES HERE", "REAL LIBRARY CALL GOES HERE")
SLOT_FUNCTION = re.compile(r"^(?:sdk_status|const char\*) (?:dev|ccl)_\w+\(")
LAUNCH_BODY = re.compile(r"device_sim::launch\(.*\{\s*$")
GLUE_TARGET = 60
KERNEL_TARGET = 5


def glue_lines(text: str) -> list[str]:
    """The glue lines of one C++ file (Note [Scaffold glue count])."""
    glue: list[str] = []
    in_block_comment = in_slot = False
    arithmetic_depth = 0
    for raw in text.splitlines():
        line = raw.strip()
        if in_block_comment:
            in_block_comment = "*/" not in line
            continue
        if line.startswith("/*"):
            in_block_comment = "*/" not in line
            continue
        if not line or line.startswith("//"):
            continue
        if in_slot:  # rule 2: a slot function, up to its closing brace
            in_slot = not raw.startswith("}")
            continue
        if SLOT_FUNCTION.match(raw):
            in_slot = not raw.partition("//")[0].rstrip().endswith("}")
            continue
        if arithmetic_depth:  # rule 3: inside a launched kernel's body
            arithmetic_depth += line.count("{") - line.count("}")
            if arithmetic_depth > 0:
                continue
            arithmetic_depth = 0
            glue.append(line)  # the closing "});"
            continue
        code, _, comment = raw.partition("//")
        if any(m in comment for m in MARKERS):  # rule 2: a marked driver call
            continue
        if LAUNCH_BODY.search(code):
            arithmetic_depth = 1
        glue.append(line)
    return glue


def project_glue(root: Path) -> dict[str, list[str]]:
    return {p.name: glue_lines(p.read_text()) for p in sorted((root / "csrc").glob("*.cpp"))}


def test_the_count_follows_its_rule():
    text = "\n".join([
        "// a comment", "", "/* a block", "   comment */", "#include <x.h>",
        "sdk_status dev_malloc(void* ctx, int32_t d, void** p, size_t n) {",
        "  // REAL DRIVER CALL GOES HERE", "  return SIM(ctx, malloc, d, p, n);", "}",
        "sdk_status dev_free(void* ctx, int32_t d, void* p) { return SIM(ctx, free, d, p); }  // REAL DRIVER CALL GOES HERE",
        "void copy(const Tensor& d) {", "  device_sim::launch(d.device(), \"k\", [=] {", "    for (;;) {",
        "      x += 1;", "    }", "  });", "  other();  // REAL DRIVER CALL GOES HERE", "}",
    ])
    assert glue_lines(text) == ["#include <x.h>", "void copy(const Tensor& d) {",
                                "device_sim::launch(d.device(), \"k\", [=] {", "});", "}"]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return create_project("tcglue", tmp_path_factory.mktemp("glue"))


def test_the_cpp_scaffold_has_at_most_60_lines_of_glue(project):
    glue = project_glue(project)
    total = sum(len(lines) for lines in glue.values())
    report = "\n".join(f"{name}: {line}" for name, lines in glue.items() for line in lines)
    assert total <= GLUE_TARGET, f"{total} lines of glue (target {GLUE_TARGET}):\n{report}"
    # The count sees both files and the parts that are glue (so a broken rule cannot pass by counting nothing).
    assert set(glue) == {"Device.cpp", "Kernels.cpp"}
    assert any("SDK_LIBRARY_IMPL(aten, PrivateUse1, m)" in line for line in glue["Kernels.cpp"])
    assert any("sdk_device_entry" in line for line in glue["Device.cpp"])
    assert not any(line.startswith(("sdk_status dev_", "sdk_status ccl_")) for line in glue["Device.cpp"])


def test_a_new_kernel_is_at_most_5_lines_beyond_its_arithmetic(project, tmp_path):
    """The README's "Add a kernel" example, added as the README says (the kernel and its m.impl line)."""
    from test_scaffold import add_first_kernel_as_the_readme_says

    root = create_project("tcglue_neg", tmp_path)
    before = sum(len(lines) for lines in project_glue(root).values())
    add_first_kernel_as_the_readme_says(root)
    kernels = (root / "csrc" / "Kernels.cpp").read_text()
    assert "Tensor neg(" in kernels and 'm.impl("neg"' in kernels
    added = sum(len(lines) for lines in project_glue(root).values()) - before
    assert 0 < added <= KERNEL_TARGET, added


# Definitions of the simulated-device helpers device_sim.hpp provides.
HELPER_DEFINITION = re.compile(
    r"^\s*(?:[\w:<>*&]+\s+)+(?:launch|host_alias|host_address|host_data|device_floats|make_context)\s*\([^;]*\{?\s*$")


@pytest.mark.parametrize("folder", ["backend_sdk/_scaffold/templates/cpp/csrc", "samples/accel_sim/csrc"])
def test_no_copies_of_the_device_sim_helpers(folder):
    """The scaffold's C++ flavour and accel_sim use device_sim.hpp's helpers (the stable flavour keeps
    its own host alias of an sdk::stable::Tensor, which device_sim.hpp cannot name)."""
    for path in sorted((ROOT / folder).glob("*.[ch]*")):
        text = path.read_text()
        found = [ln for ln in text.splitlines() if HELPER_DEFINITION.match(ln)]
        assert not found, f"{path.relative_to(ROOT)} defines its own device_sim helpers: {found}"
        assert "dlopen" not in text and "dlsym" not in text, path
        assert "device_sim_launch_kernel_named" not in text and "device_sim_launch_kernel(" not in text, path


LAUNCH_PROBE = r"""
#include <atomic>
#include <memory>
#include <stdexcept>

#include "device_sim.hpp"

namespace {
std::atomic<int> g_runs{0}, g_freed{0};
}

// Launches a kernel on accel:0's current stream that counts its runs (and throws when asked); the
// kernel owns a shared_ptr whose deleter counts the release of its last copy: the heap job's.
extern "C" int probe_launch(int throws) {
  std::shared_ptr<int> owned(new int(0), [](int* p) { delete p; ++g_freed; });
  device_sim::launch(sdk::Device(sdk::DeviceType::PrivateUse1, 0), "probe_kernel", [owned, throws] {
    ++g_runs;
    if (throws) throw std::runtime_error("the probe kernel failed");
  });
  return 0;
}
extern "C" int probe_runs() { return g_runs; }
extern "C" int probe_freed() { return g_freed; }

// The simulator's table through device_sim::contract(), and its collectives extension.
extern "C" int probe_contract_device_count() {
  int32_t n = -1;
  const sdk_device_instance& sim = device_sim::contract();
  if (device_sim::collectives() == nullptr || sim.api->device_count(sim.context, &n) != SDK_SUCCESS) return -1;
  return n;
}
"""


def test_device_sim_launch_reports_faults_and_frees_every_job(tmp_path, monkeypatch):
    """device_sim.hpp's launch (Note [Simulated kernel launch]): the kernel runs on the stream, an
    exception becomes the kernel fault of the next synchronising call, and the job is freed exactly
    once, also when the kernel never runs (an injected fault)."""
    import ctypes
    import shutil

    if shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    import accel
    import backend_sdk
    import device_sim
    from backend_sdk.utils import cpp_extension

    monkeypatch.setenv("BACKEND_SDK_EXTENSIONS_DIR", str(tmp_path / "ext"))
    src = tmp_path / "launch_probe.cpp"
    src.write_text(LAUNCH_PROBE)
    sim_lib = Path(device_sim.library_path())
    path = cpp_extension.load("glue_launch_probe", [str(src)], extra_include_paths=cpp_extension.include_paths("accel"),
                              extra_ldflags=[str(sim_lib), f"-Wl,-rpath,{sim_lib.parent}"], is_python_module=False)
    lib = ctypes.CDLL(path)
    assert lib.probe_contract_device_count() == device_sim.num_devices() >= 1

    lib.probe_launch(0)
    accel.synchronize()
    assert (lib.probe_runs(), lib.probe_freed()) == (1, 1)

    lib.probe_launch(1)
    with pytest.raises(backend_sdk.AcceleratorError, match="probe_kernel.*the probe kernel failed"):
        accel.synchronize()
    assert (lib.probe_runs(), lib.probe_freed()) == (2, 2)

    device_sim.inject("kernel_fault", 0, message="injected")
    lib.probe_launch(0)
    with pytest.raises(backend_sdk.AcceleratorError, match="injected"):
        accel.synchronize()
    assert (lib.probe_runs(), lib.probe_freed()) == (2, 3)  # never ran, released all the same
    accel.synchronize()  # the device works again
