"""Object-detection glue around a detector's graph, in numpy: letterboxing an image the way
ultralytics does (its cv2 INTER_LINEAR resize reproduced, pad 114, sides rounded to stride
multiples), non-maximum suppression as torchvision.ops.nms computes it (greedy, float32,
boxes offset per class), boxes mapped back to the original image, and an annotated picture
(Pillow). Not here: the network (models/yolo.py), or anything that runs in a graph."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError

PAD_VALUE = 114  # the grey ultralytics pads with
_COEF_BITS = 11  # cv2's INTER_RESIZE_COEF_BITS: linear weights in fixed point, 1.0 = 2048


@dataclass
class Letterbox:
    """Where the resized image lies in the padded one: (h, w) of both, and the top-left pad."""

    original: tuple  # (h, w) of the input image
    resized: tuple  # (h, w) after the aspect-keeping resize
    padded: tuple  # (h, w) of the model input
    top: int
    left: int


def load_image(path) -> np.ndarray:
    """An image file as (h, w, 3) uint8 RGB; a missing or unreadable file is a ValueError
    naming it."""
    from PIL import Image, UnidentifiedImageError

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such image file")
    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"))
    except (UnidentifiedImageError, OSError) as e:
        raise ValueError(f"{path}: not an image Pillow can read ({e})") from None


def letterbox(image, size=640, stride: int = 32, auto: bool = True):
    """``image`` (h, w, 3) uint8 resized to fit ``size`` (an int or (h, w)) keeping its aspect
    ratio, then padded with 114 on both sides: to ``size`` exactly, or with ``auto`` to the
    smallest multiple of ``stride`` (ultralytics' LetterBox, as its predictor calls it).
    Returns the padded (H, W, 3) uint8 image and its Letterbox."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ShapeError(f"letterbox: expected an (h, w, 3) uint8 image, got {image.dtype} of "
                         f"shape {image.shape}")
    new_h, new_w = (size, size) if isinstance(size, int) else tuple(size)
    if new_h % stride or new_w % stride:
        raise ShapeError(f"letterbox: size {(new_h, new_w)} must be a multiple of {stride}")
    h, w = image.shape[:2]
    r = min(new_h / h, new_w / w)
    unpad_w, unpad_h = max(round(w * r), 1), max(round(h * r), 1)
    dw, dh = new_w - unpad_w, new_h - unpad_h
    if auto:
        dw, dh = dw % stride, dh % stride
    if (unpad_h, unpad_w) != (h, w):
        image = resize_linear(image, unpad_h, unpad_w)
    top, bottom = round(dh / 2 - 0.1), round(dh / 2 + 0.1)
    left, right = round(dw / 2 - 0.1), round(dw / 2 + 0.1)
    out = np.full((unpad_h + top + bottom, unpad_w + left + right, 3), PAD_VALUE, np.uint8)
    out[top:top + unpad_h, left:left + unpad_w] = image
    return out, Letterbox((h, w), (unpad_h, unpad_w), out.shape[:2], top, left)


def to_input(boxed) -> np.ndarray:
    """A letterboxed (H, W, 3) uint8 image as the model's (1, 3, H, W) float32 in [0, 1]."""
    return np.ascontiguousarray(boxed.transpose(2, 0, 1)[None], dtype=np.float32) / 255.0


def resize_linear(image, out_h: int, out_w: int) -> np.ndarray:
    """cv2.resize(image, (out_w, out_h), interpolation=INTER_LINEAR) on uint8: half-pixel
    centres, edge samples clamped, 11-bit fixed-point weights and cv2's rounding; an exact
    halving of both sides is a 2x2 mean, as cv2 switches to INTER_AREA there."""
    h, w = image.shape[:2]
    if out_h * 2 == h and out_w * 2 == w:
        s = image.astype(np.int32)
        total = s[0::2, 0::2] + s[1::2, 0::2] + s[0::2, 1::2] + s[1::2, 1::2]
        return ((total + 2) >> 2).astype(np.uint8)
    x0, x1, ax0, ax1 = _linear_taps(w, out_w)
    y0, y1, by0, by1 = _linear_taps(h, out_h)
    s = image.astype(np.int64)
    rows = s[:, x0] * ax0[:, None] + s[:, x1] * ax1[:, None]  # (h, out_w, 3), 2048 = 1.0
    top, bottom = rows[y0] >> 4, rows[y1] >> 4
    # cv2's vector path: (((r0 >> 4) * b0) >> 16) + (((r1 >> 4) * b1) >> 16) + 2) >> 2
    out = ((top * by0[:, None, None]) >> 16) + ((bottom * by1[:, None, None]) >> 16)
    return np.clip((out + 2) >> 2, 0, 255).astype(np.uint8)


def _linear_taps(n: int, out: int):
    """For each output place: the two source indices and their fixed-point weights."""
    scale = 1.0 / (out / n)
    f = ((np.arange(out) + 0.5) * scale - 0.5).astype(np.float32)
    i0 = np.floor(f).astype(np.int64)
    frac = f - i0.astype(np.float32)
    low = i0 < 0
    high = i0 >= n - 1
    frac[low | high] = 0
    i0[low] = 0
    i0[high] = n - 1
    one = 1 << _COEF_BITS
    a0 = np.rint((np.float32(1) - frac) * np.float32(one)).astype(np.int64)
    a1 = np.rint(frac * np.float32(one)).astype(np.int64)
    return i0, np.minimum(i0 + 1, n - 1), a0, a1


