"""The conformance tables must cover every op the hl_ops issue lists: an op missing from
them is missing from luminal."""

import importlib
import os

import pytest

REQUIRED = """
exp exp2 log log2 log1p expm1 sqrt rsqrt reciprocal sin cos tan tanh sigmoid relu relu6
leaky_relu elu selu gelu silu mish softplus softsign hardswish hardsigmoid erf abs sign neg
square pow clamp floor ceil round trunc frac where maximum minimum fmod remainder
floor_divide isnan isinf isfinite nan_to_num logical_and logical_or logical_not logical_xor
eq ne lt le gt ge lerp addcmul
sum mean max min amax amin prod var std logsumexp norm argmax argmin all any cumsum cumprod
cummax
reshape view permute transpose t flatten unflatten squeeze unsqueeze expand broadcast_to repeat
tile flip roll narrow getitem cat stack split chunk pad gather index_select take_along_dim
scatter scatter_add tril triu unfold
arange zeros ones full zeros_like ones_like full_like eye linspace rand randn
matmul bmm mm dot outer einsum linear
softmax log_softmax layer_norm rms_norm group_norm batch_norm dropout embedding conv1d conv2d
conv_transpose2d max_pool1d max_pool2d avg_pool1d avg_pool2d adaptive_avg_pool2d interpolate
scaled_dot_product_attention cross_entropy mse_loss sort argsort topk
msort kthvalue median nanmedian searchsorted bucketize var_mean std_mean linalg.vector_norm
linalg.matrix_norm index_put index_add index_copy index_fill put masked_scatter scatter_reduce
slice_scatter select_scatter diagonal_scatter diagonal diag_embed atan atan2 asin acos asinh
acosh atanh index_reduce
""".split()

TABLES = [f[:-3] for f in os.listdir(os.path.dirname(__file__))
          if f.startswith("test_") and f.endswith(".py") and f != "test_coverage.py"]


def covered_ops():
    ops = set()
    for table in TABLES:
        module = importlib.import_module(table)
        ops.update(case.op for case in getattr(module, "CASES", []))
        ops.update(getattr(module, "COVERED_ELSEWHERE", []))
    return ops


@pytest.mark.parametrize("op", REQUIRED)
def test_op_is_in_a_table(op):
    assert op in covered_ops(), f"no conformance row checks {op}"
