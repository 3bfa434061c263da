"""Native backends: the only code that calls Paddle's SPMD rules (launch/ and compat/ import Paddle
for other work: running ranks, the API shim).

The backends run inside a worker subprocess (:mod:`.worker`), driven from the parent by
:mod:`.pool`, so that a segfault in Paddle becomes a recorded ``native crashed`` outcome.
:mod:`.routes` names the routes and each rule's default ones, read from the declared specs.

    registry   paddle.framework.core.get_phi_spmd_rule (static auto-parallel API)
"""