def non_max_suppression(boxes, scores, classes, conf: float = 0.25, iou: float = 0.7,
                        max_det: int = 300, max_nms: int = 30000, max_wh: int = 7680,
                        agnostic: bool = False) -> np.ndarray:
    """ultralytics' non_max_suppression (best class per box) from a detector's per-anchor
    xyxy ``boxes`` (n, 4), best-class ``scores`` (n,) and ``classes`` (n,): the boxes scoring
    over ``conf``, then greedy NMS per class at IoU ``iou`` in float32 as torchvision.ops.nms.
    Returns (k, 6) float32 rows x1, y1, x2, y2, score, class, by descending score."""
    for name, value in (("conf", conf), ("iou", iou)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"non_max_suppression: {name} must be in [0, 1], got {value}")
    boxes = np.asarray(boxes, np.float32)
    scores = np.asarray(scores, np.float32)
    classes = np.asarray(classes).astype(np.float32)
    keep = scores > conf
    boxes, scores, classes = boxes[keep], scores[keep], classes[keep]
    if len(scores) > max_nms:
        top = np.argsort(-scores, kind="stable")[:max_nms]
        boxes, scores, classes = boxes[top], scores[top], classes[top]
    offset = classes[:, None] * np.float32(0 if agnostic else max_wh)
    kept = _greedy_nms(boxes + offset, scores, iou)[:max_det]
    return np.concatenate([boxes[kept], scores[kept, None], classes[kept, None]], 1)


def _greedy_nms(boxes, scores, threshold: float) -> np.ndarray:
    """torchvision's CPU nms: visit boxes by descending score (stable), keep each one not yet
    suppressed and suppress the later ones overlapping it by IoU > ``threshold``."""
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(-scores, kind="stable")
    suppressed = np.zeros(len(order), bool)
    kept = []
    for n, i in enumerate(order):
        if suppressed[i]:
            continue
        kept.append(i)
        rest = order[n + 1:]
        w = np.maximum(np.float32(0), np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]))
        h = np.maximum(np.float32(0), np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]))
        inter = w * h
        overlap = inter / (areas[i] + areas[rest] - inter)
        suppressed[rest[overlap > threshold]] = True
    return np.array(kept, np.int64)


def scale_boxes(boxes, box: Letterbox) -> np.ndarray:
    """xyxy ``boxes`` (k, 4) in the letterboxed image mapped to the original one and clipped
    to it (ultralytics' scale_boxes)."""
    h0, w0 = box.original
    h1, w1 = box.padded
    gain = min(h1 / h0, w1 / w0)
    new_h, new_w = max(round(h0 * gain), 1), max(round(w0 * gain), 1)
    pad_x, pad_y = round((w1 - new_w) / 2 - 0.1), round((h1 - new_h) / 2 - 0.1)
    out = np.array(boxes, np.float32, copy=True).reshape(-1, 4)
    out[:, [0, 2]] = (out[:, [0, 2]] - np.float32(pad_x)) / np.float32(new_w / w0)
    out[:, [1, 3]] = (out[:, [1, 3]] - np.float32(pad_y)) / np.float32(new_h / h0)
    out[:, [0, 2]] = out[:, [0, 2]].clip(0, w0)
    out[:, [1, 3]] = out[:, [1, 3]].clip(0, h0)
    return out


def draw_detections(image, detections, names, path) -> None:
    """Writes ``image`` (h, w, 3) uint8 with each detection (x1, y1, x2, y2, score, class, in
    its coordinates) drawn as a box labelled "name score" to ``path`` (PNG)."""
    from PIL import Image, ImageDraw

    picture = Image.fromarray(np.asarray(image, np.uint8))
    draw = ImageDraw.Draw(picture)
    for x1, y1, x2, y2, score, cls in detections:
        colour = _colour(int(cls))
        draw.rectangle([float(x1), float(y1), float(x2), float(y2)], outline=colour, width=2)
        label = f"{class_name(names, int(cls))} {score:.2f}"
        left, top, right, bottom = draw.textbbox((float(x1), float(y1)), label)
        lift = bottom - top + 2 if top - (bottom - top + 2) >= 0 else 0  # inside at the top
        draw.rectangle([left, top - lift, right + 2, bottom - lift], fill=colour)
        draw.text((float(x1) + 1, float(y1) - lift), label, fill=(255, 255, 255))
    picture.save(os.fspath(path), format="PNG")


def class_name(names, cls: int) -> str:
    return names[cls] if names is not None and 0 <= cls < len(names) else f"class{cls}"


def _colour(cls: int):
    """A stable, distinct colour per class (golden-angle hues)."""
    import colorsys

    r, g, b = colorsys.hsv_to_rgb((cls * 0.618034) % 1.0, 0.85, 0.9)
    return int(r * 255), int(g * 255), int(b * 255)
