"""The parity harness: the case grid and random mode, the cell-by-cell comparison, the reports,
the Paddle release profiles, and the ``parity`` and ``infer`` commands."""
