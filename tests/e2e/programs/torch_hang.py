#!/usr/bin/env python3
"""A torch.distributed (gloo) job that hangs on purpose, for the state report's tests.

Every rank joins the group and prints "ready"; the rank named by $HANG_RANK then sleeps in
stay_away_from_all_reduce() (forever, or $NAP_S seconds, or until the file $NAP_FILE
exists), while the others wait for it in
dist.all_reduce(). Without a hang every rank prints "done <sum>" and exits 0. The last
argument is a token for the tests' leftover checks.
"""
import datetime
import os
import time


def stay_away_from_all_reduce(seconds, until_file):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until_file and os.path.exists(until_file)):
        time.sleep(0.5)


def main():
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=600))
    rank = dist.get_rank()
    print("ready", flush=True)
    if rank == int(os.environ.get("HANG_RANK", "-1")):
        stay_away_from_all_reduce(float(os.environ.get("NAP_S", "1e9")),
                                  os.environ.get("NAP_FILE", ""))
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    print(f"done {t.item():.0f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
