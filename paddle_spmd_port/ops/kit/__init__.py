"""Generic helpers the family folders share, one module per room (``kernel`` for the oracle's numpy
kernels, ...). Op-free: nothing here names an op, and nothing here imports a room."""
