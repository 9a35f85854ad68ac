"""mpi4py.futures under ferryrun. Two ways, as mpi4py documents them:

  mpi4py_futures.py pool N   every rank runs an MPIPoolExecutor of N workers (MPI_Comm_spawn)
                             and maps work onto it; prints its rank, the results' sum and the
                             hosts its workers ran on
  python3 -m mpi4py.futures mpi4py_futures.py world
                             a static world: rank 0 runs this, the others serve as workers
"""
import socket
import sys

from mpi4py import MPI
from mpi4py.futures import MPIPoolExecutor


def square_where(x):
    return x * x, socket.gethostname(), MPI.COMM_WORLD.Get_size()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "pool"
    rank = MPI.COMM_WORLD.Get_rank()
    workers = int(sys.argv[2]) if mode == "pool" and len(sys.argv) > 2 else None
    with MPIPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(square_where, range(16)))
    total = sum(r[0] for r in results)
    hosts = ",".join(sorted({r[1] for r in results}))
    sizes = ",".join(str(s) for s in sorted({r[2] for r in results}))
    print(f"futures {mode} rank={rank} sum={total} hosts={hosts} worker_world={sizes}", flush=True)


if __name__ == "__main__":
    main()
