"""Conformance table: luminal.nn.functional against torch.nn.functional, several parameter
combinations per op. Shapes are kept apart (batch != out_channels, ...) so the symbolic
variant makes only the batch-like leading dim symbolic."""

import pytest
import torch
import torch.nn.functional as TF

import luminal as lm
import luminal.nn.functional as F
from harness import VARIANTS, Case, Input, check, check_grad

POS = "positive"


def idx(shape, n):
    return Input(shape, lm.int32, domain=f"index:{n}")


NORM_CASES = [
    Case("softmax", lambda x: F.softmax(x, -1), [(3, 5)], ref=lambda x: TF.softmax(x, -1)),
    Case("softmax", lambda x: F.softmax(x, dim=1), [(2, 3, 4)], label="dim1",
         ref=lambda x: TF.softmax(x, dim=1)),
    Case("softmax", lambda x: x.softmax(0), [(3, 4)], label="method_dim0"),
    Case("softmax", lambda x: F.softmax(x, -1), [Input((3, 5), lm.float16)], label="f16",
         ref=lambda x: TF.softmax(x.float(), -1).half()),
    Case("log_softmax", lambda x: F.log_softmax(x, -1), [(3, 5)],
         ref=lambda x: TF.log_softmax(x, -1)),
    Case("log_softmax", lambda x: x.log_softmax(1), [(2, 4, 3)], label="method_dim1"),
    Case("layer_norm", lambda x, w, b: F.layer_norm(x, (6,), w, b), [(4, 6), (6,), (6,)],
         ref=lambda x, w, b: TF.layer_norm(x, (6,), w, b), rtol=1e-4, atol=1e-5),
    Case("layer_norm", lambda x, w: F.layer_norm(x, (3, 4), w, eps=1e-3), [(2, 3, 4), (3, 4)],
         ref=lambda x, w: TF.layer_norm(x, (3, 4), w, eps=1e-3), label="2d_weight_only",
         rtol=1e-4, atol=1e-5),
    Case("layer_norm", lambda x: F.layer_norm(x, [5]), [(3, 5)], label="no_affine",
         ref=lambda x: TF.layer_norm(x, [5]), rtol=1e-4, atol=1e-5),
    Case("layer_norm", lambda x, w, b: F.layer_norm(x, (6,), w, b),
         [Input((4, 6), lm.bfloat16), Input((6,), lm.bfloat16), Input((6,), lm.bfloat16)],
         ref=lambda x, w, b: TF.layer_norm(x, (6,), w, b), label="bf16"),
    Case("rms_norm", lambda x, w: F.rms_norm(x, (8,), w), [(3, 8), (8,)],
         ref=lambda x, w: TF.rms_norm(x, (8,), w), rtol=1e-4, atol=1e-5),
    Case("rms_norm", lambda x: F.rms_norm(x, (3, 4), eps=1e-6), [(2, 3, 4)], label="2d_eps",
         ref=lambda x: TF.rms_norm(x, (3, 4), eps=1e-6), rtol=1e-4, atol=1e-5),
    Case("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), [(2, 6, 3, 3), (6,), (6,)],
         ref=lambda x, w, b: TF.group_norm(x, 3, w, b), rtol=1e-4, atol=1e-5),
    Case("group_norm", lambda x: F.group_norm(x, 2, eps=1e-3), [(3, 4, 5)], label="no_affine",
         ref=lambda x: TF.group_norm(x, 2, eps=1e-3), rtol=1e-4, atol=1e-5),
    Case("group_norm", lambda x, w: F.group_norm(x, 1, w), [(2, 4, 5), (4,)], label="one_group",
         ref=lambda x, w: TF.group_norm(x, 1, w), rtol=1e-4, atol=1e-5),
    Case("batch_norm", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b),
         [(3, 4, 5), (4,), Input((4,), domain=POS), (4,), (4,)],
         ref=lambda x, m, v, w, b: TF.batch_norm(x, m, v, w, b), rtol=1e-4, atol=1e-5),
    Case("batch_norm", lambda x, m, v: F.batch_norm(x, m, v, eps=1e-3),
         [(5, 3), (3,), Input((3,), domain=POS)], label="2d_no_affine",
         ref=lambda x, m, v: TF.batch_norm(x, m, v, eps=1e-3), rtol=1e-4, atol=1e-5),
    Case("batch_norm", lambda x, m, v, w: F.batch_norm(x, m, v, w, training=True),
         [(3, 2, 4, 2), (2,), Input((2,), domain=POS), (2,)], label="training_stats",
         ref=lambda x, m, v, w: TF.batch_norm(x, m.clone(), v.clone(), w, training=True),
         rtol=1e-4, atol=1e-5),
    Case("dropout", lambda x: F.dropout(x, 0.3, training=False), [(3, 4)],
         ref=lambda x: TF.dropout(x, 0.3, training=False)),
    Case("dropout", lambda x: F.dropout(x), [(2, 5)], label="default",
         ref=lambda x: TF.dropout(x, training=False)),
    Case("embedding", lambda i, w: F.embedding(i, w), [idx((2, 5), 7), (7, 4)],
         ref=lambda i, w: TF.embedding(i.long(), w)),
    Case("embedding", lambda i, w: F.embedding(i, w, padding_idx=0), [idx((6,), 3), (3, 2)],
         ref=lambda i, w: TF.embedding(i.long(), w, padding_idx=0), label="1d_padding_idx"),
    Case("linear", lambda x, w, b: F.linear(x, w, b), [(3, 5), (4, 5), (4,)],
         ref=lambda x, w, b: TF.linear(x, w, b), rtol=1e-5, atol=1e-5),
    Case("linear", lambda x, w: F.linear(x, w), [(2, 3, 5), (4, 5)], label="batched_no_bias",
         ref=lambda x, w: TF.linear(x, w), rtol=1e-5, atol=1e-5),
    Case("pad", lambda x: F.pad(x, (1, 2)), [(3, 4)], ref=lambda x: TF.pad(x, (1, 2))),
    Case("pad", lambda x: F.pad(x, (1, 0, 0, 2), value=1.5), [(3, 4)], label="value",
         ref=lambda x: TF.pad(x, (1, 0, 0, 2), value=1.5)),
    Case("relu", lambda x: F.relu(x), [(3, 4)], ref=TF.relu),
    Case("sigmoid", lambda x: F.sigmoid(x), [(3, 4)], ref=torch.sigmoid, atol=1e-6),
    Case("tanh", lambda x: F.tanh(x), [(3, 4)], ref=torch.tanh, atol=1e-6),
    Case("silu", lambda x: F.silu(x), [(3, 4)], ref=TF.silu, atol=1e-6),
    Case("gelu", lambda x: F.gelu(x), [(3, 4)], ref=TF.gelu, atol=1e-6),
    Case("gelu", lambda x: F.gelu(x, approximate="tanh"), [(3, 4)], label="tanh",
         ref=lambda x: TF.gelu(x, approximate="tanh"), atol=1e-6),
]

