"""Graph capture and replay (issue 15 part 5): backend_sdk.accelerator.Graph, accel.graph / Graph /
graph_pool_handle / is_current_stream_capturing on the "sdk.graph" extension (Note [Graph capture],
Note [Simulated graphs], Note [Graph memory pools], Note [Synchronising during capture])."""
from __future__ import annotations

import gc

import pytest

import accel
import backend_sdk as sdk
from backend_sdk import _runtime

Graph = sdk.accelerator.Graph


def test_the_simulator_implements_the_extension():
    assert _runtime.device_extensions("accel").get("sdk.graph") == 1
    assert sdk._C._runtime._has_device_graphs("accel")


def test_capture_records_and_replay_reruns_on_the_same_memory():
    x = sdk.zeros(8, device="accel")
    s = sdk.Stream()
    g = Graph()
    with s, g:
        assert s.is_capturing() and sdk.accelerator._graphs.is_current_stream_capturing()
        x.add_(1)
        y = x * 2  # allocated during capture: from the graph's pool
    assert not s.is_capturing()
    assert x.cpu().tolist() == [0.0] * 8  # recorded, not run
    g.replay()
    assert x.cpu().tolist() == [1.0] * 8 and y.cpu().tolist() == [2.0] * 8
    for _ in range(3):
        g.replay()
    assert x.cpu().tolist() == [4.0] * 8 and y.cpu().tolist() == [8.0] * 8
    x.fill_(10)  # inputs are read at replay time
    g.replay()
    assert y.cpu().tolist() == [22.0] * 8


def test_memory_allocated_during_capture_stays_valid_across_replays():
    x = sdk.ones(1024, device="accel")
    s = sdk.Stream()
    g = Graph()
    with s, g:
        tmp = x + 1           # an intermediate freed during capture
        out = tmp * 3
        del tmp
    gc.collect()
    other = [sdk.full((1024,), 7.0, device="accel") for _ in range(8)]  # would reuse a cached block
    g.replay()
    assert out.cpu().tolist()[:3] == [6.0] * 3
    assert all(o.cpu().tolist()[:2] == [7.0, 7.0] for o in other)  # the replay did not write their memory
    g.reset()
    g.reset()  # idempotent


def test_sharing_a_pool_and_pool_handles():
    h = accel.graph_pool_handle()
    assert isinstance(h, tuple) and len(h) == 2 and h != accel.graph_pool_handle()
    x = sdk.zeros(4, device="accel")
    g1, g2 = accel.Graph(), accel.Graph()
    with accel.graph(g1, pool=h):
        x.add_(1)
    with accel.graph(g2, pool=g1.pool()):
        x.mul_(10)
    assert g1.pool() == h
    g1.replay()
    g2.replay()
    assert x.cpu().tolist() == [10.0] * 4


def test_device_module_graph_context_restores_the_stream():
    before = accel.current_stream()
    g = accel.Graph()
    x = sdk.zeros(2, device="accel")
    with accel.graph(g):
        assert accel.current_stream() != before and accel.is_current_stream_capturing()
        x.add_(5)
    assert accel.current_stream() == before and not accel.is_current_stream_capturing()
    g.replay()
    assert x.cpu().tolist() == [5.0, 5.0]


def test_replay_before_capture_and_default_stream_capture_are_refused():
    with pytest.raises(RuntimeError, match="holds no capture"):
        Graph().replay()
    g = Graph()
    with pytest.raises(RuntimeError, match="must be captured on a non-default stream"):
        with accel.stream(accel.default_stream()):
            g.capture_begin()
    with pytest.raises(ValueError, match="capture_error_mode"):
        Graph(capture_error_mode="loose")


@pytest.mark.parametrize("call", ["item", "cpu", "synchronize"])
def test_synchronising_calls_during_capture_are_refused_naming_the_call(call):
    x = sdk.ones(4, device="accel")
    s = sdk.Stream()
    g = Graph()
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        with s, g:
            y = x + 1
            if call == "item":
                y[0].item()
            elif call == "cpu":
                y.cpu()
            else:
                sdk.accelerator.synchronize()
    assert not s.is_capturing()  # the failed capture was dropped
    assert x.cpu().tolist() == [1.0] * 4  # and synchronising works again


def test_relaxed_mode_allows_other_synchronising_calls():
    x = sdk.ones(4, device="accel")
    s = sdk.Stream()
    g = Graph(capture_error_mode="relaxed")
    with s, g:
        x.add_(1)
        with sdk.Stream():  # another stream's synchronising calls: allowed in relaxed mode
            assert sdk.ones(2, device="accel").cpu().tolist() == [1.0, 1.0]
        with pytest.raises(NotImplementedError, match="operation not permitted when stream is capturing"):
            s.synchronize()  # the capturing stream itself: refused by the device whatever the mode
    g.replay()
    assert x.cpu().tolist() == [2.0] * 4


def test_work_that_cannot_be_replayed_invalidates_the_capture():
    s = sdk.Stream()
    g = Graph()
    e = sdk.Event()
    with pytest.raises(NotImplementedError, match="invalidated: an event record"):
        with s, g:
            e.record()
    assert not s.is_capturing()


def test_a_device_without_the_extension_raises_not_implemented_naming_it():
    import subprocess
    import sys

    code = ("import backend_sdk as sdk\n"
            "from backend_sdk.utils import python_device as pd\n"
            "sdk.utils.rename_privateuse1_backend('nog')\n"
            "pd.attach_python_device('nog', pd.PythonDevice(device_count=1, total_memory=16 << 20))\n"
            "assert not sdk._C._runtime._has_device_graphs('nog')\n"
            "g = sdk.accelerator.Graph()\n"
            "with sdk.Stream():\n"
            "    try:\n"
            "        g.capture_begin()\n"
            "    except NotImplementedError as e:\n"
            "        print(e)\n"
            "assert not sdk.accelerator._graphs.is_current_stream_capturing()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "backend 'nog'" in out.stdout and "does not implement graph capture" in out.stdout


def test_replay_on_the_default_stream_and_not_on_another_device():
    x = sdk.zeros(3, device="accel:0")
    g = Graph()
    with sdk.Stream("accel:0"), g:
        x.add_(2)
    with accel.stream(accel.default_stream(0)):
        g.replay()  # after capture, any stream of the graph's device may replay it
    assert x.cpu().tolist() == [2.0] * 3
    with accel.stream(accel.Stream(1)):  # another device current: the replay still runs on the graph's device
        g.replay()
    assert x.cpu().tolist() == [4.0] * 3
