"""Calibration of the search's cost model (cost.py): the probe graphs its constants are fitted
on (softmax, an MLP, attention, matmuls, a layer norm from luminal.nn, ...), their kernels
measured with kernel_times on this machine, the fit, and the model stored where
search(cost_model="auto") finds it. Sits above nn and graph; nothing in the search imports it."""

from __future__ import annotations

import statistics

import numpy as np

from .. import _core
from ..graph import Graph
from ..nn.normalization import layer_norm as norm
from ..runtime import CpuRuntime
from . import cache
from .check import random_inputs
from .cost import CostModel, features, kernel_work, spearman, store
from .driver import representative_dims


def probe_graphs() -> list:
    """(name, graph) for the fixed graphs the constants are fitted on and the ranking is
    measured on: softmax, an MLP, attention, matmuls of several shapes, a decode GEMV, a
    layer norm, elementwise chains."""
    out = []

    def add(name, build):
        cx = Graph()
        build(cx)
        out.append((name, cx))

    add("softmax 256x512", lambda cx: cx.tensor((256, 512)).softmax(-1).output())
    def layer_norm(cx):
        norm(cx.tensor((128, 768)), (768,)).output()
    add("layer norm 128x768", layer_norm)

    def mlp(cx):
        x = cx.tensor((64, 256))
        w1, w2 = cx.tensor((256, 512)), cx.tensor((512, 256))
        ((x @ w1).relu() @ w2).output()
    add("mlp 64x256x512", mlp)

    def attention(cx):
        q, k, v = cx.tensor((4, 128, 64)), cx.tensor((4, 64, 128)), cx.tensor((4, 128, 64))
        ((q @ k * 0.125).softmax(-1) @ v).output()
    add("attention 4x128x64", attention)
    for m, k, n in ((32, 32, 32), (128, 256, 128), (256, 512, 384), (512, 256, 64)):
        add(f"matmul {m}x{k}x{n}",
            lambda cx, m=m, k=k, n=n: (cx.tensor((m, k)) @ cx.tensor((k, n))).output())
    add("gemv 1x1024x1024", lambda cx: (cx.tensor((1, 1024)) @ cx.tensor((1024, 1024))).output())

    def chain(cx):
        x = cx.tensor((512, 1024))
        (x.exp() * x + x.sqrt().reciprocal()).output()
    add("elementwise 512x1024", chain)
    add("sum rows 1024x256", lambda cx: cx.tensor((1024, 256)).sum(-1).output())
    return out


def measure(runtime, cx, programs: int = 8, repeats: int = 15) -> list:
    """(work rows, seconds) per kernel of up to ``programs`` candidates of ``cx``'s search
    space (the e-graph's best, then one per schedule: tilings, fusions, serial and parallel
    kernels, so that the parallel region's price is told from the launch's), each kernel's
    time the minimum of ``repeats`` kernel_times runs on random inputs."""
    space = cx._search_space.build(cx, runtime.rewrite_rules(), runtime._rt)
    dims = representative_dims(cx)
    rows, times = [], []
    inputs = random_inputs(cx._g, dims, 0)
    for program in space.extract(programs, dims):
        prepared = runtime._prepare(program, _core.TuningChoice())
        runtime._rt.compile_prepared(prepared)
        for node, (dtype, data) in zip(program.inputs, inputs):
            runtime._rt.set_data(node, data, dtype)
        runtime._rt.execute(dims)
        runs = [runtime._rt.kernel_times(dims) for _ in range(repeats)]
        work = kernel_work(prepared, dims, runtime)
        for i, w in enumerate(work):
            rows.append(features([w])[0])
            times.append(min(run[i][1] for run in runs))
    runtime._rt.clear_data()
    return rows, times


def calibrate(runtime, graphs=None, programs: int = 8) -> tuple:
    """Fits a CostModel to the kernels of up to ``programs`` candidates of each of ``graphs``
    (default probe_graphs) measured on ``runtime``; returns (model, per graph: (name,
    estimates, seconds))."""
    per_graph = []
    all_rows, all_times = [], []
    for name, cx in graphs or probe_graphs():
        cx.build_search_space(CpuRuntime)
        rows, times = measure(runtime, cx, programs)
        per_graph.append((name, np.array(rows), np.array(times)))
        all_rows += rows
        all_times += times
    model = CostModel.fit(np.array(all_rows), np.maximum(np.array(all_times), 1e-7))
    return model, [(name, rows @ model.coef, times) for name, rows, times in per_graph]


def calibrate_and_store(runtime, cache_dir: str | None = None) -> tuple:
    """calibrate, then store the model where search(cost_model="auto") finds it; returns
    calibrate's answer."""
    model, per_graph = calibrate(runtime)
    est = np.concatenate([e for _, e, _ in per_graph])
    sec = np.concatenate([s for _, _, s in per_graph])
    store(cache_dir or cache.default_dir(), runtime, model,
          {"kernels": int(len(sec)), "spearman": spearman(est, sec),
           "median_seconds": statistics.median(sec.tolist())})
    return model, per_graph