CONV_TOL = {"rtol": 1e-4, "atol": 1e-5}

CONV_CASES = [
    Case("conv1d", lambda x, w: F.conv1d(x, w), [(2, 3, 10), (4, 3, 3)],
         ref=lambda x, w: TF.conv1d(x, w), **CONV_TOL),
    Case("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
         [(2, 3, 9), (5, 3, 3), (5,)], label="stride_pad_bias",
         ref=lambda x, w, b: TF.conv1d(x, w, b, stride=2, padding=1), **CONV_TOL),
    Case("conv1d", lambda x, w: F.conv1d(x, w, dilation=2, groups=2), [(2, 4, 9), (6, 2, 3)],
         ref=lambda x, w: TF.conv1d(x, w, dilation=2, groups=2), label="dilation_groups",
         **CONV_TOL),
    Case("conv1d", lambda x, w: F.conv1d(x, w, padding="same", dilation=2),
         [(2, 3, 8), (4, 3, 4)], label="same_even_kernel",
         ref=lambda x, w: TF.conv1d(x, w, padding="same", dilation=2), **CONV_TOL),
    Case("conv1d", lambda x, w: F.conv1d(x, w, padding="valid"), [(3, 7), (2, 3, 2)],
         ref=lambda x, w: TF.conv1d(x, w, padding="valid"), label="unbatched_valid",
         variants=("contig", "noncontig"), **CONV_TOL),
    Case("conv2d", lambda x, w: F.conv2d(x, w, padding=1), [(2, 3, 6, 7), (4, 3, 3, 3)],
         ref=lambda x, w: TF.conv2d(x, w, padding=1), **CONV_TOL),
    Case("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2),
                                            dilation=(1, 2)),
         [(2, 3, 7, 6), (4, 3, 3, 2), (4,)], label="stride_pad_dilation_bias",
         ref=lambda x, w, b: TF.conv2d(x, w, b, stride=(2, 1), padding=(1, 2),
                                       dilation=(1, 2)), **CONV_TOL),
    Case("conv2d", lambda x, w: F.conv2d(x, w, padding=1, groups=3), [(2, 3, 5, 5), (6, 1, 3, 3)],
         ref=lambda x, w: TF.conv2d(x, w, padding=1, groups=3), label="depthwise", **CONV_TOL),
    Case("conv2d", lambda x, w: F.conv2d(x, w, padding="same"), [(1, 2, 5, 4), (3, 2, 2, 3)],
         ref=lambda x, w: TF.conv2d(x, w, padding="same"), label="same", **CONV_TOL),
    Case("conv2d", lambda x, w: F.conv2d(x, w, padding=1),
         [Input((2, 3, 5, 4), lm.float16), Input((4, 3, 3, 3), lm.float16)], label="f16",
         ref=lambda x, w: TF.conv2d(x.float(), w.float(), padding=1).half(), rtol=1e-2,
         atol=1e-2),
    Case("conv2d", lambda x, w: F.conv2d(x, w, stride=2), [(2, 4, 6, 6), (3, 4, 1, 1)],
         ref=lambda x, w: TF.conv2d(x, w, stride=2), label="pointwise_stride", **CONV_TOL),
    Case("conv2d", lambda x, w, b: F.conv2d(x, w, b), [(2, 4, 5, 3), (6, 4, 1, 1), (6,)],
         ref=lambda x, w, b: TF.conv2d(x, w, b), label="pointwise", **CONV_TOL),
    Case("conv2d", lambda x, w: F.conv2d(x.permute(0, 1, 3, 2), w, groups=2),
         [(1, 4, 3, 5), (6, 2, 1, 1)], label="pointwise_groups_of_a_view",
         ref=lambda x, w: TF.conv2d(x.permute(0, 1, 3, 2), w, groups=2), **CONV_TOL),
    Case("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w), [(2, 4, 3, 4), (4, 3, 3, 3)],
         ref=lambda x, w: TF.conv_transpose2d(x, w), **CONV_TOL),
    Case("conv_transpose2d",
         lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
         [(2, 4, 3, 4), (4, 3, 3, 3), (3,)], label="stride_pad_outpad_bias",
         ref=lambda x, w, b: TF.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                 output_padding=1), **CONV_TOL),
    Case("conv_transpose2d",
         lambda x, w: F.conv_transpose2d(x, w, stride=(1, 2), groups=2, dilation=(2, 1)),
         [(3, 4, 3, 3), (4, 2, 2, 3)], label="groups_dilation",
         ref=lambda x, w: TF.conv_transpose2d(x, w, stride=(1, 2), groups=2, dilation=(2, 1)),
         **CONV_TOL),
    Case("conv_transpose2d",
         lambda x, w: F.conv_transpose2d(x, w, stride=3, padding=(2, 0), output_padding=(2, 1)),
         [(2, 3, 2, 3), (3, 2, 3, 2)], label="stride3_big_pad",
         ref=lambda x, w: TF.conv_transpose2d(x, w, stride=3, padding=(2, 0),
                                              output_padding=(2, 1)), **CONV_TOL),
    Case("conv_transpose1d", lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1),
         [(2, 3, 5), (3, 4, 3)], ref=lambda x, w: TF.conv_transpose1d(x, w, stride=2, padding=1),
         **CONV_TOL),
    # stride 1: as a convolution (flipped kernel, channels swapped per group)
    Case("conv_transpose2d",
         lambda x, w, b: F.conv_transpose2d(x, w, b, padding=(1, 2), groups=2, dilation=2,
                                            output_padding=(1, 0)),
         [(2, 4, 5, 6), (4, 3, 3, 2), (6,)], label="stride1_pad_groups_dilation_outpad",
         ref=lambda x, w, b: TF.conv_transpose2d(x, w, b, padding=(1, 2), groups=2,
                                                 dilation=2, output_padding=(1, 0)),
         **CONV_TOL),
    Case("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, padding=(3, 1)),
         [(2, 3, 7, 5), (3, 2, 3, 3)], label="stride1_pad_past_the_kernel",
         ref=lambda x, w: TF.conv_transpose2d(x, w, padding=(3, 1)), **CONV_TOL),
    Case("conv_transpose1d", lambda x, w: F.conv_transpose1d(x, w, padding=1),
         [(2, 3, 5), (3, 4, 3)], label="stride1",
         ref=lambda x, w: TF.conv_transpose1d(x, w, padding=1), **CONV_TOL),
    Case("conv_transpose3d", lambda x, w: F.conv_transpose3d(x, w, padding=1),
         [(1, 2, 3, 4, 3), (2, 3, 3, 2, 3)], label="stride1",
         ref=lambda x, w: TF.conv_transpose3d(x, w, padding=1), **CONV_TOL),
]

