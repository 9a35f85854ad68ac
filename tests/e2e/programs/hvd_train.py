#!/usr/bin/env python3
"""A plain Horovod (PyTorch) training script, as a user writes it: nothing in it knows
which launcher started it. It prints, each as one line:

  hvd topo rank=R local_rank=L cross_rank=C size=N local_size=LS cross_size=CS host=H
  hvd ops rank=R allreduce=S allgather=A broadcast=B
  hvd weights rank=R init=SHA before=SHA after=SHA

`init` is the digest of the rank's own freshly initialised model (seeded by rank, so it
differs between ranks), `before` the digest after hvd.broadcast_parameters (the same on
every rank), `after` the digest after a few hvd.DistributedOptimizer steps on data that
differs between ranks (the same on every rank only if the gradients were averaged).
Usage: hvd_train.py [STEPS] [TOKEN]  (TOKEN is ignored: it marks the job's processes).
"""

import hashlib
import socket
import sys

import torch

import horovod.torch as hvd


def digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(repr(p.detach().flatten().tolist()).encode())
    return h.hexdigest()[:16]


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    hvd.init()
    torch.set_num_threads(1)  # as Horovod's examples do: one CPU thread per worker
    r, n = hvd.rank(), hvd.size()
    print(f"hvd topo rank={r} local_rank={hvd.local_rank()} cross_rank={hvd.cross_rank()} "
          f"size={n} local_size={hvd.local_size()} cross_size={hvd.cross_size()} "
          f"host={socket.gethostname()}", flush=True)

    total = hvd.allreduce(torch.tensor([float(r)]), op=hvd.Sum, name="sum").item()
    gathered = hvd.allgather(torch.tensor([[r, hvd.local_rank()]]), name="gather")
    pairs = ",".join(f"{a}:{b}" for a, b in gathered.tolist())
    bcast = hvd.broadcast(torch.tensor([100 + r]), root_rank=n - 1, name="bcast").item()
    print(f"hvd ops rank={r} allreduce={total:g} allgather={pairs} broadcast={bcast}",
          flush=True)

    torch.manual_seed(1000 + r)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    init = digest(model)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    before = digest(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * n)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    x, y = torch.randn(32, 8), torch.randn(32, 2)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    print(f"hvd weights rank={r} init={init} before={before} after={digest(model)}",
          flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
