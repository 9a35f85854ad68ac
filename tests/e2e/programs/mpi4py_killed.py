"""A rank that dies after MPI_Init without a word, as one the OOM killer takes: rank 0 prints
the shared-memory segment Open MPI's transport mapped for it ("segment PATH", from
/proc/self/maps), then sends itself SIGKILL; the others wait until ferryrun stops them. Whoever
removes that segment now, it is not the rank.

    ferryrun -np 2 -H host:2 python3 mpi4py_killed.py TOKEN
"""
import os
import signal
import time

from mpi4py import MPI

MPI.COMM_WORLD.Barrier()
if MPI.COMM_WORLD.Get_rank() == 0:
    with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
        paths = {line.split()[-1] for line in maps if "/dev/shm/" in line}
    for path in sorted(paths):
        print(f"segment {path}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