POOL_CASES = [
    Case("max_pool1d", lambda x: F.max_pool1d(x, 3), [(2, 3, 9)],
         ref=lambda x: TF.max_pool1d(x, 3)),
    Case("max_pool1d", lambda x: F.max_pool1d(x, 3, stride=2, padding=1), [(2, 3, 8)],
         ref=lambda x: TF.max_pool1d(x, 3, stride=2, padding=1), label="stride_pad"),
    Case("max_pool1d", lambda x: F.max_pool1d(x, 2, 2, ceil_mode=True, dilation=2), [(2, 3, 8)],
         ref=lambda x: TF.max_pool1d(x, 2, 2, ceil_mode=True, dilation=2),
         label="ceil_dilation"),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 2), [(2, 3, 6, 5)],
         ref=lambda x: TF.max_pool2d(x, 2)),
    Case("max_pool2d", lambda x: F.max_pool2d(x, (3, 2), stride=(2, 1), padding=1),
         [(2, 3, 7, 6)], label="stride_pad",
         ref=lambda x: TF.max_pool2d(x, (3, 2), stride=(2, 1), padding=1)),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
         [(2, 3, 6, 7)], ref=lambda x: TF.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
         label="ceil_mode"),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 2, 1), [(3, 5, 4)], label="unbatched",
         ref=lambda x: TF.max_pool2d(x, 2, 1)),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, padding=1),
         [Input((2, 3, 5, 6), lm.int32)], label="int_pad",
         ref=lambda x: TF.max_pool2d(x, 3, 2, padding=1)),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, padding=1, return_indices=True)[1],
         [(2, 3, 7, 6)], label="indices",
         ref=lambda x: TF.max_pool2d(x, 3, 2, padding=1, return_indices=True)[1]),
    Case("max_pool2d",
         lambda x: F.max_pool2d(x, 2, 2, dilation=2, ceil_mode=True, return_indices=True)[1],
         [(2, 3, 7, 8)], label="indices_ceil_dilation",
         ref=lambda x: TF.max_pool2d(x, 2, 2, dilation=2, ceil_mode=True,
                                     return_indices=True)[1]),
    Case("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, padding=1, return_indices=True)[1],
         [(2, 3, 8)], label="indices",
         ref=lambda x: TF.max_pool1d(x, 3, 2, padding=1, return_indices=True)[1]),
    Case("avg_pool1d", lambda x: F.avg_pool1d(x, 3), [(2, 3, 9)],
         ref=lambda x: TF.avg_pool1d(x, 3)),
    Case("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, padding=1, count_include_pad=False),
         [(2, 3, 8)], label="exclude_pad",
         ref=lambda x: TF.avg_pool1d(x, 3, 2, padding=1, count_include_pad=False)),
    Case("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, padding=1, ceil_mode=True), [(2, 3, 8)],
         ref=lambda x: TF.avg_pool1d(x, 3, 2, padding=1, ceil_mode=True), label="ceil_pad"),
    Case("avg_pool2d", lambda x: F.avg_pool2d(x, 2), [(2, 3, 6, 4)],
         ref=lambda x: TF.avg_pool2d(x, 2)),
    Case("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, padding=1), [(2, 3, 7, 6)],
         ref=lambda x: TF.avg_pool2d(x, 3, 2, padding=1), label="include_pad"),
    Case("avg_pool2d",
         lambda x: F.avg_pool2d(x, (3, 2), 2, padding=(1, 1), ceil_mode=True,
                                count_include_pad=False),
         [(2, 3, 6, 7)], label="ceil_exclude_pad",
         ref=lambda x: TF.avg_pool2d(x, (3, 2), 2, padding=(1, 1), ceil_mode=True,
                                     count_include_pad=False)),
    Case("avg_pool2d", lambda x: F.avg_pool2d(x, 2, divisor_override=3), [(2, 3, 4, 4)],
         ref=lambda x: TF.avg_pool2d(x, 2, divisor_override=3), label="divisor_override"),
    Case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), [(2, 3, 7, 5)],
         ref=lambda x: TF.adaptive_avg_pool2d(x, (3, 2)), atol=1e-5),
    Case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, 1), [(2, 3, 4, 5)],
         ref=lambda x: TF.adaptive_avg_pool2d(x, 1), label="global", atol=1e-5),
    Case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (None, 4)), [(2, 3, 3, 6)],
         ref=lambda x: TF.adaptive_avg_pool2d(x, (None, 4)), label="none_upsample", atol=1e-5),
]

