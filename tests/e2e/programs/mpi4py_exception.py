"""An mpi4py job that hangs as it does under Open MPI's mpirun: after one allreduce, rank 1
raises, and the other ranks wait for it in a barrier. Python runs rank 1's exit handlers,
mpi4py's calls MPI_Finalize, and that waits for the others. Each rank prints
"in the hang R" first. The first argument (a token) only makes the ranks findable.

    ferryrun -np 4 -H a:2,b:2 python3 mpi4py_exception.py TOKEN
"""
from mpi4py import MPI

comm = MPI.COMM_WORLD
comm.allreduce(1)
print(f"in the hang {comm.Get_rank()}", flush=True)
if comm.Get_rank() == 1:
    raise RuntimeError("boom")
comm.Barrier()
