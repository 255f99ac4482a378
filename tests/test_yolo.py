"""YOLOv8 against ultralytics itself, through the golden files of
tests/fixtures/yolo/make_golden.py (ultralytics' DetectionModel from yolov8*.yaml with seeded
weights, its LetterBox, non_max_suppression and scale_boxes; ultralytics cannot live in this
venv): the state-dict layout of every scale, the raw head and the boxes of YOLOv8n, an
ultralytics .pt checkpoint read without torch, the letterbox, `luminal detect` end to end, and
the errors bad images and weights give."""

import json
import os
import pickle
import sys
import zipfile

import numpy as np
import pytest

import luminal as lm
from luminal import cli
from luminal.errors import ShapeError, WeightsError
from luminal.models import detection
from luminal.models.yolo import YOLOConfig, YOLODetector, YOLOv8

from conftest import CpuRuntime

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "yolo")
sys.path.insert(0, FIXTURES)
from seeded_weights import checksum, seeded_state_dict  # noqa: E402

GOLDEN = np.load(os.path.join(FIXTURES, "golden_n160.npz"))
TINY = np.load(os.path.join(FIXTURES, "golden_tiny.npz"))
TINY_PT = os.path.join(FIXTURES, "tiny.pt")
BUS = os.path.join(FIXTURES, "bus.png")


def sorted_rows(dets):
    """Detections ordered by (class, score, x1, ...): score ties may come in either order."""
    dets = np.asarray(dets, np.float64)
    return dets[np.lexsort(dets.T[::-1])] if len(dets) else dets


def assert_same_detections(got, want, score_atol=1e-5, pixel_atol=1e-3):
    """(k, 6) rows x1, y1, x2, y2, score, class: the same boxes, in any order."""
    assert got.shape == want.shape, f"{len(got)} boxes, ultralytics kept {len(want)}"
    got, want = sorted_rows(got[:, [5, 4, 0, 1, 2, 3]]), sorted_rows(want[:, [5, 4, 0, 1, 2, 3]])
    np.testing.assert_array_equal(got[:, 0], want[:, 0])  # classes
    np.testing.assert_allclose(got[:, 1], want[:, 1], rtol=0, atol=score_atol)
    np.testing.assert_allclose(got[:, 2:], want[:, 2:], rtol=1e-5, atol=pixel_atol)


def numpy_candidates(raw):
    """ultralytics' candidate rows from its own (1, 4 + nc, A) output: xyxy, best score and
    class (what YOLODetector computes in the graph)."""
    p = raw[0].T
    xy, half = p[:, :2], p[:, 2:4] / np.float32(2)
    return np.concatenate([xy - half, xy + half], 1), p[:, 4:].max(1), p[:, 4:].argmax(1)


@pytest.fixture(scope="module")
def yolov8n():
    model = YOLOv8(YOLOConfig.from_scale("n"))
    weights = seeded_state_dict({k: p.shape for k, p in model.named_parameters()})
    assert checksum(weights) == pytest.approx(float(GOLDEN["checksum"]), rel=1e-12), \
        "seeded_weights.py no longer makes the weights the golden file was made with"
    model.weights = weights
    return model


def test_every_scale_has_ultralytics_state_dict_layout():
    with open(os.path.join(FIXTURES, "scales.json")) as f:
        layouts = json.load(f)
    for scale, shapes in layouts.items():
        want = {k: v for k, v in shapes.items() if not k.endswith("num_batches_tracked")}
        got = {k: list(p.shape) for k, p in YOLOv8(YOLOConfig.from_scale(scale)).named_parameters()}
        assert got == want, f"yolov8{scale}: {sorted(set(got) ^ set(want))[:4]}"


def test_yolov8n_raw_head_and_boxes_match_ultralytics(yolov8n):
    detector = YOLODetector(yolov8n, CpuRuntime(), imgsz=160)
    raw, boxes, scores, classes = detector.predict(detection.to_input(GOLDEN["letterboxed"]))
    np.testing.assert_allclose(raw, GOLDEN["raw"], rtol=1e-4, atol=1e-4)
    box = detection.letterbox(detection.load_image(BUS), 160)[1]
    for k, (conf, iou) in enumerate(GOLDEN["thresholds"]):
        dets = detection.non_max_suppression(boxes, scores, classes, float(conf), float(iou))
        assert_same_detections(dets, GOLDEN[f"dets_{k}"])
        want_scaled = GOLDEN[f"scaled_{k}"]
        got_scaled = detection.scale_boxes(dets[:, :4], box)
        np.testing.assert_allclose(sorted_rows(got_scaled), sorted_rows(want_scaled),
                                   rtol=1e-5, atol=1e-3)


def test_nms_matches_ultralytics_on_its_own_predictions():
    boxes, scores, classes = numpy_candidates(GOLDEN["raw"])
    for k, (conf, iou) in enumerate(GOLDEN["thresholds"]):
        dets = detection.non_max_suppression(boxes, scores, classes, float(conf), float(iou))
        np.testing.assert_array_equal(dets, GOLDEN[f"dets_{k}"])  # same order, same bits
    assert len(GOLDEN["dets_1"]) < len(GOLDEN["dets_0"])  # the stricter pair suppressed more
    none = detection.non_max_suppression(boxes, scores, classes, 0.99, 0.7)
    assert none.shape == (0, 6)