INTERP_CASES = [
    Case("interpolate", lambda x: F.interpolate(x, size=(7, 3)), [(2, 3, 4, 5)],
         ref=lambda x: TF.interpolate(x, size=(7, 3)), label="nearest_size"),
    Case("interpolate", lambda x: F.interpolate(x, scale_factor=2), [(2, 3, 3, 4)],
         ref=lambda x: TF.interpolate(x, scale_factor=2), label="nearest_x2"),
    Case("interpolate", lambda x: F.interpolate(x, scale_factor=1.7), [(2, 3, 5)],
         ref=lambda x: TF.interpolate(x, scale_factor=1.7), label="nearest_1d_scale"),
    Case("interpolate", lambda x: F.interpolate(x, size=(5, 7), mode="nearest-exact"),
         [(2, 3, 4, 5)], ref=lambda x: TF.interpolate(x, size=(5, 7), mode="nearest-exact"),
         label="nearest_exact"),
    Case("interpolate",
         lambda x: F.interpolate(x, size=(6, 7), mode="bilinear", align_corners=False),
         [(2, 3, 4, 5)], label="bilinear",
         ref=lambda x: TF.interpolate(x, size=(6, 7), mode="bilinear", align_corners=False)),
    Case("interpolate",
         lambda x: F.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True),
         [(2, 3, 4, 5)], label="bilinear_align_corners",
         ref=lambda x: TF.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True)),
    Case("interpolate", lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear"),
         [(2, 3, 4, 3)], label="bilinear_scale",
         ref=lambda x: TF.interpolate(x, scale_factor=1.5, mode="bilinear")),
    Case("interpolate", lambda x: F.interpolate(x, size=4, mode="linear", align_corners=True),
         [(2, 3, 7)], label="linear_downsample",
         ref=lambda x: TF.interpolate(x, size=4, mode="linear", align_corners=True)),
    Case("interpolate", lambda x: F.interpolate(x, size=(2, 3), mode="area"), [(2, 3, 5, 7)],
         ref=lambda x: TF.interpolate(x, size=(2, 3), mode="area"), label="area", atol=1e-5),
]

