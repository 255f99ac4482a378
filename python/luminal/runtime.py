"""Runtimes as users see them: set_data with lists, numpy arrays or torch tensors, execute
with a dyn_map, read outputs as lists or numpy arrays. Each wraps a C++ runtime from _core.
One call at a time runs in the core; runtime_threads.py refuses calls from two threads that
would mix their sequences.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import _core
from . import dtype as dt
from ._core import OpKind
from .errors import DTypeError, ShapeError
from .runtime_threads import SequenceGuard


def _to_numpy(data) -> np.ndarray:
    """Lists, scalars, numpy arrays and (CPU) torch tensors as a numpy array."""
    module = type(data).__module__
    if module.startswith("torch"):
        t = data.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if str(t.dtype) == "torch.bfloat16":
            return t.float().numpy()
        return t.numpy()
    try:
        return np.asarray(data)
    except (ValueError, TypeError) as e:
        raise DTypeError(f"cannot read data of type {type(data).__name__}: {e}") from None


def _to_storage(array: np.ndarray, dtype) -> np.ndarray:
    """``array`` converted to the storage layout of ``dtype`` (bf16 as its 16-bit words)."""
    if array.dtype == object or array.dtype.kind in "USV":
        raise DTypeError(f"data of numpy dtype {array.dtype} is not numeric")
    if dtype == dt.bfloat16:
        bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
        rounded = bits + 0x7FFF + ((bits >> 16) & 1)
        nan = np.isnan(array.astype(np.float32))
        words = (rounded >> 16).astype(np.uint16)
        words[nan] = 0x7FC0
        return np.ascontiguousarray(words)
    return np.ascontiguousarray(array, dtype=dt.storage(dtype))


def _from_storage(array: np.ndarray, dtype) -> np.ndarray:
    if dtype == dt.bfloat16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _id_map(g, program) -> dict:
    """Maps the user graph's Input and Output ids to the program's, by position."""
    ids = dict(zip(g.inputs(), program.inputs))
    ids.update(zip(g.outputs(), program.outputs))
    return ids


class Runtime:
    """The Python face of a C++ runtime. Subclasses set ``_core_type`` or pass the C++ runtime
    they made to ``__init__``."""

    _core_type = None

    def __init__(self, core_runtime=None):
        self._rt = self._core_type() if core_runtime is None else core_runtime
        self._guard = SequenceGuard(self._rt.name)  # one call at a time; sequences per thread
        self._graph = None  # the user graph whose program the runtime holds (None: no program)
        self._ids = {}  # user graph node id -> compiled program node id (search's rewrites)
        self._compiled_outputs = set()  # the user graph's outputs when its program was compiled
        # user tensor id -> (the tensor, how it was set, a weak reference to the caller's data) for each
        # parameter: a search replaces every input's data with its check data, then sets these
        # again on the program it loads (where the caller still holds the data; the runtime
        # itself may have let it go, keeping only packed panels)
        self._parameter_data = {}
        # input tensor id -> the output tensor whose value becomes its data after each execute
        self._carries = {}
        self._carried_inputs = {}  # input tensor id -> that input tensor
        # carried input id -> its data as last set (storage), or None once an execute carried
        # its output into it (then value() reads the output)
        self._carried_data = {}

    @property
    def name(self) -> str:
        return self._rt.name

    def sequence(self):
        """``with rt.sequence():`` holds this runtime for the block: calls from other threads
        wait until it ends, so a set_data ... execute ... get in it is one thread's whole
        sequence. Library helpers that run a whole sequence (a torch.compile'd callable, a
        model's embed or generate) hold it; a runtime shared by threads needs it (or one
        runtime per thread)."""
        return self._guard.sequence()

    def _load(self, graph, program=None, choice=None, prepared=None) -> None:
        """Compiles ``program`` (a search result, default: the graph as written) for
        ``graph`` and adopts it; ``prepared``: what _prepare made of it, compiled as is."""
        compiled = graph._g if program is None else program.graph
        with self._guard.lock:
            if prepared is not None:
                self._rt.compile_prepared(prepared)
            elif choice is None:
                self._rt.compile(compiled)
            else:
                self._rt.compile(compiled, choice)
            self._adopt(graph, program)

    def _adopt(self, graph, program=None) -> None:
        """Makes ``program`` (default: the graph as written), which the C++ runtime has just
        compiled, this runtime's program for ``graph``: user tensors keep addressing inputs
        and outputs by their own ids."""
        self._ids = {} if program is None else _id_map(graph._g, program)
        self._compiled_outputs = set(graph._g.outputs())
        if graph is not self._graph:
            self._parameter_data = {}
            self._carries = {}
            self._carried_inputs = {}
            self._carried_data = {}
        self._graph = graph

    def _held_parameters(self, graph) -> list:
        """(tensor, setter, data) of each parameter of ``graph`` whose data is alive now (the
        caller's, or the storage the runtime borrowed): strong references, for a search to set
        them again once its check data has replaced them."""
        if graph is not self._graph:
            return []
        held = []
        for tensor, setter, data_ref, storage_ref in self._parameter_data.values():
            data, storage = data_ref(), storage_ref()
            if data is not None:
                held.append((tensor, setter, data))
            elif storage is not None:
                held.append((tensor, "set_storage", storage))
        return held

    def _held_state(self, graph) -> list:
        """What a search of ``graph`` sets again on the program it loads: the parameters of
        ``_held_parameters``, and every carried input (trained parameters, optimizer moments,
        random state) at its value now, not the data it was first set with, so a search after
        some train steps goes on from them."""
        held = {t.id: (t, setter, data) for t, setter, data in self._held_parameters(graph)}
        if graph is self._graph:
            for tensor in self._carried_inputs.values():
                if tensor.id in self._carried_data:  # set, or carried by an execute
                    held[tensor.id] = (tensor, "set_data", self.value(tensor))
        return list(held.values())

    def _set_parameters(self, held: list) -> None:
        """Sets the parameters of ``_held_parameters`` again, on the program now loaded."""
        with self.sequence():  # carried inputs too: they stay set, owned by no thread
            for tensor, setter, data in held:
                getattr(self, setter)(tensor, data)

    def rewrite_rules(self) -> str:
        """The rewrite rules this runtime adds to the search space (csrc/egraph rules)."""
        return self._rt.rewrite_rules()

    def _prepare(self, program, choice):
        """Search candidate ``program`` under tuning ``choice``, lowered once by the C++
        runtime (``_core.Prepared``): its ``fingerprint`` names what the runtime would run
        (candidates of one fingerprint are one), and ``compile_prepared`` compiles it
        without lowering it again. Raises LuminalError where it cannot be lowered."""
        return self._rt.prepare(program.graph, choice)

    def _check_tensor(self, tensor, what: str):
        if self._graph is None:
            raise ShapeError(f"{what}: the runtime has no program; call cx.search(rt) first")
        if not hasattr(tensor, "graph") or tensor.graph is not self._graph:
            raise ShapeError(f"{what}: {tensor!r} is not a tensor of the compiled graph")

    def set_data(self, tensor, data) -> None:
        """Gives input ``tensor`` its values (list, numpy array or torch tensor)."""
        name = self._input_name(tensor, "set_data")
        array = _to_numpy(data)
        if dt.is_quantized(tensor.dtype):
            raise DTypeError(f"set_data: input '{name}' is {dt.name(tensor.dtype)}: give its raw "
                             f"blocks to set_storage (luminal quantize writes them)")
        self._check_data_shape(tensor, name, array.shape, "set_data")
        if array.dtype.kind == "f" and not dt.is_float(tensor.dtype):
            if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
                raise DTypeError(f"set_data: input '{name}' is {dt.name(tensor.dtype)}, "
                                 f"got non-integral float data")
        storage = _to_storage(array.reshape(-1), tensor.dtype)
        self._set_input(tensor, storage, "set_data")
        self._remember_parameter(tensor, "set_data", data, storage)

    def set_storage(self, tensor, storage: np.ndarray) -> None:
        """Like set_data, for a numpy array already in the input's storage format (bfloat16 as
        its raw uint16 words, float16 as float16, ...): no conversion, and no copy where the
        runtime can borrow it (memory-mapped weights stay mapped)."""
        name = self._input_name(tensor, "set_storage")
        want = np.dtype(dt.storage(tensor.dtype))
        if not isinstance(storage, np.ndarray) or storage.dtype != want:
            got = storage.dtype if isinstance(storage, np.ndarray) else type(storage).__name__
            raise DTypeError(f"set_storage: input '{name}' ({dt.name(tensor.dtype)}) takes a "
                             f"numpy array of {want}, got {got}")
        shape = dt.element_shape(tensor.dtype, storage.shape)
        self._check_data_shape(tensor, name, shape, "set_storage")
        flat = np.ascontiguousarray(storage).reshape(-1)
        self._set_input(tensor, flat, "set_storage")
        self._remember_parameter(tensor, "set_storage", storage, flat)

    def _set_input(self, tensor, storage: np.ndarray, op: str) -> None:
        guard = self._guard
        claims = not tensor.is_parameter  # parameters stay set across sequences
        guard.acquire_for_set(op, claims)
        try:
            self._rt.set_data(self._ids.get(tensor.id, tensor.id), storage, tensor.dtype)
            if tensor.id in self._carries:
                self._carried_data[tensor.id] = storage
            if claims:
                guard.claim_inputs()
        finally:
            guard.lock.release()

    def _keeps_only_its_layout(self, tensor) -> bool:
        """Whether the runtime read ``tensor``'s data, as last set, only into a layout of its
        own (a CpuRuntime's packed panels) and does not read the caller's memory again."""
        reads = getattr(self._rt, "reads_as_stored", None)
        return reads is not None and not reads(self._ids.get(tensor.id, tensor.id))

    def _remember_parameter(self, tensor, setter: str, data, storage: np.ndarray) -> None:
        if not tensor.is_parameter:
            return
        try:
            data_ref = weakref.ref(data)
        except TypeError:  # a list or a scalar: small, kept as it is
            data_ref = lambda: data  # noqa: E731
        self._parameter_data[tensor.id] = (tensor, setter, data_ref, weakref.ref(storage))

    def _input_name(self, tensor, op: str) -> str:
        self._check_tensor(tensor, op)
        g = self._graph._g
        if g.node_op(tensor.id) != OpKind.Input:
            raise ShapeError(f"{op}: {tensor!r} is not an input (made by cx.tensor)")
        return g.node_name(tensor.id)

    def _check_data_shape(self, tensor, name: str, shape: tuple, op: str) -> None:
        declared = self._graph._g.node_shape(tensor.id)
        if len(shape) > 1 or (len(shape) == 1 and len(declared) == 1):
            dims_ok = len(shape) == len(declared) and all(
                not d.is_const() or d.as_const() == n for d, n in zip(declared, shape))
            if not dims_ok:
                want = tuple(d.as_const() if d.is_const() else str(d) for d in declared)
                raise ShapeError(f"{op}: input '{name}' has shape {want}, "
                                 f"got data of shape {tuple(shape)}")

    def execute(self, dyn_map: dict | None = None) -> None:
        """Runs the program; ``dyn_map`` gives the symbolic dims (usually ``cx.dyn_map``)."""
        if self._graph is None:
            raise ShapeError("execute: the runtime has no program; call cx.search(rt) first")
        dyn_map = dict(self._graph.dyn_map if dyn_map is None else dyn_map)
        for k, v in dyn_map.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or \
                    not 0 <= v < 2**63:
                raise ShapeError(f"execute: dyn_map entry {k!r}: {v!r} must map a symbol name "
                                 f"to a non-negative int below 2**63")
        guard = self._guard
        with guard.lock:
            guard.begin_execute()
            try:
                if self._carries:
                    carries = [(self._output_id(out), self._ids.get(i, i))
                               for i, out in self._carries.items()]
                    self._rt.execute_carrying(dyn_map, carries)
                    self._carried_data = dict.fromkeys(self._carries)
                else:
                    self._rt.execute(dyn_map)
            finally:
                guard.end_execute()

    def carry(self, output, input) -> None:
        """After each execute, output ``output``'s value becomes input ``input``'s data: the
        state a program updates (a parameter's next value, an optimizer's moments) stays in
        the runtime across executes, with no copy through Python. Both must have one shape and
        dtype; ``output`` stays readable."""
        self._input_name(input, "carry")
        self._output_id(output)
        if tuple(output.shape) != tuple(input.shape) or output.dtype != input.dtype:
            raise ShapeError(f"carry: output {output!r} cannot become input {input!r}: shapes "
                             f"or dtypes differ")
        self._carries[input.id] = output
        self._carried_inputs[input.id] = input
        held = {t.id: data for t, _, data in self._held_parameters(self._graph)}
        if input.id in held:
            self._carried_data[input.id] = _to_storage(_to_numpy(held[input.id]).reshape(-1),
                                                       input.dtype)

    def value(self, input) -> np.ndarray:
        """The data input ``input`` holds now, as a numpy array of its shape: for a carried
        input (``carry``), its output's value once an execute has carried it."""
        name = self._input_name(input, "value")
        if input.id in self._carries and self._carried_data.get(input.id) is None:
            return self.get(self._carries[input.id])
        storage = self._carried_data.get(input.id)
        if storage is None:
            held = {t.id: data for t, _, data in self._held_parameters(self._graph)}
            if input.id not in held:
                raise ShapeError(f"value: the runtime keeps no readable copy of input '{name}' "
                                 f"(only of parameters and carried inputs)")
            return np.asarray(_to_numpy(held[input.id])).reshape(input.shape)
        return _from_storage(storage, input.dtype).reshape(input.shape)

    def _output_id(self, tensor) -> int:
        self._check_tensor(tensor, "get")
        out = self._graph._g.find_output(tensor.id, tensor.st)
        if out is None:
            raise ShapeError(f"get: {tensor!r} is not an output; call .output() on it before "
                             f"search")
        if out not in self._compiled_outputs:
            raise ShapeError(f"get: {tensor!r} was made an output after the search; search "
                             f"again to compile it")
        return self._ids.get(out, out)

    def get(self, tensor) -> np.ndarray:
        """The value of output ``tensor`` as a numpy array of its shape (bf16 as float32)."""
        output = self._output_id(tensor)
        with self._guard.lock:
            self._guard.check_outputs("get")
            return _from_storage(self._rt.get(output), tensor.dtype)

    def get_f32(self, tensor) -> list:
        """The value of output ``tensor`` as a flat list of floats."""
        return self.get(tensor).astype(np.float32).reshape(-1).tolist()


class NativeRuntime(Runtime):
    """The reference interpreter: every op, exactly; the oracle for other runtimes."""

    _core_type = _core.NativeRuntime


def _writable_dir(path: str) -> bool:
    """Whether ``path`` is (or can be made) a directory this process can create files in: a
    cache that cannot be written only costs speed, never a failed compile."""
    import os
    import tempfile

    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            return True
    except OSError:
        return False


class CpuRuntime(Runtime):
    """Generated C kernels compiled by the system compiler (cached on disk), run with OpenMP.

    ``threads``: OpenMP threads (default: every core this process may use). ``compiler``: the
    C compiler (default ``cc``). ``cache_dir``: where compiled programs are kept (default
    $LUMINAL_CPU_CACHE, else ``~/.cache/luminal/cpu``; ``""``: no cache kept, as for
    CudaRuntime: a temporary directory removed with the runtime). ``extra_flags``: more compiler flags
    (a list or a string). ``compile_jobs``: compiler processes run at once (default: the
    number of online CPUs). ``vector_width``: floats per vector the kernels are built for, 8 or
    16 (default: $LUMINAL_CPU_VECTOR_WIDTH where it is 8 or 16, else the machine's: 16 with
    AVX-512); the default matmul block and the tilings offered follow it. ``dot_products``:
    whether kernels may use the machine's dot-product instructions (AVX512-BF16's bf16 pairs,
    VNNI's int8) where it has them (default: $LUMINAL_CPU_DOT_PRODUCTS, '0' for no, else yes);
    without them the kernels take the paths of a machine that lacks them (AVX2). Inputs set
    from C-contiguous arrays of the right dtype are used in place, not copied.
    """

    def __init__(self, threads=None, compiler=None, cache_dir=None, extra_flags=None,
                 compile_jobs=None, vector_width=None, dot_products=None):
        import os
        import shlex

        if threads is None:
            threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else (os.cpu_count() or 1)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"CpuRuntime: threads must be a positive int, got {threads!r}")
        if cache_dir is None:
            cache_dir = os.environ.get("LUMINAL_CPU_CACHE") or os.path.join(
                os.path.expanduser("~"), ".cache", "luminal", "cpu")
        scratch = None
        if os.fspath(cache_dir) != "" and not _writable_dir(os.fspath(cache_dir)):
            import warnings

            warnings.warn(f"the CPU kernel cache {os.fspath(cache_dir)} cannot be written; "
                          "compiling into a temporary directory (nothing is kept for next time)",
                          RuntimeWarning, stacklevel=2)
            cache_dir = ""
        if os.fspath(cache_dir) == "":
            import tempfile

            scratch = tempfile.TemporaryDirectory(prefix="luminal-cpu-")
            cache_dir = scratch.name
        if isinstance(extra_flags, str):
            extra_flags = shlex.split(extra_flags)
        compiler = compiler or "cc"
        if os.sep not in compiler:
            import shutil

            compiler = shutil.which(compiler) or compiler
        if compile_jobs is not None and (isinstance(compile_jobs, bool)
                                         or not isinstance(compile_jobs, int) or compile_jobs < 1):
            raise ValueError(f"CpuRuntime: compile_jobs must be a positive int, "
                             f"got {compile_jobs!r}")
        if vector_width is None:
            forced = os.environ.get("LUMINAL_CPU_VECTOR_WIDTH")
            vector_width = int(forced) if forced in ("8", "16") else 0  # 0: the machine's
        elif isinstance(vector_width, bool) or vector_width not in (8, 16):
            raise ValueError(f"CpuRuntime: vector_width must be 8 or 16, got {vector_width!r}")
        if dot_products is None:
            dot_products = os.environ.get("LUMINAL_CPU_DOT_PRODUCTS", "1") != "0"
        elif not isinstance(dot_products, bool):
            raise ValueError(f"CpuRuntime: dot_products must be True or False, got "
                             f"{dot_products!r}")
        super().__init__(_core.CpuRuntime(compiler, list(extra_flags or []),
                                          os.path.abspath(os.fspath(cache_dir)), threads,
                                          compile_jobs or 0, vector_width, dot_products))
        self._scratch = scratch  # removed when the runtime is

    @property
    def source(self) -> str:
        """The generated C of the compiled program."""
        return self._rt.source

    @property
    def vector_width(self) -> int:
        """Floats per vector the kernels are built for: 8 or 16."""
        return self._rt.vector_width

    @property
    def dot_products(self) -> bool:
        """Whether kernels may use the machine's dot-product instructions."""
        return self._rt.dot_products

    def memory(self) -> dict:
        """The bytes this runtime holds, by kind: ``borrowed_input_bytes`` (inputs read in
        place from the caller's arrays: memory-mapped weights stay in their file's pages),
        ``owned_input_bytes`` (inputs it copied), ``packed_input_bytes`` (parameters laid out
        as the panels a GEMM reads, in their storage dtype, in place of their data),
        ``arena_bytes`` (the temporaries' arena) and ``output_bytes`` (the last execute's
        outputs). Each input counts once."""
        use = self._rt.memory()
        return {k: getattr(use, k) for k in ("borrowed_input_bytes", "owned_input_bytes",
                                             "packed_input_bytes", "arena_bytes",
                                             "output_bytes")}

    @property
    def last_compile_stats(self):
        """What the last compile did: ``kernels`` (distinct kernel units), ``objects_compiled``
        (kernel objects the cache lacked), ``linked`` (False: the whole program was cached),
        ``seconds``."""
        return self._rt.last_compile_stats


