"""Turn chat histories and documents into a knowledge base you can ask, with every answer cited."""

import os

# numpy's OpenBLAS spreads even a small matrix-vector product over every core and its threads
# spin while they wait: on a busy 2-core machine scoring 2,000 vectors took 29 ms that way and
# 4.9 ms on one thread (benchmarks/store_scale.py). OpenBLAS reads this once, when numpy loads,
# which is after this package is imported unless the caller imported numpy first.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