ATTN_TOL = {"rtol": 1e-4, "atol": 1e-5}


def _causal_ref(q, k, v):
    return TF.scaled_dot_product_attention(q, k, v, is_causal=True)


ATTN_CASES = [
    Case("scaled_dot_product_attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
         [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], ref=TF.scaled_dot_product_attention,
         **ATTN_TOL),
    Case("scaled_dot_product_attention",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
         [(5, 4), (5, 4), (5, 3)], ref=_causal_ref, label="causal_symbolic_seq", **ATTN_TOL),
    Case("scaled_dot_product_attention",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
         [(2, 2, 4, 8), (2, 2, 6, 8), (2, 2, 6, 8)], label="causal_rect_scale",
         ref=lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                             scale=0.3), **ATTN_TOL),
    Case("scaled_dot_product_attention",
         lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
         [(2, 4, 8), (2, 5, 8), (2, 5, 8), Input((4, 5), lm.bool_)], label="bool_mask",
         ref=lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
         **ATTN_TOL),
    Case("scaled_dot_product_attention",
         lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
         [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), (3, 5)], label="float_mask",
         ref=lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
         **ATTN_TOL),
    Case("scaled_dot_product_attention",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         [(2, 4, 3, 8), (2, 2, 3, 8), (2, 2, 3, 8)], label="gqa",
         ref=lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         **ATTN_TOL),
]

