"""The parity harness: the sweep of the port against Paddle's own rules over the case grid (and random
mode), the reports, the baseline save and diff, the release cross-check, and the ``parity`` and
``infer`` commands. The grid, the comparator and the release profiles it shares with the other rooms
stand below it (:mod:`paddle_spmd_port.grid`, :mod:`paddle_spmd_port.compare`,
:mod:`paddle_spmd_port.releases`)."""
