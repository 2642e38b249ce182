"""torch.distributed's NCCL all-reduce on the same GPUs and sizes as bench/allreduce.cpp (one process per GPU).

   python3 bench/allreduce_torch.py [n_devices (2)] [max MiB (256)]
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, n, max_mib, port):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # as tinygrad.cpp: no NVLink multicast on shared machines
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    if rank == 0:
        print(f"# torch.distributed all_reduce (sum, float32) over {n} GPUs\n# {'bytes':>10} {'median_us':>12} {'busbw_GB/s':>12}")
    size = 1 << 20
    while size <= max_mib << 20:
        x = torch.full((size // 4,), 1.5, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(20 if size >= 64 << 20 else 50):
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        times.sort()
        t = times[len(times) // 2]
        if rank == 0:
            print(f"  {size:>10} {t * 1e6:>12.1f} {2 * (n - 1) / n * size / t / 1e9:>12.1f}", flush=True)
        size *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    max_mib = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    mp.spawn(worker, args=(n, max_mib, 29500 + os.getpid() % 1000), nprocs=n)