LOSS_TOL = {"rtol": 1e-5, "atol": 1e-5}

LOSS_CASES = [
    Case("cross_entropy", lambda x, t: F.cross_entropy(x, t), [(5, 4), idx((5,), 4)],
         ref=lambda x, t: TF.cross_entropy(x, t.long()), **LOSS_TOL),
    Case("cross_entropy", lambda x, t: F.cross_entropy(x, t, reduction="none"),
         [(5, 4), idx((5,), 4)], label="none",
         ref=lambda x, t: TF.cross_entropy(x, t.long(), reduction="none"), **LOSS_TOL),
    Case("cross_entropy", lambda x, t, w: F.cross_entropy(x, t, w, reduction="sum"),
         [(6, 3), idx((6,), 3), Input((3,), domain=POS)], label="weight_sum",
         ref=lambda x, t, w: TF.cross_entropy(x, t.long(), w, reduction="sum"), **LOSS_TOL),
    Case("cross_entropy", lambda x, t, w: F.cross_entropy(x, t, w, ignore_index=1),
         [(6, 3), idx((6,), 3), Input((3,), domain=POS)], label="weight_ignore_mean",
         ref=lambda x, t, w: TF.cross_entropy(x, t.long(), w, ignore_index=1), **LOSS_TOL),
    Case("cross_entropy", lambda x, t: F.cross_entropy(x, t, ignore_index=0,
                                                       label_smoothing=0.2),
         [(6, 4), idx((6,), 4)], label="ignore_smoothing_mean",
         ref=lambda x, t: TF.cross_entropy(x, t.long(), ignore_index=0, label_smoothing=0.2),
         **LOSS_TOL),
    Case("cross_entropy", lambda x, t, w: F.cross_entropy(x, t, w, ignore_index=2,
                                                          label_smoothing=0.1),
         [(6, 4), idx((6,), 4), Input((4,), domain=POS)], label="weight_ignore_smoothing",
         ref=lambda x, t, w: TF.cross_entropy(x, t.long(), w, ignore_index=2,
                                              label_smoothing=0.1), **LOSS_TOL),
    Case("cross_entropy", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1,
                                                       reduction="none"),
         [(3, 4, 2), idx((3, 2), 4)], label="kdim_smoothing_none",
         ref=lambda x, t: TF.cross_entropy(x, t.long(), label_smoothing=0.1, reduction="none"),
         **LOSS_TOL),
    Case("cross_entropy", lambda x, t: F.cross_entropy(x, t.softmax(1), label_smoothing=0.1),
         [(4, 5), (4, 5)], label="probabilities",
         ref=lambda x, t: TF.cross_entropy(x, t.softmax(1), label_smoothing=0.1), **LOSS_TOL),
    Case("cross_entropy", lambda x, t: F.cross_entropy(x, t), [(4,), idx((), 4)],
         ref=lambda x, t: TF.cross_entropy(x, t.long()), label="unbatched", **LOSS_TOL),
    Case("nll_loss", lambda x, t: F.nll_loss(x.log_softmax(1), t), [(5, 3), idx((5,), 3)],
         ref=lambda x, t: TF.nll_loss(x.log_softmax(1), t.long()), **LOSS_TOL),
    Case("mse_loss", lambda a, b: F.mse_loss(a, b), [(3, 4), (3, 4)],
         ref=lambda a, b: TF.mse_loss(a, b), **LOSS_TOL),
    Case("mse_loss", lambda a, b: F.mse_loss(a, b, reduction="sum"), [(3, 4), (3, 4)],
         ref=lambda a, b: TF.mse_loss(a, b, reduction="sum"), label="sum", **LOSS_TOL),
    Case("mse_loss", lambda a, b: F.mse_loss(a, b, reduction="none"), [(2, 3, 4), (2, 3, 4)],
         ref=lambda a, b: TF.mse_loss(a, b, reduction="none"), label="none", **LOSS_TOL),
    Case("l1_loss", lambda a, b: F.l1_loss(a, b), [(3, 4), (3, 4)],
         ref=lambda a, b: TF.l1_loss(a, b), **LOSS_TOL),
    Case("smooth_l1_loss", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), [(3, 4), (3, 4)],
         ref=lambda a, b: TF.smooth_l1_loss(a, b, beta=0.5), **LOSS_TOL),
    Case("huber_loss", lambda a, b: F.huber_loss(a, b, delta=0.7), [(3, 4), (3, 4)],
         ref=lambda a, b: TF.huber_loss(a, b, delta=0.7), **LOSS_TOL),
    Case("binary_cross_entropy_with_logits",
         lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid(), reduction="sum"),
         [(3, 4), (3, 4)],
         ref=lambda a, b: TF.binary_cross_entropy_with_logits(a, b.sigmoid(), reduction="sum"),
         **LOSS_TOL),
    Case("kl_div", lambda a, b: F.kl_div(F.log_softmax(a, 1), b.softmax(1),
                                         reduction="batchmean"), [(3, 4), (3, 4)],
         ref=lambda a, b: TF.kl_div(TF.log_softmax(a, 1), b.softmax(1), reduction="batchmean"),
         **LOSS_TOL),
]

