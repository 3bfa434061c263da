"""Generic helpers the op families' modules share, one module per room (``ops/kit/<room>.py``);
op-free, and below every room in the layers contract."""
