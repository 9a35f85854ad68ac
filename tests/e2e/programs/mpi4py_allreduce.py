"""An mpi4py peer for end-to-end tests (Debian's python3-mpi4py, built on Open MPI): the
ranks form one world, an allreduce of a numpy-free list sum across hosts, a broadcast from
rank 0, and each rank prints one line "mpi4py R/N host=H sum=S bcast=B".

    ferryrun -np 4 -H a:2,b:2 python3 mpi4py_allreduce.py
"""
import socket
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank + 1, op=MPI.SUM)
token = comm.bcast("from-0" if rank == 0 else None, root=0)
hosts = comm.allgather(socket.gethostname())
if total != size * (size + 1) // 2 or token != "from-0" or len(hosts) != size:
    print(f"mpi4py rank {rank}: wrong result sum={total} bcast={token}", file=sys.stderr)
    comm.Abort(3)
print(f"mpi4py {rank}/{size} host={hosts[rank]} sum={total} bcast={token} "
      f"hosts={len(set(hosts))}", flush=True)
