"""Dynamic-process calls that cannot succeed, tried through mpi4py (Open MPI): spawning
with no free slot, looking up a name nobody published. Each must fail at once with an MPI
error, not hang; publishing a name succeeds. Prints one line: "<what>: refused" or
"<what>: succeeded".

    ferryrun -np 1 -H host:1 python3 mpi4py_refused.py spawn|publish|lookup
"""
import sys

from mpi4py import MPI

what = sys.argv[1]
MPI.COMM_WORLD.Set_errhandler(MPI.ERRORS_RETURN)
try:
    if what == "spawn":
        MPI.COMM_SELF.Spawn(sys.executable, args=["-c", "pass"], maxprocs=1)
    elif what == "publish":
        MPI.Publish_name("ferry-test", MPI.Open_port())
    elif what == "lookup":
        MPI.Lookup_name("ferry-test-nobody-published")
    print(f"{what}: succeeded", flush=True)
except MPI.Exception:
    print(f"{what}: refused", flush=True)
