"""batch_norm's attributes and per-channel tensors (its layouts: :mod:`..kit.layout`, shared with
every op that has a channel axis). sync_batch_norm shares all of it.
"""

from __future__ import annotations

#: The forward's and the grad's attributes, with the header's defaults, in signature order.
FORWARD_ATTRS = (("is_test", False), ("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"),
                 ("use_global_stats", False), ("trainable_statistics", False))
GRAD_ATTRS = (("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"), ("is_test", False),
              ("use_global_stats", False), ("trainable_statistics", False))
#: The per-channel tensors (1-D, one entry per channel of x).
PER_CHANNEL = frozenset({"mean", "variance", "scale", "bias", "mean_out", "variance_out", "saved_mean",
                         "saved_variance"})