CASES = NORM_CASES + CONV_CASES + POOL_CASES + INTERP_CASES + ATTN_CASES + LOSS_CASES


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_nn_functional(case, variant, runtime):
    check(case, variant, runtime)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_nn_functional_grad(case, variant, runtime):
    check_grad(case, variant, runtime)


def test_attention_fully_masked_row_is_zero(runtime):
    """A query row whose keys are all masked gives zeros, as torch's kernels do, not NaN."""
    mask = torch.tensor([[True, False, True], [False, False, False]])
    q, k, v = torch.randn(2, 4), torch.randn(3, 4), torch.randn(3, 2)
    cx = lm.Graph()
    tq, tk, tv = cx.tensor((2, 4)), cx.tensor((3, 4)), cx.tensor((3, 2))
    tm = cx.tensor((2, 3), lm.bool_)
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm).output()
    rt = cx.search(runtime(), 1)
    for t, d in ((tq, q), (tk, k), (tv, v), (tm, mask)):
        rt.set_data(t, d)
    rt.execute(cx.dyn_map)
    expected = TF.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.equal(expected[1], torch.zeros(2))
    torch.testing.assert_close(torch.from_numpy(rt.get(out)), expected, rtol=1e-5, atol=1e-6)


def test_softmax_infinities(runtime):
    """-inf entries get probability 0; an all -inf row is NaN, as in torch."""
    data = torch.tensor([[0.5, float("-inf"), 1.0], [float("-inf")] * 3])
    cx = lm.Graph()
    x = cx.tensor((2, 3))
    out = F.softmax(x, -1).output()
    log_out = F.log_softmax(x, -1).output()
    rt = cx.search(runtime(), 1)
    rt.set_data(x, data)
    rt.execute(cx.dyn_map)
    torch.testing.assert_close(torch.from_numpy(rt.get(out)), TF.softmax(data, -1),
                               equal_nan=True)
    torch.testing.assert_close(torch.from_numpy(rt.get(log_out)), TF.log_softmax(data, -1),
                               equal_nan=True)
