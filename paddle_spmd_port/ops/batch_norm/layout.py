"""batch_norm's layouts and attributes: the one place its channel axis is worked out.

::

    data_format     NC  NCL  NCHW  NCDHW  NLC  NHWC  NDHWC
    rank of x       2   3    4     5      3    4     5
    channel axis    1   1    1     1      2    3     4      (second character 'C' -> 1, else the last axis)
    kernel layout   NCHW ...                  NHWC ...      (what F.batch_norm hands the op)

sync_batch_norm shares all of it.
"""

from __future__ import annotations

from ...errors import InvalidSpecError

#: Layouts batch_norm accepts (``F.batch_norm``'s list); Paddle's rule reads only their second character.
DATA_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")
#: The rank of x each layout implies (one axis per letter).
DATA_FORMAT_NDIM = {fmt: len(fmt) for fmt in DATA_FORMATS}
#: The forward's and the grad's attributes, with the header's defaults, in signature order.
FORWARD_ATTRS = (("is_test", False), ("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"),
                 ("use_global_stats", False), ("trainable_statistics", False))
GRAD_ATTRS = (("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"), ("is_test", False),
              ("use_global_stats", False), ("trainable_statistics", False))
#: The per-channel tensors (1-D, one entry per channel of x).
PER_CHANNEL = frozenset({"mean", "variance", "scale", "bias", "mean_out", "variance_out", "saved_mean",
                         "saved_variance"})


def channel_first(data_format: str) -> bool:
    """Paddle's test: is the second character ``'C'``? (Any string; a shorter one reads False.)"""
    return data_format[1:2] == "C"


def channel_axis(data_format: str, ndim: int, *, strict: bool = True) -> int:
    """The channel axis for x of rank ``ndim``: ``1`` when ``data_format``'s second character is
    ``'C'``, else the last axis.

    ``strict`` (the rules): a format outside :data:`DATA_FORMATS` raises :class:`InvalidSpecError`.
    ``strict=False``: Paddle's bare character test for any string, for callers that size tensors
    before a rule judges the format."""
    if strict and data_format not in DATA_FORMATS:
        raise InvalidSpecError(
            f"data_format {data_format!r} is not a batch_norm layout; use one of {', '.join(DATA_FORMATS)} "
            "(Paddle's rule only tests data_format[1] == 'C' and reads past the end of shorter strings)",
            kind="invalid-spec:data_format")
    return 1 if channel_first(data_format) else ndim - 1


def kernel_layout(data_format: str) -> str:
    """The layout the batch_norm op receives from ``F.batch_norm``: ``'NCHW'`` or ``'NHWC'``."""
    return "NCHW" if channel_first(data_format) else "NHWC"
