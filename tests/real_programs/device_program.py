# A device program: device queries, .to("cuda"), side streams ordered with events, event timing, pinned memory
# with non_blocking copies, memory statistics and the caching allocator.
import torch

assert torch.cuda.is_available()
print("devices:", torch.cuda.device_count(), torch.cuda.get_device_name(0))
props = torch.cuda.get_device_properties(0)
print("total memory (MiB):", props.total_memory // 2**20)

torch.cuda.empty_cache()
torch.cuda.reset_peak_memory_stats()
base = torch.cuda.memory_allocated()

x_cpu = torch.randn(512, 512)
x = x_cpu.to("cuda")
w = torch.randn(512, 512).cuda()
assert x.is_cuda and x.device == torch.device("cuda", 0)
print("allocated after two 1 MiB tensors:", torch.cuda.memory_allocated() - base)

side = torch.cuda.Stream()
start = torch.cuda.Event(enable_timing=True)
end = torch.cuda.Event(enable_timing=True)
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    start.record()
    y = torch.relu(x @ w)
    end.record()
torch.cuda.current_stream().wait_stream(side)
y.record_stream(torch.cuda.current_stream())
end.synchronize()
assert end.query()
print("elapsed_time is a float:", isinstance(start.elapsed_time(end), float))
expected = torch.relu(x_cpu @ w.cpu())
assert torch.allclose(y.cpu(), expected, atol=1e-4)

pinned = torch.empty(1 << 16, pin_memory=True)
assert pinned.is_pinned()
pinned.copy_(torch.arange(1 << 16, dtype=torch.float32))
on_device = pinned.to("cuda", non_blocking=True)
done = torch.cuda.Event()
done.record()
done.synchronize()
assert on_device.sum().item() == float((1 << 16) * ((1 << 16) - 1) // 2)

peak = torch.cuda.max_memory_allocated()
stats = torch.cuda.memory_stats()
print("peak >= allocated:", peak >= torch.cuda.memory_allocated(), "stats keys:", "allocated_bytes.all.current" in stats)
reserved = torch.cuda.memory_reserved()
del x, w, y, on_device
torch.cuda.synchronize()
print("freed blocks stay reserved:", torch.cuda.memory_reserved() == reserved)
torch.cuda.empty_cache()
print("after empty_cache reserved <= before:", torch.cuda.memory_reserved() <= reserved)

if torch.cuda.device_count() > 1:
    with torch.cuda.device(1):
        z = torch.ones(4, device="cuda")
    assert z.device.index == 1
    assert (z.to("cuda:0") + 1).sum().item() == 8.0
    print("second device ok")
