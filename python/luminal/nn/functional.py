"""luminal.nn.functional: torch.nn.functional's ops by the same names and signatures, each
built from GraphTensor methods (so from the 14 primitives). The larger families live in
their own files (normalization, conv, pooling, interpolate, sdpa, loss, similarity) and
``linear`` is hl_ops.matmul's; this file holds the small ones and the elementwise ops, which
call the GraphTensor methods of the same names.

    import luminal.nn.functional as F
    y = F.conv2d(x, w, padding=1).relu()
"""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from ..hl_ops.matmul import linear
from ..hl_ops.quant_activations import quantize_activations
from ..hl_ops.tensor_utils import where
from .conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .interpolate import interpolate
from .loss import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .normalization import batch_norm, group_norm, layer_norm, rms_norm
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .sdpa import scaled_dot_product_attention
from .similarity import cosine_similarity, normalize


# ---- softmax family (GraphTensor methods) ---------------------------------------------
def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    return input.log_softmax(dim, dtype=dtype)


# ---- layers without parameters of their own ------------------------------------------
def dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Identity unless ``training`` (unlike torch, whose default is training=True: a luminal
    graph is usually for inference). Training: each element is zeroed with probability ``p``
    and the rest scaled by 1 / (1 - p), from the graph's random state (``cx.random_state()``),
    so the mask is new on every execute of a train step that carries the state."""
    if not 0.0 <= p <= 1.0:
        raise ShapeError(f"dropout: probability p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = input.graph.random_state().uniform(list(input.st.dims)) >= p
    return input * keep.to(input.dtype) * (1.0 / (1.0 - p))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False):
    """Rows of ``weight`` (num_embeddings, dim) picked by int ``input`` of any shape. As in
    torch, ``padding_idx`` changes only the gradient: the rows it picks are read detached, so
    that row of ``weight`` gets none."""
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, dim), got shape "
                         f"{weight.shape}")
    if input.dtype != dt.int32:
        raise DTypeError(f"embedding: indices must be an int tensor, got "
                         f"{dt.name(input.dtype)}")
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm renormalizes the weight in place, "
                                  "which a static graph cannot do")
    rows = weight.index_select_tensor(0, input)
    if padding_idx is None:
        return rows
    count = weight.shape[0]
    if isinstance(count, int) and not -count <= padding_idx < count:
        raise ShapeError(f"embedding: padding_idx {padding_idx} is outside the {count} "
                         f"embeddings of weight {weight.shape}")
    if padding_idx < 0 and isinstance(count, int):
        padding_idx += count
    padded = (input == padding_idx).unsqueeze(-1)
    return where(padded, rows.detach(), rows)


def pad(input, pad, mode: str = "constant", value=None):
    """torch.nn.functional.pad. Constant padding is a view; other modes come from
    GraphTensor.pad."""
    if mode == "constant" and not value:
        return input.pad_zeros(pad)
    return input.pad(pad, mode=mode, value=value)


# ---- elementwise activations (GraphTensor methods, same names) -------------------------
def relu(input, inplace: bool = False):
    return input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def silu(input, inplace: bool = False):
    return input.silu()


def gelu(input, approximate: str = "none"):
    if approximate not in ("none", "tanh"):
        raise ShapeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return input.gelu(approximate=approximate)


def relu6(input, inplace: bool = False):
    return input.relu6()


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    return input.leaky_relu(negative_slope)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    return input.elu(alpha)


def selu(input, inplace: bool = False):
    return input.selu()


def mish(input, inplace: bool = False):
    return input.mish()


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    return input.softplus(beta, threshold)


def softsign(input):
    return input.softsign()


def hardswish(input, inplace: bool = False):
    return input.hardswish()


def hardsigmoid(input, inplace: bool = False):
    return input.hardsigmoid()


__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "batch_norm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "cross_entropy", "dropout", "elu", "embedding",
    "gelu", "group_norm", "hardsigmoid", "hardswish", "interpolate", "l1_loss", "layer_norm",
    "leaky_relu", "linear", "log_softmax", "max_pool1d", "max_pool2d", "max_pool3d", "mish",
    "mse_loss", "nll_loss", "normalize", "pad", "quantize_activations", "relu", "relu6", "rms_norm", "scaled_dot_product_attention",
    "selu", "sigmoid", "silu", "softmax", "softplus", "softsign", "tanh",
]
