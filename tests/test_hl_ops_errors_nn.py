"""Bad input to luminal.nn.functional raises ShapeError / DTypeError naming the op and the
shapes, before anything is compiled (torch raises for the same inputs)."""

import pytest
import torch
import torch.nn.functional as TF

import luminal as lm
import luminal.nn.functional as F


def _torch_raises(fn):
    with pytest.raises((RuntimeError, ValueError, IndexError, TypeError)):
        fn()


def test_conv2d_channel_mismatch():
    cx = lm.Graph()
    x, w = cx.tensor((2, 3, 5, 5)), cx.tensor((4, 2, 3, 3))
    with pytest.raises(lm.ShapeError, match=r"conv2d.*\(2, 3, 5, 5\).*3 channels.*\(4, 2, 3, 3\)"):
        F.conv2d(x, w)
    _torch_raises(lambda: TF.conv2d(torch.randn(2, 3, 5, 5), torch.randn(4, 2, 3, 3)))


def test_conv2d_groups_and_rank():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match=r"conv2d.*groups=2"):
        F.conv2d(cx.tensor((1, 4, 5, 5)), cx.tensor((3, 2, 3, 3)), groups=2)
    with pytest.raises(lm.ShapeError, match=r"conv2d: expected a 3-D.*4-D.*\(5, 5\)"):
        F.conv2d(cx.tensor((5, 5)), cx.tensor((3, 1, 3, 3)))
    with pytest.raises(lm.ShapeError, match=r"conv2d.*smaller than the kernel span"):
        F.conv2d(cx.tensor((1, 1, 2, 2)), cx.tensor((1, 1, 3, 3)))
    with pytest.raises(lm.ShapeError, match=r"padding='same' needs stride 1"):
        F.conv2d(cx.tensor((1, 1, 5, 5)), cx.tensor((1, 1, 3, 3)), stride=2, padding="same")


def test_conv_transpose2d_channel_mismatch():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match=r"conv_transpose2d.*\(1, 3, 4, 4\).*3 channels"):
        F.conv_transpose2d(cx.tensor((1, 3, 4, 4)), cx.tensor((4, 2, 3, 3)))
    with pytest.raises(lm.ShapeError, match=r"output_padding"):
        F.conv_transpose2d(cx.tensor((1, 4, 4, 4)), cx.tensor((4, 2, 3, 3)), output_padding=1)


def test_layer_norm_bad_normalized_shape():
    cx = lm.Graph()
    x = cx.tensor((2, 3, 4))
    with pytest.raises(lm.ShapeError, match=r"layer_norm: normalized_shape \(3,\).*\(2, 3, 4\)"):
        F.layer_norm(x, (3,))
    _torch_raises(lambda: TF.layer_norm(torch.randn(2, 3, 4), (3,)))
    with pytest.raises(lm.ShapeError, match=r"layer_norm: weight has shape \(3,\)"):
        F.layer_norm(x, (4,), cx.tensor((3,)))
    with pytest.raises(lm.ShapeError, match=r"rms_norm: normalized_shape"):
        F.rms_norm(x, (2, 4))


def test_group_and_batch_norm_shapes():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match=r"group_norm: 6 channels.*\(2, 6, 3\).*4 groups"):
        F.group_norm(cx.tensor((2, 6, 3)), 4)
    with pytest.raises(lm.ShapeError, match=r"batch_norm: running_mean has shape \(3,\)"):
        F.batch_norm(cx.tensor((2, 4, 3)), cx.tensor((3,)), cx.tensor((4,)))


def test_pooling_errors():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match=r"max_pool2d: padding \(2, 2\).*half"):
        F.max_pool2d(cx.tensor((1, 1, 6, 6)), 3, padding=2)
    _torch_raises(lambda: TF.max_pool2d(torch.randn(1, 1, 6, 6), 3, padding=2))
    with pytest.raises(lm.ShapeError, match=r"avg_pool2d.*\(1, 1, 2, 2\).*too small"):
        F.avg_pool2d(cx.tensor((1, 1, 2, 2)), 3)
    with pytest.raises(lm.ShapeError, match=r"max_pool1d: expected an input with at least 2"):
        F.max_pool1d(cx.tensor((5,)), 2)


def test_attention_shapes():
    cx = lm.Graph()
    q, k, v = cx.tensor((2, 4, 8)), cx.tensor((2, 5, 6)), cx.tensor((2, 5, 8))
    with pytest.raises(lm.ShapeError, match=r"scaled_dot_product_attention: query of shape "
                                            r"\(2, 4, 8\) and key of shape \(2, 5, 6\)"):
        F.scaled_dot_product_attention(q, k, v)
    with pytest.raises(lm.ShapeError, match=r"attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, v, v, attn_mask=cx.tensor((4, 5)), is_causal=True)
    with pytest.raises(lm.ShapeError, match=r"key of shape \(2, 5, 8\) and value of shape "
                                            r"\(2, 4, 8\) differ in the sequence dim"):
        F.scaled_dot_product_attention(q, v, cx.tensor((2, 4, 8)))


def test_loss_errors():
    cx = lm.Graph()
    x = cx.tensor((5, 4))
    with pytest.raises(lm.ShapeError, match=r"cross_entropy: target of shape \(4,\).*\(5, 4\)"):
        F.cross_entropy(x, cx.tensor((4,), lm.int32))
    with pytest.raises(lm.DTypeError, match=r"nll_loss: class-index target must be an int"):
        F.nll_loss(x, cx.tensor((5,), lm.bool_))
    with pytest.raises(lm.ShapeError, match=r"mse_loss: shapes \(5, 4\) and \(3,\)"):
        F.mse_loss(x, cx.tensor((3,)))
    with pytest.raises(lm.ShapeError, match=r"reduction must be"):
        F.mse_loss(x, x, reduction="avg")


def test_embedding_and_linear_errors():
    cx = lm.Graph()
    with pytest.raises(lm.DTypeError, match=r"embedding: indices must be an int tensor"):
        F.embedding(cx.tensor((3,)), cx.tensor((5, 2)))
    with pytest.raises(lm.ShapeError, match=r"linear: input of shape \(3, 5\).*\(4, 6\)"):
        F.linear(cx.tensor((3, 5)), cx.tensor((4, 6)))


def test_interpolate_errors():
    cx = lm.Graph()
    x = cx.tensor((1, 2, 4, 4))
    with pytest.raises(lm.ShapeError, match=r"interpolate: mode 'linear' needs 1 spatial dims"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(lm.ShapeError, match=r"exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(lm.ShapeError, match=r"align_corners only applies"):
        F.interpolate(x, size=3, align_corners=True)


def test_softmax_bad_dim():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match=r"softmax: dim 2 is out of range for shape"):
        F.softmax(cx.tensor((2, 3)), 2)
