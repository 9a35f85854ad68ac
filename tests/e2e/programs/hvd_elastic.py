"""An elastic Horovod training loop (hvd.elastic.run, TorchState, state.commit()) for ferry's
elastic tests. Every worker trains the same tiny model on data that depends only on the batch,
so workers in sync hold the same weights. Arguments:

    hvd_elastic.py MARKDIR EPOCHS SECS_PER_EPOCH [HOST:LOCAL_RANK@EPOCH ...] TOKEN

A worker whose HOROVOD_HOSTNAME and local rank match a HOST:LOCAL_RANK@EPOCH entry exits with
status 3 once it reaches that epoch (a marker file in MARKDIR makes it happen once). MARKDIR also
gets `epoch-<n>` once epoch n is committed. Lines: `epoch E size S rank R`, after each reset
`reset size S rank R`, and at the end `final size S rank R insync True|False w=<sum>`.
"""
import os
import sys
import time

import torch
import horovod.torch as hvd

markdir, epochs, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
victims = [a for a in sys.argv[4:-1] if "@" in a]
host = os.environ.get("HOROVOD_HOSTNAME", "?")
batches = 4

hvd.init()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                     named_parameters=model.named_parameters())


def maybe_die(epoch):
    for v in victims:
        where, at = v.split("@")
        vhost, vlr = where.rsplit(":", 1)
        marker = os.path.join(markdir, "died-" + where.replace(":", "_"))
        if vhost == host and int(vlr) == hvd.local_rank() and epoch == int(at) \
                and not os.path.exists(marker):
            open(marker, "w").close()
            print(f"dying rank {hvd.rank()} at epoch {epoch}", flush=True)
            os._exit(3)


def on_reset():
    print(f"reset size {hvd.size()} rank {hvd.rank()}", flush=True)


@hvd.elastic.run
def train(state):
    while state.epoch < epochs:
        maybe_die(state.epoch)
        for b in range(state.batch, batches):
            g = torch.Generator().manual_seed(1000 * state.epoch + b)
            x = torch.randn(8, 4, generator=g)
            y = x.sum(dim=1, keepdim=True)
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            state.batch = b + 1
            time.sleep(secs / batches)
        state.epoch += 1
        state.batch = 0
        state.commit()
        print(f"epoch {state.epoch} size {hvd.size()} rank {hvd.rank()}", flush=True)
        if hvd.rank() == 0:
            open(os.path.join(markdir, f"epoch-{state.epoch}"), "w").close()


state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
state.register_reset_callbacks([on_reset])
train(state)
w = torch.cat([p.detach().flatten() for p in model.parameters()])
avg = hvd.allreduce(w, op=hvd.Average, name="final")
print(f"final size {hvd.size()} rank {hvd.rank()} insync {bool(torch.allclose(w, avg))} "
      f"w={w.sum().item():.6f}", flush=True)