def test_ultralytics_checkpoint_matches_ultralytics():
    """On the interpreter (CpuRuntime compiles YOLOv8n above: a second model's C compile
    would double the file's time)."""
    model = YOLOv8.from_file(TINY_PT)
    assert (model.config.width, model.config.nc) == (0.0625, 8)
    assert model.config.names == [f"class{i}" for i in range(8)]
    detector = YOLODetector(model, lm.NativeRuntime(), imgsz=160)
    raw, boxes, scores, classes = detector.predict(detection.to_input(GOLDEN["letterboxed"]))
    np.testing.assert_allclose(raw, TINY["raw"], rtol=1e-4, atol=1e-4)
    dets = detection.non_max_suppression(boxes, scores, classes, float(TINY["conf"]), 0.7)
    assert_same_detections(dets, TINY["dets"])


def test_safetensors_with_metadata_loads_like_the_checkpoint(tmp_path):
    from safetensors.numpy import save_file

    from luminal.weights.ultralytics_pt import load_ultralytics_checkpoint

    weights, _ = load_ultralytics_checkpoint(TINY_PT)
    path = tmp_path / "tiny.safetensors"
    save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, str(path),
              {"depth_multiple": "0.33", "width_multiple": "0.0625", "max_channels": "1024",
               "nc": "8"})
    model = YOLOv8.from_file(path)
    raw = YOLODetector(model, lm.NativeRuntime(), imgsz=160).predict(
        detection.to_input(GOLDEN["letterboxed"]))[0]
    np.testing.assert_allclose(raw, TINY["raw"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("imgsz", [160, 192, 416])
def test_letterbox_matches_ultralytics(imgsz):
    boxed, box = detection.letterbox(detection.load_image(BUS), imgsz)
    want = GOLDEN["letterboxed"] if imgsz == 160 else GOLDEN[f"letterboxed_{imgsz}"]
    assert boxed.shape == want.shape
    diff = np.abs(boxed.astype(int) - want.astype(int))
    if imgsz <= 192:  # shrinking (an exact halving at 160): cv2's result to the bit
        assert diff.max() == 0
    else:  # enlarging: cv2's vector and scalar paths round a few pixels differently
        assert diff.max() <= 1 and (diff > 0).mean() < 0.005
    assert box.padded == want.shape[:2] and box.original == (320, 240)
    np.testing.assert_array_equal(detection.to_input(want)[0, :, 0, 0],
                                  want[0, 0].astype(np.float32) / np.float32(255))  # as torch


def test_detect_cli_prints_boxes_and_writes_png(tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "boxes.png"
    code = cli.main(["detect", BUS, TINY_PT, "--runtime", "native", "--imgsz", "160",
                     "--conf", str(float(TINY["conf"])), "--out", str(out)])
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == ["class", "score", "x1", "y1", "x2", "y2"]
    rows = [line.split() for line in lines[1:]]
    for name, score, *xyxy in rows:
        assert name.startswith("class") and float(score) > float(TINY["conf"])
        x1, y1, x2, y2 = map(float, xyxy)
        assert 0 <= x1 <= x2 <= 240 and 0 <= y1 <= y2 <= 320  # the original image's pixels
    # ultralytics' boxes of this checkpoint, in the original image, as the CLI rounds them
    box = detection.letterbox(detection.load_image(BUS), 160)[1]
    want = TINY["dets"].copy()
    want[:, :4] = detection.scale_boxes(want[:, :4], box)
    want = np.concatenate([want[:, 5:6], want[:, 4:5].round(3), want[:, :4].round(1)], 1)
    got = np.array([[int(row[0][len("class"):])] + [float(v) for v in row[1:]] for row in rows])
    assert got.shape == want.shape, f"{len(got)} boxes, ultralytics kept {len(want)}"
    np.testing.assert_allclose(sorted_rows(got), sorted_rows(want), rtol=0, atol=0.1001)
    with Image.open(out) as im:
        assert im.format == "PNG" and im.size == (240, 320)
        assert np.any(np.asarray(im.convert("RGB")) != detection.load_image(BUS))  # drawn on


def test_detect_cli_says_when_no_box_passes_and_when_weights_are_random(tmp_path, capsys):
    from safetensors.numpy import save_file

    from luminal.weights.ultralytics_pt import load_ultralytics_checkpoint

    weights, _ = load_ultralytics_checkpoint(TINY_PT)
    path = tmp_path / "random.safetensors"
    save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, str(path))
    (tmp_path / "random.json").write_text(json.dumps(
        {"depth_multiple": 0.33, "width_multiple": 0.0625, "nc": 8, "random": "true"}))
    image = tmp_path / "bus.png"
    image.write_bytes(open(BUS, "rb").read())
    assert cli.main(["detect", str(image), str(path), "--runtime", "native", "--imgsz", "160",
                     "--conf", "0.9"]) == 0
    captured = capsys.readouterr()
    assert "no box scored over --conf 0.9" in captured.out
    assert "random weights" in captured.err
    assert (tmp_path / "bus.detected.png").is_file()


def test_bad_images_and_weights_are_clear_errors(tmp_path, capsys):
    assert cli.main(["detect", str(tmp_path / "missing.jpg"), TINY_PT]) == 1
    assert "missing.jpg: no such image file" in capsys.readouterr().err
    (tmp_path / "text.png").write_text("not an image")
    with pytest.raises(ValueError, match="not an image Pillow can read"):
        detection.load_image(tmp_path / "text.png")
    (tmp_path / "junk.pt").write_bytes(b"\x00" * 64)
    with pytest.raises(WeightsError, match="not a torch zip checkpoint"):
        YOLOv8.from_file(tmp_path / "junk.pt")
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(open(TINY_PT, "rb").read()[:4000])
    with pytest.raises(WeightsError, match="truncated.pt"):
        YOLOv8.from_file(truncated)
    with pytest.raises(WeightsError, match="no YOLOv8 config"):
        _save_safetensors(tmp_path / "bare.safetensors", {"x": np.zeros(2, np.float32)}, None)
    assert cli.main(["detect", BUS, TINY_PT, "--imgsz", "100"]) == 1
    assert "multiple of 32" in capsys.readouterr().err
    with pytest.raises(ValueError, match="conf must be in"):
        detection.non_max_suppression(np.zeros((1, 4)), np.ones(1), np.zeros(1), conf=2.0)
    with pytest.raises(ShapeError, match="multiples of 32"):
        YOLOv8(YOLOConfig.from_scale("n"))(lm.Graph().tensor((1, 3, 100, 96)))
    with pytest.raises(WeightsError, match="scale 'q'"):
        YOLOConfig.from_scale("q")


def _save_safetensors(path, tensors, metadata):
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata)
    return YOLOv8.from_file(path)


def test_wrong_key_names_are_named(tmp_path):
    from luminal.weights.ultralytics_pt import load_ultralytics_checkpoint

    weights, _ = load_ultralytics_checkpoint(TINY_PT)
    renamed = {k.replace("model.22.dfl.", "model.22.integral."): np.ascontiguousarray(v)
               for k, v in weights.items()}
    meta = {"depth_multiple": "0.33", "width_multiple": "0.0625", "nc": "8"}
    with pytest.raises(WeightsError, match=r"missing 1 tensor.*model.22.dfl.conv.weight.*"
                                           r"unexpected 1 .*model.22.integral.conv.weight"):
        _save_safetensors(tmp_path / "renamed.safetensors", renamed, meta)
    with pytest.raises(WeightsError, match=r"'model.22.cv3.0.0.conv.weight' has shape "
                                           r"\(16, 16, 3, 3\).*80 classes\) expects \(80, 16"):
        _save_safetensors(tmp_path / "nc.safetensors",
                          {k: np.ascontiguousarray(v) for k, v in weights.items()},
                          dict(meta, nc="80"))
    model = YOLOv8(YOLOConfig(0.33, 0.0625, 1024, 8))  # the check load_state_dict makes too
    with pytest.raises(WeightsError, match="missing 1 tensor.*model.22.dfl.conv.weight"):
        model.weights = renamed
        YOLODetector(model, lm.NativeRuntime(), imgsz=160).program(160, 128)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def _torch_zip(path, obj):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("ckpt/data.pkl", pickle.dumps(obj, protocol=2))
        z.writestr("ckpt/version", "3\n")


def test_checkpoint_globals_outside_the_allow_list_are_refused(tmp_path):
    _torch_zip(tmp_path / "evil.pt", {"model": _Evil()})
    with pytest.raises(WeightsError, match="refers to (posix|os|nt).system.*refusing"):
        YOLOv8.from_file(tmp_path / "evil.pt")
    _torch_zip(tmp_path / "list.pt", [1, 2, 3])
    with pytest.raises(WeightsError, match="not an ultralytics checkpoint"):
        YOLOv8.from_file(tmp_path / "list.pt")


def test_other_yolo_architectures_are_refused(tmp_path):
    """A checkpoint whose layer 2 is not a C2f (YOLO11's C3k2, say) is named as such."""
    from luminal.weights import ultralytics_pt

    with zipfile.ZipFile(TINY_PT) as z:
        names = z.namelist()
        pkl = next(n for n in names if n.endswith("data.pkl"))
        data = z.read(pkl).replace(b"\nC2f\n", b"\nC3k2\n")  # torch pickles with protocol 2
        with zipfile.ZipFile(tmp_path / "other.pt", "w") as out:
            for n in names:
                out.writestr(n, data if n == pkl else z.read(n))
    assert ultralytics_pt.read_checkpoint(tmp_path / "other.pt") is not None
    with pytest.raises(WeightsError, match="layer 2 is C3k2, where YOLOv8 has C2f"):
        YOLOv8.from_file(tmp_path / "other.pt")
