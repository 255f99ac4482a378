"""YOLOv8 object detection as luminal.nn modules, built from ultralytics' yolov8.yaml layer
table scaled by (depth, width, max_channels) exactly as its parse_model does, with its module
names (model.0.conv.weight, model.22.dfl.conv.weight, ...), so its state dicts load
unchanged. The graph ends in the decoded head (1, 4 + nc, anchors): DFL box distances to
xywh boxes in input pixels and class sigmoids, then each anchor's xyxy box and best class;
YOLODetector compiles it per input shape and runs NMS (models/detection.py) in numpy.
Not here: image and box handling (detection.py), checkpoint reading (weights/)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError, WeightsError
from ..graph import Graph
from ..hl_ops.joining import cat
from ..nn import functional as F
from ..nn.layers import BatchNorm2d, Conv2d, weight_for
from ..nn.module import Module, ModuleList, Sequential
from ..runtime import NativeRuntime
from . import detection

# ultralytics' yolov8.yaml scales: depth_multiple, width_multiple, max_channels
SCALES = {"n": (0.33, 0.25, 1024), "s": (0.33, 0.50, 1024), "m": (0.67, 0.75, 768),
          "l": (1.00, 1.00, 512), "x": (1.00, 1.25, 512)}
# yolov8.yaml's layers: (from, repeats, module, args); "from" -1 is the layer before
LAYERS = [
    (-1, 1, "Conv", [64, 3, 2]),  # 0 P1/2
    (-1, 1, "Conv", [128, 3, 2]),  # 1 P2/4
    (-1, 3, "C2f", [128, True]),
    (-1, 1, "Conv", [256, 3, 2]),  # 3 P3/8
    (-1, 6, "C2f", [256, True]),
    (-1, 1, "Conv", [512, 3, 2]),  # 5 P4/16
    (-1, 6, "C2f", [512, True]),
    (-1, 1, "Conv", [1024, 3, 2]),  # 7 P5/32
    (-1, 3, "C2f", [1024, True]),
    (-1, 1, "SPPF", [1024, 5]),  # 9
    (-1, 1, "Upsample", []),
    ([-1, 6], 1, "Concat", []),
    (-1, 3, "C2f", [512]),  # 12
    (-1, 1, "Upsample", []),
    ([-1, 4], 1, "Concat", []),
    (-1, 3, "C2f", [256]),  # 15 (P3/8, small objects)
    (-1, 1, "Conv", [256, 3, 2]),
    ([-1, 12], 1, "Concat", []),
    (-1, 3, "C2f", [512]),  # 18 (P4/16, medium)
    (-1, 1, "Conv", [512, 3, 2]),
    ([-1, 9], 1, "Concat", []),
    (-1, 3, "C2f", [1024]),  # 21 (P5/32, large)
    ([15, 18, 21], 1, "Detect", []),
]
STRIDES = (8, 16, 32)  # of the Detect inputs P3, P4, P5
BN_EPS = 1e-3  # ultralytics' initialize_weights sets every BatchNorm2d's eps to this
COCO_NAMES = (
    "person bicycle car motorcycle airplane bus train truck boat traffic_light fire_hydrant "
    "stop_sign parking_meter bench bird cat dog horse sheep cow elephant bear zebra giraffe "
    "backpack umbrella handbag tie suitcase frisbee skis snowboard sports_ball kite "
    "baseball_bat baseball_glove skateboard surfboard tennis_racket bottle wine_glass cup fork "
    "knife spoon bowl banana apple sandwich orange broccoli carrot hot_dog pizza donut cake "
    "chair couch potted_plant bed dining_table toilet tv laptop mouse remote keyboard "
    "cell_phone microwave oven toaster sink refrigerator book clock vase scissors teddy_bear "
    "hair_drier toothbrush").replace("_", " ").split(" ")


@dataclass
class YOLOConfig:
    """A YOLOv8's size: depth and width multiples, channel cap, classes (and their names)."""

    depth: float = 0.33
    width: float = 0.25
    max_channels: int = 1024
    nc: int = 80
    names: list = field(default=None)
    reg_max: int = 16

    @classmethod
    def from_scale(cls, scale: str, nc: int = 80, names=None) -> YOLOConfig:
        if scale not in SCALES:
            raise WeightsError(f"YOLOv8 scale {scale!r} is not one of {', '.join(SCALES)}")
        depth, width, max_channels = SCALES[scale]
        return cls(depth, width, max_channels, nc, names)

    @classmethod
    def from_dict(cls, d: dict, source: str = "YOLOv8 config") -> YOLOConfig:
        """From {"scale": "n"} or {"depth_multiple", "width_multiple", "max_channels"}, plus
        "nc" and optional "names" (a list, or ultralytics' {index: name} dict)."""
        try:
            nc = int(d.get("nc", 80))
            names = _names_list(d.get("names"), nc)
            scale = d.get("scale")
            if isinstance(d.get("scales"), dict) and scale in d["scales"]:  # a model's yaml
                depth, width, max_channels = d["scales"][scale]
                return cls(float(depth), float(width), int(max_channels), nc, names)
            if scale in SCALES and "width_multiple" not in d:
                return cls.from_scale(scale, nc, names)
            if "width_multiple" not in d:
                raise KeyError("scale or width_multiple")
            return cls(float(d["depth_multiple"]), float(d["width_multiple"]),
                       int(d.get("max_channels", 1024)), nc, names)
        except (KeyError, TypeError, ValueError) as e:
            raise WeightsError(f"{source}: not a YOLOv8 config ({type(e).__name__}: {e}); "
                               f"expected scale (n, s, m, l, x) or depth_multiple / "
                               f"width_multiple / max_channels, and nc") from None

    def channels(self, c: int) -> int:
        """ultralytics' make_divisible(min(c, max_channels) * width, 8)."""
        return math.ceil(min(c, self.max_channels) * self.width / 8) * 8

    def repeats(self, n: int) -> int:
        return max(round(n * self.depth), 1) if n > 1 else n


