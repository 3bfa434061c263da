"""Generic helpers the family modules share, one module per room (``grid``, ``releases``, ...).
Op-free: nothing here names an op; everything is importable by ``ops/<family>/`` and by the rooms."""
