"""A training loop's tqdm progress bar for the console scenarios (63_progress_bars).

Each rank draws one bar of 10 steps on stderr (tqdm's default stream) and prints
"done <rank>" when it ends. With a gate file given, rank 0 stops after step 5 until that
file exists: the bar's 5/10 state must have reached the console while the loop still runs.
"""
import os
import sys
import time

from tqdm import tqdm

rank = int(os.environ["RANK"])
gate = sys.argv[1] if len(sys.argv) > 1 else ""
bar = tqdm(total=10, desc=f"r{rank}", mininterval=0, miniters=1, ascii=True, ncols=60)
for i in range(10):
    bar.update(1)
    if gate and rank == 0 and i == 4:
        while not os.path.exists(gate):
            time.sleep(0.05)
    time.sleep(0.02)
bar.close()
print(f"done {rank}", flush=True)