def _names_list(names, nc: int):
    if names is None:
        return list(COCO_NAMES) if nc == len(COCO_NAMES) else None
    if isinstance(names, dict):
        names = [names[k] for k in sorted(names, key=int)]
    return [str(n) for n in names]


class Conv(Module):
    """ultralytics' Conv: Conv2d (no bias, 'same' padding) + BatchNorm2d + SiLU."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, act: bool = True):
        super().__init__()
        self.conv = Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = BatchNorm2d(c2, BN_EPS)
        self.act = act

    def forward(self, x):
        y = self.bn(self.conv(x))
        return y.silu() if self.act else y


class Bottleneck(Module):
    """Two 3x3 Convs, with the input added back when ``shortcut``."""

    def __init__(self, c1: int, c2: int, shortcut: bool):
        super().__init__()
        self.cv1 = Conv(c1, c2, 3)
        self.cv2 = Conv(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(Module):
    """CSP bottleneck with 2 convolutions: cv1 splits in two halves, each Bottleneck feeds on
    the last piece, cv2 merges all pieces."""

    def __init__(self, c1: int, c2: int, n: int, shortcut: bool = False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = ModuleList(Bottleneck(self.c, self.c, shortcut) for _ in range(n))

    def forward(self, x):
        pieces = list(self.cv1(x).split(self.c, 1))
        for block in self.m:
            pieces.append(block(pieces[-1]))
        return self.cv2(cat(pieces, 1))


class SPPF(Module):
    """Spatial pyramid pooling, fast: three chained 5x5 max pools (YOLOv8's, cv1 activated),
    the four maps merged by cv2. cv2's 1x1 conv of their concatenation is computed as the sum
    of its four column blocks applied to each map, without the concatenation: CpuRuntime's
    lowering fuses a max pool read through a cat's padded view into the cat's kernel with
    unmasked loads, which read outside the pool's input (a crash from 224x224 up)."""

    def __init__(self, c1: int, c2: int, k: int = 5):
        super().__init__()
        self.c = c1 // 2
        self.cv1 = Conv(c1, self.c, 1)
        self.cv2 = Conv(self.c * 4, c2, 1)
        self.k = k

    def forward(self, x):
        pieces = [self.cv1(x)]
        for _ in range(3):
            pieces.append(F.max_pool2d(pieces[-1], self.k, 1, self.k // 2))
        w = weight_for(self.cv2.conv.weight, x)  # (c2, 4c, 1, 1)
        y = None
        for i, piece in enumerate(pieces):
            part = F.conv2d(piece, w[:, i * self.c:(i + 1) * self.c])
            y = part if y is None else y + part
        return self.cv2.bn(y).silu()


class Upsample(Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="nearest")


class Concat(Module):
    def forward(self, xs):
        return cat(xs, 1)


class DFL(Module):
    """Distribution focal loss integral: each box side's reg_max logits -> softmax ->
    expected bin, weighted by conv.weight (0, 1, ..., reg_max - 1 in every checkpoint)."""

    def __init__(self, reg_max: int = 16):
        super().__init__()
        self.reg_max = reg_max
        self.conv = Conv2d(reg_max, 1, 1, bias=False)

    def forward(self, x):
        b, _, a = x.st.dims  # (batch, 4 * reg_max, anchors)
        probs = x.reshape([b, 4, self.reg_max, a]).softmax(2)
        bins = weight_for(self.conv.weight, x).reshape([1, 1, self.reg_max, 1])
        return (probs * bins).sum(2)  # (batch, 4, anchors)


class Detect(Module):
    """The decoupled head: per level a box branch (cv2: 4 * reg_max DFL logits) and a class
    branch (cv3: nc logits); decoded to (batch, 4 + nc, anchors) rows cx, cy, w, h (input
    pixels) and class probabilities, anchors ordered level by level, row-major."""

    def __init__(self, nc: int, ch, reg_max: int = 16):
        super().__init__()
        self.nc = nc
        self.reg_max = reg_max
        c2 = max(16, ch[0] // 4, reg_max * 4)
        c3 = max(ch[0], min(nc, 100))
        self.cv2 = ModuleList(Sequential([Conv(c, c2, 3), Conv(c2, c2, 3),
                                          Conv2d(c2, 4 * reg_max, 1)]) for c in ch)
        self.cv3 = ModuleList(Sequential([Conv(c, c3, 3), Conv(c3, c3, 3), Conv2d(c3, nc, 1)])
                              for c in ch)
        self.dfl = DFL(reg_max)

    def forward(self, feats):
        b = feats[0].st.dims[0]
        boxes, scores, sizes = [], [], []
        for x, box_head, cls_head in zip(feats, self.cv2, self.cv3):
            h, w = (int(d.as_const()) for d in x.st.dims[2:])
            sizes.append((h, w))
            boxes.append(box_head(x).reshape([b, 4 * self.reg_max, h * w]))
            scores.append(cls_head(x).reshape([b, self.nc, h * w]))
        dist = self.dfl(cat(boxes, 2))  # (b, 4, A): left, top, right, bottom in cells
        anchors, strides = _anchors(feats[0].graph, sizes)
        x1y1 = anchors - dist[:, :2]
        x2y2 = anchors + dist[:, 2:]
        xywh = cat([(x1y1 + x2y2) / 2, x2y2 - x1y1], 1) * strides
        return cat([xywh, cat(scores, 2).sigmoid()], 1)


def _anchors(graph, sizes):
    """Cell centres (1, 2, A) in cells and each anchor's stride (1, 1, A), level by level
    (ultralytics' make_anchors with offset 0.5)."""
    xs, ys, strides = [], [], []
    for (h, w), stride in zip(sizes, STRIDES):
        xs.append(graph.iota(Expr("z") % w, h * w))
        ys.append(graph.iota(Expr("z") // w, h * w))
        strides.append(graph.full((h * w,), float(stride)))
    a = sum(h * w for h, w in sizes)
    centres = cat([cat(xs, 0).reshape([1, a]), cat(ys, 0).reshape([1, a])], 0)
    return (centres.to(dt.float32) + 0.5).reshape([1, 2, a]), cat(strides, 0).reshape([1, 1, a])


class YOLOv8(Module):
    """YOLOv8 detection: (batch, 3, H, W) RGB in [0, 1], H and W multiples of 32 ->
    (batch, 4 + nc, H*W/64 + H*W/256 + H*W/1024) decoded predictions (ultralytics'
    DetectionModel output in eval mode)."""

    def __init__(self, config: YOLOConfig):
        super().__init__()
        self.config = config
        self.froms = []
        layers, channels = [], []
        for i, (f, n, kind, args) in enumerate(LAYERS):
            c1 = 3 if i == 0 else channels[f] if isinstance(f, int) else None
            n = config.repeats(n)
            if kind == "Conv":
                c2 = config.channels(args[0])
                layer = Conv(c1, c2, args[1], args[2])
            elif kind == "C2f":
                c2 = config.channels(args[0])
                layer = C2f(c1, c2, n, shortcut=bool(args[1]) if len(args) > 1 else False)
            elif kind == "SPPF":
                c2 = config.channels(args[0])
                layer = SPPF(c1, c2, args[1])
            elif kind == "Upsample":
                c2, layer = c1, Upsample()
            elif kind == "Concat":
                c2, layer = sum(channels[j] for j in f), Concat()
            else:
                c2, layer = None, Detect(config.nc, [channels[j] for j in f], config.reg_max)
            layers.append(layer)
            channels.append(c2)
            self.froms.append(f)
        self.model = ModuleList(layers)
        self.weights = None
        self.random_weights = False  # a weights file whose metadata says "random": "true"

    def forward(self, x):
        if x.ndim != 4 or any(not d.is_const() for d in x.st.dims):
            raise ShapeError(f"YOLOv8: expected a (batch, 3, H, W) input of fixed size, got "
                             f"shape {x.shape}")
        c, h, w = (int(d.as_const()) for d in x.st.dims[1:])
        if c != 3 or h % 32 or w % 32:
            raise ShapeError(f"YOLOv8: input shape {x.shape} must be (batch, 3, H, W) with H "
                             f"and W multiples of 32")
        outputs = []
        for f, layer in zip(self.froms, self.model):
            if isinstance(f, int):
                inp = x if f == -1 else outputs[f]
            else:
                inp = [x if j == -1 else outputs[j] for j in f]
            x = layer(inp)
            outputs.append(x)
        return x

    @classmethod
    def from_file(cls, path, config: YOLOConfig | None = None) -> YOLOv8:
        """A model from weights: ultralytics' own .pt checkpoint (read without torch or
        ultralytics, see weights/ultralytics_pt.py), or a .safetensors state dict whose size
        comes from ``config``, its metadata ("scale" or "depth_multiple"/"width_multiple"/
        "max_channels", "nc", "names" as JSON, "random": "true" for random weights) or a
        .json of the same keys beside it."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise WeightsError(f"{path}: no such weights file")
        if path.endswith(".pt"):
            from ..weights.ultralytics_pt import load_ultralytics_checkpoint

            weights, meta = load_ultralytics_checkpoint(path)
            _check_layout(meta.pop("modules"), path)
        else:
            from ..weights.safetensors import load_safetensors

            weights = load_safetensors(path)
            meta = _safetensors_config(weights, path)
        if config is None:
            config = YOLOConfig.from_dict(meta, path)
        model = cls(config)
        model.check_weights(weights, path)
        model.weights = weights
        model.random_weights = str(meta.get("random", "")).lower() in ("1", "true")
        return model

    def check_weights(self, weights, source: str) -> None:
        """A WeightsError naming the tensors when ``weights`` lacks one of the model's, has
        one it does not know, or one of another shape (a wrong scale or nc): before any
        compile, so a bad file fails fast."""
        params = dict(self.named_parameters())
        keys = {k for k in weights.keys() if not k.endswith("num_batches_tracked")}
        missing = sorted(set(params) - keys)
        unexpected = sorted(keys - set(params))
        if missing or unexpected:
            raise WeightsError(f"{source}: not the state dict of this YOLOv8: missing "
                               f"{len(missing)} tensor(s) {missing[:4]}, unexpected "
                               f"{len(unexpected)} {unexpected[:4]}")
        for name, p in params.items():
            shape = tuple(np.shape(weights[name]))
            if shape != p.shape:
                raise WeightsError(f"{source}: tensor '{name}' has shape {shape}, this YOLOv8 "
                                   f"(width {self.config.width}, depth {self.config.depth}, "
                                   f"{self.config.nc} classes) expects {p.shape}")

    def load_weights(self, runtime, weights=None) -> None:
        weights = weights if weights is not None else self.weights
        counters = [k for k in weights.keys() if k.endswith("num_batches_tracked")]
        self.load_state_dict(runtime, weights, ignore=counters)


def _check_layout(layers, path: str) -> None:
    """A WeightsError unless a checkpoint's layers (class names per sub-module path, from
    weights/ultralytics_pt.py) are YOLOv8 detection's: the layer table, SiLU activations and
    the v8 head (no depthwise class branch)."""
    if len(layers) != len(LAYERS):
        raise WeightsError(f"{path}: the model has {len(layers)} layers; a YOLOv8 detection "
                           f"model has {len(LAYERS)} (is it another YOLO version or task?)")
    for i, (kinds, (_, _, kind, _)) in enumerate(zip(layers, LAYERS)):
        if kinds.get("") != kind:
            raise WeightsError(f"{path}: layer {i} is {kinds.get('')}, where YOLOv8 has "
                               f"{kind} (is it another YOLO version or task?)")
        for sub, sub_kind in kinds.items():
            if sub.split(".")[-1] == "act" and sub_kind != "SiLU":
                raise WeightsError(f"{path}: model.{i}.{sub} is {sub_kind}; YOLOv8 uses SiLU")
    if layers[-1].get("cv3.0.0") != "Conv":
        raise WeightsError(f"{path}: the Detect head's class branch is not YOLOv8's (a "
                           f"{layers[-1].get('cv3.0.0')} where YOLOv8 has a Conv)")


def _safetensors_config(weights, path: str) -> dict:
    meta = dict(getattr(weights, "metadata", None) or {})
    beside = os.path.splitext(path)[0] + ".json"
    if not meta and os.path.isfile(beside):
        try:
            with open(beside) as f:
                meta = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise WeightsError(f"{beside}: not a readable JSON config ({e})") from None
    if not meta:
        raise WeightsError(f"{path}: no YOLOv8 config: give the safetensors file metadata "
                           f"(scale, nc) or put {os.path.basename(beside)} beside it")
    if isinstance(meta.get("names"), str):
        try:
            meta["names"] = json.loads(meta["names"])
        except json.JSONDecodeError:
            raise WeightsError(f"{path}: metadata 'names' is not JSON") from None
    return meta


def candidates(predictions):
    """(batch, 4 + nc, A) predictions -> xyxy boxes (batch, A, 4), best class score
    (batch, A) and its index (batch, A): what NMS reads, computed in the graph."""
    xy, half = predictions[:, :2], predictions[:, 2:4] / 2
    boxes = cat([xy - half, xy + half], 1).permute([0, 2, 1])
    best = predictions[:, 4:].max(1)
    return boxes, best.values, best.indices


class YOLODetector:
    """A YOLOv8 compiled on a runtime, one program per input shape (letterboxed images of
    one aspect ratio share it). ``detect(image)`` returns (k, 6) rows x1, y1, x2, y2, score,
    class in the image's own pixel coordinates."""

    def __init__(self, model: YOLOv8, runtime=None, search: int = 1, imgsz: int = 640,
                 auto: bool = True):
        self.model = model
        self.runtime = runtime if runtime is not None else NativeRuntime()
        self.search = search
        self.imgsz = imgsz
        self.auto = auto
        self._programs = {}

    @property
    def names(self):
        return self.model.config.names

    def program(self, h: int, w: int):
        """(runtime, graph, input, outputs) for (1, 3, h, w) inputs, compiled on first use."""
        if (h, w) not in self._programs:
            cx = Graph()
            image = cx.tensor((1, 3, h, w), dt.float32, "images")
            raw = self.model(image)
            outputs = [raw.output()] + [t.output() for t in candidates(raw)]
            rt = cx.search(self._fresh_runtime(), self.search)
            self.model.load_weights(rt)
            self._programs[(h, w)] = (rt, cx, image, outputs)
        return self._programs[(h, w)]

    def _fresh_runtime(self):
        if not self._programs:
            return self.runtime
        return type(self.runtime)()  # one runtime holds one program

    def predict(self, images):
        """(1, 3, H, W) float32 in [0, 1] -> (raw (1, 4 + nc, A), boxes (A, 4), scores (A,),
        classes (A,))."""
        images = np.ascontiguousarray(images, np.float32)
        if images.ndim != 4 or images.shape[:2] != (1, 3):
            raise ShapeError(f"YOLODetector: expected a (1, 3, H, W) image batch, got shape "
                             f"{images.shape}")
        rt, cx, inp, (raw, boxes, scores, classes) = self.program(*images.shape[2:])
        with rt.sequence():  # callers in other threads wait their turn
            rt.set_data(inp, images)
            rt.execute(cx.dyn_map)
            return rt.get(raw), rt.get(boxes)[0], rt.get(scores)[0], rt.get(classes)[0]

    def detect(self, image, conf: float = 0.25, iou: float = 0.7, max_det: int = 300):
        """``image`` (h, w, 3) uint8 RGB -> (k, 6) float32 detections in its coordinates."""
        boxed, box = detection.letterbox(image, self.imgsz, 32, self.auto)
        _, boxes, scores, classes = self.predict(detection.to_input(boxed))
        dets = detection.non_max_suppression(boxes, scores, classes, conf, iou, max_det)
        dets[:, :4] = detection.scale_boxes(dets[:, :4], box)
        return dets
