"""Speed machinery, apart from the math: each piece changes how fast the same numbers come (up to
rounding), never which numbers, and is kept where a benchmark showed, in one run on one CPU, a
gain of at least 10% (the figures are in bench/results/RESULTS.md and bench/results/ANALYSIS.md).

- ``compile``: ``compile_update`` and the compile store, signed ahead-of-time artifacts that a
  later run loads instead of compiling (``compile_stored``; bench/studies/compile_time.py).
- ``grads``: eager gradients by plain autograd where no function transform is needed
  (bench/studies/paths.py).
- ``product_order``: a wide critic ensemble's Linear products weight first on a CPU
  (bench/studies/layout.py).
- ``blas``: MKL's own kernels on AMD CPUs, kept per machine where faster
  (bench/results/ANALYSIS.md).
- ``memory``: freed memory kept for reuse instead of returned and faulted in again
  (bench/studies/memory_reuse.py).
- ``threads``: the ``funcsac`` command's threads on a shared CPU (bench/studies/shared_cores.py).

``blas`` and ``threads`` import no torch: they run before torch loads.
"""
