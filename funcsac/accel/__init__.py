"""Speed machinery, apart from the math: each piece changes how fast the same numbers come (up to
rounding), never which numbers, and is kept where a benchmark showed, in one run on one CPU, a
gain of at least 10% (the figures are in bench/RESULTS.md and bench/ANALYSIS.md).

- ``compile``: ``compile_update`` and the compile store, signed ahead-of-time artifacts that a
  later run loads instead of compiling (``compile_stored``; bench/compile_time.py).
- ``grads``: eager gradients by plain autograd where no function transform is needed
  (bench/paths.py).
- ``product_order``: a wide critic ensemble's Linear products weight first on a CPU
  (bench/layout.py).
- ``blas``: MKL's own kernels on AMD CPUs, kept per machine where faster (bench/ANALYSIS.md).
- ``memory``: freed memory kept for reuse instead of returned and faulted in again
  (bench/memory_reuse.py).
- ``threads``: the ``funcsac`` command's threads on a shared CPU (bench/shared_cores.py).

``blas`` and ``threads`` import no torch: they run before torch loads.
"""
