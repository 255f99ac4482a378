"""Losses with torch.nn.functional's names and arguments: cross_entropy (class indices or
class probabilities; weight, ignore_index, label_smoothing), nll_loss, mse_loss, l1_loss,
smooth_l1_loss, huber_loss, binary_cross_entropy_with_logits, kl_div.
reduction is 'mean', 'sum' or 'none'. Class indices are int tensors."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from ..hl_ops.shape_utils import as_expr, const_int
from ..hl_ops.tensor_utils import where


def _reduce(loss, reduction: str, op: str):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ShapeError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's deprecated size_average / reduce flags, mapped to a reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _class_dim(input, op: str) -> int:
    if input.ndim == 0:
        raise ShapeError(f"{op}: input needs a class dim, got a 0-d tensor")
    return 0 if input.ndim == 1 else 1


def _check_target(input, target, cdim: int, op: str):
    want = [d for i, d in enumerate(input.st.dims) if i != cdim]
    got = list(target.st.dims)
    if len(want) != len(got) or any(as_expr(a) != as_expr(b) for a, b in zip(want, got)):
        raise ShapeError(f"{op}: target of shape {target.shape} does not match input of shape "
                         f"{input.shape} (expected the input's shape without its class dim)")


def _pick(logp, target, cdim: int):
    """logp at each target class: (N, C, *d) and (N, *d) -> (N, *d). Targets must be valid."""
    moved = logp.permute([0] + list(range(2, logp.ndim)) + [1]) if cdim == 1 else logp
    classes = logp.st.dims[cdim]
    rows = target.st.numel()
    picked = moved.reshape(rows, classes).gather(1, target.reshape(rows, 1))
    return picked.reshape(list(target.st.dims))


def _nll_terms(logp, target, weight, ignore_index: int, op: str):
    """Per-element negative log-likelihood and per-element class weight (0 where ignored)."""
    cdim = _class_dim(logp, op)
    if target.dtype != dt.int32:
        raise DTypeError(f"{op}: class-index target must be an int tensor, got "
                         f"{dt.name(target.dtype)}")
    _check_target(logp, target, cdim, op)
    classes = logp.st.dims[cdim]
    if weight is not None and (weight.ndim != 1 or as_expr(weight.st.dims[0]) != classes):
        raise ShapeError(f"{op}: weight of shape {weight.shape} must be ({classes},)")
    valid = target != ignore_index
    safe_target = target * valid.to(dt.int32)  # ignored places read class 0, weighted 0
    w = valid.to(logp.dtype)
    if weight is not None:
        w = w * weight.to(logp.dtype).index_select_tensor(0, safe_target)
    return -(_pick(logp, safe_target, cdim) * w), w


def _reduce_weighted(loss, w, reduction: str, op: str):
    """'mean' divides by the total weight of the places not ignored, as torch does."""
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction, op)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction: str = "mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss, w = _nll_terms(input, target, weight, ignore_index, "nll_loss")
    return _reduce_weighted(loss, w, reduction, "nll_loss")


def _channel_weight(weight, ndim: int, cdim: int):
    return weight.reshape([weight.st.dims[0]] + [1] * (ndim - 1 - cdim))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
    """log_softmax over the class dim (1, or 0 for unbatched input) then the negative
    log-likelihood of the target classes, or of class probabilities when ``target`` is a
    float tensor of the input's shape. Computed in f32."""
    op = "cross_entropy"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ShapeError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    cdim = _class_dim(input, op)
    out_dtype = input.dtype if dt.is_float(input.dtype) else dt.float32
    logp = input.to(dt.float32).log_softmax(cdim)
    classes = logp.st.dims[cdim]
    if label_smoothing:
        classes = const_int(classes, op, "the number of classes (with label_smoothing)")
    if dt.is_float(target.dtype):
        loss = _soft_cross_entropy(logp, target, weight, label_smoothing, cdim, classes, op)
        return _reduce(loss, reduction, op).to(out_dtype)
    loss, w = _nll_terms(logp, target, weight, ignore_index, op)
    nll = _reduce_weighted(loss, w, reduction, op)
    if not label_smoothing:
        return nll.to(out_dtype)
    if weight is not None:
        smooth = -(logp * _channel_weight(weight.to(dt.float32), logp.ndim, cdim)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth * (target != ignore_index).to(dt.float32)
    smooth = _reduce_weighted(smooth, w, reduction, op)
    return (nll * (1.0 - label_smoothing) + smooth * (label_smoothing / classes)).to(out_dtype)


def _soft_cross_entropy(logp, target, weight, label_smoothing, cdim, classes, op):
    """Per-element loss for class-probability targets (mean divides by the element count)."""
    if list(target.st.dims) != list(logp.st.dims):
        raise ShapeError(f"{op}: probability target of shape {target.shape} must match input "
                         f"of shape {logp.shape}")
    t = target.to(dt.float32)
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + label_smoothing / classes
    terms = logp * t
    if weight is not None:
        terms = terms * _channel_weight(weight.to(dt.float32), logp.ndim, cdim)
    return -terms.sum(cdim)


def _pointwise_loss(input, target, reduction, op: str, fn):
    a, b = input.broadcast_together(target, op)
    return _reduce(fn(a - b), reduction, op)


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _pointwise_loss(input, target, reduction, "mse_loss", lambda d: d * d)


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _pointwise_loss(input, target, reduction, "l1_loss", lambda d: d.abs())


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta 0: l1_loss)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    return _pointwise_loss(input, target, reduction, "smooth_l1_loss",
                           lambda d: where(d.abs() < beta, d * d * (0.5 / beta),
                                           d.abs() - 0.5 * beta))


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0):
    """0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta)."""
    return _pointwise_loss(input, target, reduction, "huber_loss",
                           lambda d: where(d.abs() <= delta, d * d * 0.5,
                                           (d.abs() - 0.5 * delta) * delta))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction: str = "mean", pos_weight=None):
    """torch's stable form: (1 - t) x + (1 + (pos_weight - 1) t) (log1p(exp(-|x|)) + max(-x, 0))."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, t = input.broadcast_together(target.to(input.dtype), "binary_cross_entropy_with_logits")
    softplus_neg = (-x.abs()).exp().log1p() + (-x).clamp_min(0.0)
    scale = 1.0 if pos_weight is None else (pos_weight - 1.0) * t + 1.0
    loss = (1.0 - t) * x + softplus_neg * scale
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False):
    """target (log target - input), input being log-probabilities; 0 where target is 0.
    reduction 'batchmean' divides the sum by the first dim."""
    op = "kl_div"
    if reduction == "batchmean":
        total = kl_div(input, target, reduction="sum", log_target=log_target)
        if not input.ndim:
            return total
        batch = input.graph.constant(input.st.dims[0], dt.int32).to(total.dtype)
        return total / batch
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, t = input.broadcast_together(target.to(input.dtype), op)
    if log_target:
        loss = t.exp() * (t - x)
    else:  # xlogy(t, t): 0 at t == 0
        loss = where(t > 0.0, t * t.clamp_min(1e-38).log(), 0.0) - t * x
    return _reduce(loss, reduction, op)
