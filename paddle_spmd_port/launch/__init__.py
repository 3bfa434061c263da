"""Real multi-process runs with ``paddle.distributed.launch``, checked against the port.

    cases      LaunchCase (one functional call on one sharded input) and the default grids
    predict    the port's rules turned into expected placements, local shapes and failures (pure)
    comm       the reshards the ranks (and the PIR passes) ran against reshard.plan (pure)
    launcher   start N ranks, timeout, kill everything, keep logs (no Paddle import)
    runner     the in-rank script: runs every case of a file in one launch (imports Paddle)
    paddle_side  the proxies Paddle is reached through in the ranks: its exceptions told from ours
    session    one launch of many cases + crash probes
    report     verdict per case, markdown and JSON
    cli        ``python -m paddle_spmd_port launch``

Only :mod:`.runner` imports Paddle (inside the ranks); everything else imports without it.
"""
