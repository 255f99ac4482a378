"""ultralytics' .pt checkpoints (yolov8n.pt, ...) read without torch or ultralytics: a torch
zip archive whose data.pkl pickles the whole model object. A restricted unpickler maps the
module classes (ultralytics.*, torch.nn.modules.*) to inert stubs that only keep their
attributes, rebuilds tensors as numpy arrays from the archive's storages, and refuses every
other global with a WeightsError, so loading a file never runs code from it. The result is
the model's state dict (model.0.conv.weight, ...) and its config (yaml, names).
Not here: which architecture the tensors fit (models/yolo.py checks that)."""

from __future__ import annotations

import codecs
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np

from ..errors import WeightsError

# torch storage class -> numpy dtype of its elements
_STORAGES = {
    "HalfStorage": np.float16, "FloatStorage": np.float32, "DoubleStorage": np.float64,
    "BFloat16Storage": np.uint16, "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}
# module prefixes whose classes become stubs: the objects a checkpoint's model is made of
_STUB_MODULES = ("ultralytics.", "torch.nn.modules.")
# harmless globals some checkpoints hold (training metadata): they become stubs too
_STUB_GLOBALS = {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
                 ("numpy", "dtype"), ("torch", "device"), ("argparse", "Namespace")}


class _Stub:
    """An unpickled object of a class we do not run: its state, nothing else."""

    qualname = "?"

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):
            state = state[0] or state[1]  # (dict, slots) of classes with __slots__
        self.state = state if isinstance(state, dict) else {"state": state}

    def get(self, key, default=None):
        return getattr(self, "state", {}).get(key, default)


_stub_classes = {}


def _stub_class(module: str, name: str):
    key = f"{module}.{name}"
    if key not in _stub_classes:
        _stub_classes[key] = type(name, (_Stub,), {"qualname": key})
    return _stub_classes[key]


class _StorageType:
    def __init__(self, dtype):
        self.dtype = dtype


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False, hooks=None,
                       metadata=None):
    itemsize = storage.dtype.itemsize
    if any(s < 0 for s in stride) or offset < 0:
        raise WeightsError("bad tensor in checkpoint: negative stride or offset")
    needed = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if needed > storage.size:
        raise WeightsError(f"bad tensor in checkpoint: shape {tuple(size)} with stride "
                           f"{tuple(stride)} reads past its storage of {storage.size} elements")
    view = np.lib.stride_tricks.as_strided(storage[offset:], tuple(size),
                                           tuple(s * itemsize for s in stride))
    return np.array(view)  # a copy: no alias into the archive's buffer


def _rebuild_parameter(data, requires_grad=False, hooks=None, state=None):
    return data


_TORCH_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): OrderedDict,
    ("builtins", "set"): set, ("__builtin__", "set"): set,
    ("builtins", "frozenset"): frozenset, ("__builtin__", "frozenset"): frozenset,
    ("_codecs", "encode"): codecs.encode,  # how protocol 2 pickles bytes (numpy scalars)
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, archive, prefix: str, path: str):
        import io

        super().__init__(io.BytesIO(data))
        self.archive = archive
        self.prefix = prefix
        self.path = path
        self.storages = {}

    def find_class(self, module, name):
        if (module, name) in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[(module, name)]
        if module == "torch" and name in _STORAGES:
            return _StorageType(np.dtype(_STORAGES[name]))
        if module.startswith(_STUB_MODULES) or (module, name) in _STUB_GLOBALS:
            return _stub_class(module, name)
        raise WeightsError(f"{self.path}: the checkpoint refers to {module}.{name}, which a "
                           f"YOLO checkpoint does not hold; refusing to load it (only tensors, "
                           f"containers and ultralytics / torch.nn module objects are read)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise WeightsError(f"{self.path}: unknown persistent id {pid!r:.80} in data.pkl")
        _, kind, key, _, numel = pid
        if not isinstance(kind, _StorageType):
            raise WeightsError(f"{self.path}: storage {key} has an unknown type")
        if key not in self.storages:
            name = f"{self.prefix}data/{key}"
            try:
                raw = self.archive.read(name)
            except KeyError:
                raise WeightsError(f"{self.path}: storage {name} is missing") from None
            if len(raw) < numel * kind.dtype.itemsize:
                raise WeightsError(f"{self.path}: storage {name} has {len(raw)} bytes, fewer "
                                   f"than its {numel} elements need")
            self.storages[key] = np.frombuffer(raw, kind.dtype, numel)
        return self.storages[key]


def read_checkpoint(path):
    """The unpickled top-level object of a torch zip checkpoint (stubs for modules)."""
    path = os.fspath(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise WeightsError(f"{path}: not a torch zip checkpoint ({e})") from None
    with archive:
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl")]
        if len(pickles) != 1:
            raise WeightsError(f"{path}: not a torch checkpoint (no single data.pkl in the "
                               f"archive)")
        prefix = pickles[0][:-len("data.pkl")]
        try:
            return _Unpickler(archive.read(pickles[0]), archive, prefix, path).load()
        except WeightsError:
            raise
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                IndexError, KeyError, zipfile.BadZipFile) as e:
            raise WeightsError(f"{path}: corrupt checkpoint ({type(e).__name__}: {e})") \
                from None


def module_tensors(module, prefix: str = ""):
    """(dotted name, numpy array) of every parameter and buffer under a stub module, in
    torch's state_dict order."""
    for group in ("_parameters", "_buffers"):
        for name, value in (module.get(group) or {}).items():
            if value is not None:
                yield prefix + name, value
    for name, child in (module.get("_modules") or {}).items():
        if isinstance(child, _Stub):
            yield from module_tensors(child, f"{prefix}{name}.")


def load_ultralytics_checkpoint(path):
    """(state dict {name: numpy array}, config {yaml keys + names}) of an ultralytics
    checkpoint: the "ema" model when it holds one, else "model"."""
    ckpt = read_checkpoint(path)
    if not isinstance(ckpt, dict):
        raise WeightsError(f"{path}: not an ultralytics checkpoint (top level is "
                           f"{type(ckpt).__name__}, not a dict)")
    model = ckpt.get("ema") or ckpt.get("model")
    if not isinstance(model, _Stub):
        raise WeightsError(f"{path}: not an ultralytics checkpoint (no 'model' object)")
    weights = OrderedDict(module_tensors(model))
    config = dict(model.get("yaml") or {})
    config["names"] = model.get("names")
    config["modules"] = model_layout(model)
    return weights, config


def model_layout(model) -> list:
    """The class name of each top-level layer (model.model.N), and, per layer, its sub-module
    class names by dotted path: what models/yolo.py compares with YOLOv8's layout."""
    seq = (model.get("_modules") or {}).get("model")
    if not isinstance(seq, _Stub):
        return []
    layers = []
    for _, layer in (seq.get("_modules") or {}).items():
        kinds = {}
        _collect_kinds(layer, "", kinds)
        layers.append(kinds)
    return layers


def _collect_kinds(module, prefix: str, out: dict) -> None:
    out[prefix.rstrip(".")] = type(module).__name__
    for name, child in (module.get("_modules") or {}).items():
        if isinstance(child, _Stub):
            _collect_kinds(child, f"{prefix}{name}.", out)