class _GpuRuntime(Runtime):
    """What the GPU runtimes share: params fixed over every compile, GPU-timed benchmarks,
    the device's name and the generated source."""

    def _fix(self, choice) -> None:
        self._fixed = _core.TuningChoice()
        if choice:  # fixed params: every compile (search's too) uses them, over node schedules
            self._fixed.params = sorted(dict(choice).items())
            self._rt.fix_choice(self._fixed)

    def benchmark(self, iters: int = 100, dyn_map: dict | None = None) -> float:
        """Device milliseconds per run of the program, timed on the GPU."""
        if self._graph is None:
            raise ShapeError("benchmark: the runtime has no program; call cx.search(rt) first")
        with self.sequence():
            return self._rt.benchmark(dict(self._graph.dyn_map if dyn_map is None else dyn_map),
                                      iters)

    @property
    def device_name(self) -> str:
        return self._rt.device_name

    @property
    def source(self) -> str:
        """The generated source of the compiled program (CUDA C, MSL)."""
        return self._rt.source


class CudaRuntime(_GpuRuntime):
    """NVIDIA GPUs through the CUDA driver and NVRTC, both loaded at run time (luminal.cuda
    finds NVRTC). Raises DeviceError without a driver, a GPU or NVRTC. ``choice`` fixes the
    CUDA renderer's tuning params, e.g. ``{"cuda_matmul": 3}`` for tensor cores. ``benchmark``
    replays the CUDA graph, event-timed."""

    def __init__(self, nvrtc_library=None, cache_dir=None, device=0, choice=None,
                 driver_library=None):
        from .cuda import cuda_options

        options = cuda_options(nvrtc_library, cache_dir, device, driver_library)
        super().__init__(_core.CudaRuntime(options))
        self._fix(choice)

    @property
    def device(self) -> str:
        """The GPU and the architecture its kernels compile for (part of search's cache key)."""
        return f"{self._rt.device_name} {self._rt.arch}"

    def copy_bandwidth(self, nbytes: int = 1 << 30, iters: int = 10) -> tuple:
        """(copy kernel, cuMemcpyDtoD) device-to-device bandwidth in GB/s, read + written."""
        return self._rt.copy_bandwidth(nbytes, iters)

    @property
    def arch(self) -> str:
        return self._rt.arch


class MetalRuntime(_GpuRuntime):
    """Apple GPUs through Metal (macOS 12 or later, an M1 or later GPU): MSL kernels compiled
    with fast math off, their pipelines kept in ``cache_dir`` (default
    $XDG_CACHE_HOME/luminal/metal, else ~/.cache/luminal/metal; ``""``: none kept). ``device``:
    the index of the Metal device. ``choice`` fixes the Metal renderer's tuning params, e.g.
    ``{"metal_matmul": 3}`` for simdgroup matrices. ``benchmark`` is the median GPU time of the
    program's command buffer. Raises DeviceError on a system without Metal
    (luminal.metal.render still renders the MSL there)."""

    def __init__(self, cache_dir=None, device=0, choice=None):
        import os

        if cache_dir is None:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                    ".cache")
            cache_dir = os.path.join(base, "luminal", "metal")
        options = _core.MetalOptions()
        options.cache_dir = os.fspath(cache_dir)
        options.device = device
        super().__init__(_core.MetalRuntime(options))
        self._fix(choice)

    @property
    def device(self) -> str:
        """The GPU the kernels run on (part of search's cache key)."""
        return self._rt.device_name

