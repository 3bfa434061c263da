"""Channel layouts (``data_format``) of the ops with a channel axis: the one place the channel axis
and the layout the kernel receives are worked out (op-free).

::

    data_format     NC  NCL  NCHW  NCDHW  NLC  NHWC  NDHWC
    rank of x       2   3    4     5      3    4     5
    channel axis    1   1    1     1      2    3     4      (second character 'C' -> 1, else the last axis)
    kernel layout   NCHW ...                  NHWC ...      (what the functional API hands the op)
"""

from __future__ import annotations

from ...errors import InvalidSpecError, PaddleInvalidArgument
from .tensor import RuleInput

#: The layouts the functional APIs accept; Paddle's rules read only their second character.
DATA_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")
#: The rank of x each layout implies (one axis per letter).
DATA_FORMAT_NDIM = {fmt: len(fmt) for fmt in DATA_FORMATS}


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
            f"data_format {data_format!r} is not a channel layout; use one of {', '.join(DATA_FORMATS)} "
            "(Paddle's rule only tests data_format[1] == 'C' and reads past the end of shorter strings)",
            kind="invalid-spec:data_format")
    return 1 if channel_first(data_format) else ndim - 1


def kernel_layout(data_format: str) -> str:
    """The layout the op receives from its functional API: ``'NCHW'`` or ``'NHWC'``."""
    return "NCHW" if channel_first(data_format) else "NHWC"


def check_channel_x_rank(x: RuleInput, op: str) -> None:
    """Paddle's x-rank check of the channel ops whose x takes these layouts (batch_norm's, and
    instance_norm's forward, in the same words): 2 <= rank <= 5."""
    if x.ndim < 2:
        raise PaddleInvalidArgument(f"The ndim of x in {op} should be greater than 1, but got [{x.ndim}].",
                                    kind="ndim:x:min")
    if x.ndim > 5:
        raise PaddleInvalidArgument(f"The ndim of x in {op} should be less than 6, but got [{x.ndim}].",
                                    kind="ndim:x:max")


__all__ = ["DATA_FORMATS", "DATA_FORMAT_NDIM", "channel_axis", "channel_first", "check_channel_x_rank", "kernel_layout"]
