#!/usr/bin/env python3
"""A real torch.distributed peer for end-to-end tests.

Joins the job the way torchrun-launched scripts do (init_process_group("gloo") with
env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), then checks:
  1. an all-reduce of (rank + 1) sums to n(n+1)/2 on every rank;
  2. one DistributedDataParallel step leaves identical, correctly averaged weights;
  3. LOCAL_RANK / LOCAL_WORLD_SIZE, when set, are consistent with the all-gathered hosts.
Prints one line "torch rank R/N ok ..." and exits 0, or exits 1 with the reason.

Standalone check (no launcher):
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 RANK=0 WORLD_SIZE=1 python3 torch_allreduce.py
"""
import datetime
import os
import socket
import sys


def fail(msg):
    print(f"torch rank {os.environ.get('RANK', '?')}: FAILED: {msg}", flush=True)
    sys.exit(1)


def main():
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        if var not in os.environ:
            fail(f"{var} is not set")
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank != int(os.environ["RANK"]) or world != int(os.environ["WORLD_SIZE"]):
        fail(f"process group says {rank}/{world}")

    # 1. all-reduce
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    if t.item() != want:
        fail(f"all_reduce gave {t.item()}, expected {want}")

    # 2. one DDP step: each rank feeds x = rank + 1 to y = w * x with loss = y, so the
    # gradient of w on rank r is r + 1 and DDP averages it to (world + 1) / 2.
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    opt.zero_grad()
    ddp(torch.tensor([[float(rank + 1)]])).sum().backward()
    opt.step()
    w = model.weight.detach().clone()
    expect_w = 1.0 - 0.1 * (world + 1) / 2
    if abs(w.item() - expect_w) > 1e-6:
        fail(f"DDP weight {w.item()}, expected {expect_w}")
    ws = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(ws, w)
    if any(abs(x.item() - w.item()) > 1e-9 for x in ws):
        fail("DDP weights differ between ranks")

    # 3. local coordinates, when the launcher gives them
    host = socket.gethostname()
    hosts = [None] * world
    dist.all_gather_object(hosts, (host, os.environ.get("LOCAL_RANK"),
                                   os.environ.get("LOCAL_WORLD_SIZE")))
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local is not None:
        same = [h for h in hosts if h[0] == host]
        if int(local) > len(same):
            fail(f"LOCAL_WORLD_SIZE={local} but only {len(same)} ranks share {host}")

    dist.barrier()
    print(f"torch rank {rank}/{world} ok allreduce={t.item():g} weight={w.item():.4f} "
          f"host={host} master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
          flush=True)
    # Every rank passed the barrier: nothing is left to exchange. Leave without torch's
    # teardown, which with gloo can block on a peer (the TCPStore server is rank 0) that
    # already exited; the launcher, not torch's shutdown, is what this program tests.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
