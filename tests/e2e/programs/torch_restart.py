#!/usr/bin/env python3
"""A DDP training job that checkpoints every epoch, for the restart scenarios.

  torch_restart.py CKPT_DIR TOKEN FAIL_RANK FAIL_EPOCH MODE [EPOCH_SECONDS]

Trains y = w.x (4 weights, SGD) for 4 epochs with the gloo backend (env://). Each epoch's
global batch (24 samples, the same for any world size) is split over the ranks, and the
loss is scaled so the averaged gradient is the global batch's: the weights after every
epoch do not depend on the world size. After each epoch rank 0 writes CKPT_DIR/ckpt.pt
(atomically); a new attempt resumes after the last checkpoint.

FAIL_RANK fails at the start of FAIL_EPOCH:
  MODE exit-once   os._exit(1) in the first attempt only (FERRY_ATTEMPT 0)
  MODE raise-always  raise RuntimeError in every attempt (@record writes the error file)
  MODE none        never
Every rank prints "attempt A restart R world W rank N resumes at epoch E" at the start
and rank 0 prints "final w=[...]" at the end. EPOCH_SECONDS (default 0) slows each
epoch down so a test can act mid-job.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel

EPOCHS = 4
GLOBAL_BATCH = 24


def batch(epoch):
    g = torch.Generator().manual_seed(1000 + epoch)
    x = torch.randn(GLOBAL_BATCH, 4, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 3.0, 0.5]) + 0.1
    return x, y


@record
def main():
    ckpt_dir, _token, fail_rank, fail_epoch, mode = sys.argv[1:6]
    fail_rank, fail_epoch = int(fail_rank), int(fail_epoch)
    epoch_seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    attempt = int(os.environ.get("FERRY_ATTEMPT", "0"))
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))

    model = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    path = os.path.join(ckpt_dir, "ckpt.pt")
    start = 0
    if os.path.exists(path):
        state = torch.load(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"] + 1
    print(f"attempt {attempt} restart {restart} world {world} rank {rank} "
          f"resumes at epoch {start}", flush=True)

    for epoch in range(start, EPOCHS):
        if rank == fail_rank and epoch == fail_epoch:
            if mode == "exit-once" and attempt == 0:
                print(f"rank {rank} fails now (os._exit)", flush=True)
                os._exit(1)
            if mode == "raise-always":
                raise RuntimeError(f"boom at epoch {epoch}")
        x, y = batch(epoch)
        per = GLOBAL_BATCH // world
        xs, ys = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        # DDP averages over the world: scale so the result is the global batch's mean.
        loss = ((ddp(xs).squeeze(1) - ys) ** 2).sum() * world / GLOBAL_BATCH
        loss.backward()
        opt.step()
        time.sleep(epoch_seconds)
        dist.barrier()
        if rank == 0:
            tmp = path + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                        "epoch": epoch}, tmp)
            os.replace(tmp, path)
            print(f"checkpoint epoch {epoch}", flush=True)
        dist.barrier()

    w = model.weight.detach().squeeze(0).tolist()
    if rank == 0:
        print("final w=[" + ", ".join(f"{v:.4f}" for v in w) + "]", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
