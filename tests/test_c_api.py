"""The C API (csrc/api/luminal.h, libluminal): compiles C programs against the installed header
and library, runs them, and checks their printed results against torch and their error reports
for the right status and shapes. Skipped where no C compiler is found.
"""

import os
import shutil
import subprocess

import pytest
import torch

from luminal.embedding import get_include, get_library_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MATMUL_C = os.path.join(ROOT, "examples", "embed", "matmul.c")


def _compiler():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    pytest.skip("no C compiler found")


def _build_and_run(source: str, tmp_path) -> subprocess.CompletedProcess:
    """Compiles one C file against the installed luminal and runs it; returns the finished run."""
    lib = get_library_dir()
    exe = str(tmp_path / "prog")
    cmd = [_compiler(), "-std=c99", "-Wall", "-Werror", source, "-I", get_include(), "-L", lib,
           "-lluminal", f"-Wl,-rpath,{lib}", "-o", exe]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return subprocess.run([exe], capture_output=True, text=True, timeout=60)


def test_installed_paths():
    assert os.path.isfile(os.path.join(get_include(), "luminal.h"))
    names = os.listdir(get_library_dir())
    assert any(n.startswith("libluminal.") for n in names), names


def test_matmul_example_matches_torch(tmp_path):
    run = _build_and_run(MATMUL_C, tmp_path)
    assert run.returncode == 0, run.stderr
    got = torch.tensor([float(x) for x in run.stdout.split()])
    # The inputs written in examples/embed/matmul.c.
    a = torch.tensor([1, 2, 3, 4, 5, 6], dtype=torch.float32).reshape(2, 3)
    b = torch.tensor([0.5, -1, 2, 0, 1, 1.5, -0.5, 3, -2, 0.25, 1, -1]).reshape(3, 4)
    bias = torch.tensor([0.1, 0.2, 0.3, 0.4])
    want = (a @ b + bias).reshape(-1)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-5)
    # The example shows one error: adding (2, 3) to (3, 4) without broadcasting.
    assert "LM_SHAPE_ERROR" in run.stderr
    assert "(2, 3)" in run.stderr and "(3, 4)" in run.stderr


# Prints one line per check: "label<TAB>status<TAB>message" or "label<TAB>values<TAB>v0<TAB>...".
CHECKS_C = r"""
#include <stdio.h>
#include "luminal.h"

static void report(const char* label, int failed) {
  printf("%s\t%s\t%s\n", label, failed ? lm_status_name(lm_last_status()) : "LM_OK",
         failed ? lm_last_error() : "");
}

static void values(const char* label, lm_runtime* rt, const lm_tensor* t) {
  float buf[64];
  int64_t n = lm_output_numel(rt, t);
  if (n < 0 || n > 64 || lm_get_f32(rt, t, buf, 64) != LM_OK) {
    report(label, 1);
    return;
  }
  printf("%s\tvalues", label);
  for (int64_t i = 0; i < n; ++i) printf("\t%.9g", buf[i]);
  printf("\n");
}

int main(void) {
  const int64_t d23[2] = {2, 3};
  const int64_t d4[1] = {4};
  const int64_t d6[1] = {6};
  const float xd[6] = {1, -2, 3, 0.5f, 5, -6};
  float buf[64];
  lm_graph* g = lm_graph_new();
  lm_tensor* x = lm_input(g, "x", LM_F32, 2, d23, NULL);
  lm_tensor* v = lm_input(g, "v", LM_F32, 1, d4, NULL);
  lm_tensor* k = lm_input(g, "k", LM_INT, 2, d23, NULL);
  lm_tensor* xa = NULL;
  lm_tensor* va = NULL;

  /* Errors while building. */
  report("add_shapes", lm_add(g, x, v) == NULL);
  report("broadcast", lm_broadcast(g, x, v, &xa, &va) != LM_OK);
  report("exp2_int", lm_exp2(g, k) == NULL);
  report("reshape", lm_reshape(g, x, d4, 1) == NULL);
  report("reduce_axis", lm_sum_reduce(g, x, 5) == NULL);
  report("null_graph", lm_exp2(NULL, x) == NULL);
  report("null_tensor", lm_exp2(g, NULL) == NULL);
  lm_graph* other = lm_graph_new();
  report("other_graph", lm_exp2(other, x) == NULL);
  lm_graph_free(other);
  report("bad_dtype", lm_cast(g, x, (lm_dtype)42) == NULL);

  /* Views and reductions that work. */
  const int32_t perm[2] = {1, 0};
  lm_tensor* flat = lm_reshape(g, lm_permute(g, x, perm, 2), d6, 1); /* x.t().reshape(6) */
  lm_tensor* tail = lm_slice(g, x, -1, -2, INT64_MAX, 1);             /* x[:, -2:] */
  lm_tensor* rowmax = lm_max_reduce(g, x, -1);                        /* x.amax(-1) */
  lm_tensor* root = lm_sqrt(g, lm_mul(g, x, x));                      /* x.abs() */
  report("output", lm_output(g, flat) || lm_output(g, tail) || lm_output(g, rowmax) ||
                       lm_output(g, root));

  /* Errors while running. */
  lm_runtime* rt = lm_native_runtime_new(g);
  report("missing_input", lm_execute(rt, 0, NULL, NULL) != LM_OK);
  report("wrong_count", lm_set_data_f32(rt, x, xd, 5) != LM_OK);
  report("wrong_dtype_data", lm_set_data(rt, k, LM_F32, xd, 6) != LM_OK);
  report("f32_into_int", lm_set_data_f32(rt, k, xd, 6) != LM_OK);
  report("set_x", lm_set_data_f32(rt, x, xd, 6) != LM_OK);
  report("get_before_execute", lm_get_f32(rt, flat, buf, 64) != LM_OK);
  report("execute", lm_execute(rt, 0, NULL, NULL) != LM_OK);
  values("flat", rt, flat);
  values("tail", rt, tail);
  values("rowmax", rt, rowmax);
  values("root", rt, root);
  report("not_output", lm_get_f32(rt, x, buf, 64) != LM_OK);
  report("small_buffer", lm_get_f32(rt, flat, buf, 2) != LM_OK);
  report("get_wrong_dtype", lm_get_data(rt, flat, LM_INT, buf, 64) != LM_OK);
  int32_t rank = -1;
  int64_t dims[4] = {0, 0, 0, 0};
  report("tail_shape", lm_output_shape(rt, tail, &rank, dims, 4) != LM_OK);
  printf("tail_dims\tvalues\t%d\t%lld\t%lld\n", rank, (long long)dims[0], (long long)dims[1]);
  lm_runtime_free(rt);
  lm_graph_free(g);

  /* Symbolic dims: y (s, 3) summed over axis 0, run with s = 2. */
  lm_graph* gs = lm_graph_new();
  const char* syms[2] = {"s", NULL};
  const int64_t ds[2] = {0, 3};
  lm_tensor* y = lm_input(gs, "y", LM_F32, 2, ds, syms);
  lm_tensor* ysum = lm_sum_reduce(gs, y, 0);
  const int64_t d3[1] = {3};
  const float pd[3] = {1, 2, 3};
  lm_tensor* p = lm_parameter(gs, "p", LM_F32, 1, d3, NULL); /* a weight: set once */
  lm_tensor* yscaled = lm_mul(gs, ysum, p);
  report("sym_output", lm_output(gs, ysum) != LM_OK || lm_output(gs, yscaled) != LM_OK);
  lm_runtime* rts = lm_native_runtime_new(gs);
  lm_graph_free(gs); /* the runtime keeps the graph's tensor handles alive */
  report("sym_set", lm_set_data_f32(rts, y, xd, 6) != LM_OK ||
                        lm_set_data_f32(rts, p, pd, 3) != LM_OK);
  report("unbound_symbol", lm_execute(rts, 0, NULL, NULL) != LM_OK);
  const char* names[1] = {"s"};
  const int64_t vals[1] = {2};
  report("sym_execute", lm_execute(rts, 1, names, vals) != LM_OK);
  values("ysum", rts, ysum);
  values("yscaled", rts, yscaled);
  lm_runtime_free(rts);
  return 0;
}
"""


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    """The lines CHECKS_C prints, by label: (status or "values", fields...)."""
    tmp = tmp_path_factory.mktemp("c_api")
    source = tmp / "checks.c"
    source.write_text(CHECKS_C)
    run = _build_and_run(str(source), tmp)
    assert run.returncode == 0, run.stderr
    out = {}
    for line in run.stdout.splitlines():
        label, *rest = line.split("\t")
        out[label] = rest
    return out


X = torch.tensor([1, -2, 3, 0.5, 5, -6], dtype=torch.float32).reshape(2, 3)


@pytest.mark.parametrize(
    "label, status, fragments",
    [
        ("add_shapes", "LM_SHAPE_ERROR", ["(2, 3)", "(4,)"]),
        ("broadcast", "LM_SHAPE_ERROR", ["(2, 3) and (4,)", "do not broadcast"]),
        ("exp2_int", "LM_DTYPE_ERROR", ["int", "(2, 3)"]),
        ("reshape", "LM_SHAPE_ERROR", ["(2, 3)", "(4,)"]),
        ("reduce_axis", "LM_SHAPE_ERROR", ["axis 5", "(2, 3)"]),
        ("null_graph", "LM_INVALID_ARGUMENT", ["lm_exp2", "NULL"]),
        ("null_tensor", "LM_INVALID_ARGUMENT", ["lm_exp2", "NULL"]),
        ("other_graph", "LM_INVALID_ARGUMENT", ["another graph"]),
        ("bad_dtype", "LM_INVALID_ARGUMENT", ["dtype 42"]),
        ("missing_input", "LM_SHAPE_ERROR", ["'x'", "(2, 3)"]),
        ("wrong_count", "LM_SHAPE_ERROR", ["'x'", "(2, 3)", "6", "5"]),
        ("wrong_dtype_data", "LM_DTYPE_ERROR", ["'k'", "int", "f32"]),
        ("f32_into_int", "LM_DTYPE_ERROR", ["(2, 3)", "int"]),
        ("get_before_execute", "LM_SHAPE_ERROR", ["execute"]),
        ("not_output", "LM_SHAPE_ERROR", ["(2, 3)", "not an output"]),
        ("small_buffer", "LM_SHAPE_ERROR", ["(6,)", "6 elements", "holds 2"]),
        ("get_wrong_dtype", "LM_DTYPE_ERROR", ["(6,)", "f32", "int"]),
        ("unbound_symbol", "LM_SHAPE_ERROR", ["'s'"]),
    ],
)
def test_error_reports_status_and_shapes(checks, label, status, fragments):
    got_status, message = checks[label]
    assert got_status == status, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("label", ["output", "set_x", "execute", "tail_shape", "sym_output",
                                   "sym_set", "sym_execute"])
def test_calls_succeed(checks, label):
    assert checks[label][0] == "LM_OK", checks[label]


@pytest.mark.parametrize(
    "label, want",
    [
        ("flat", X.t().reshape(-1)),
        ("tail", X[:, -2:].reshape(-1)),
        ("rowmax", X.amax(-1)),
        ("root", X.abs().reshape(-1)),
        ("ysum", X.sum(0)),
        ("yscaled", X.sum(0) * torch.tensor([1.0, 2.0, 3.0])),
    ],
)
def test_results_match_torch(checks, label, want):
    kind, *fields = checks[label]
    assert kind == "values", fields
    got = torch.tensor([float(f) for f in fields])
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_output_shape(checks):
    kind, rank, d0, d1 = checks["tail_dims"]
    assert (int(rank), int(d0), int(d1)) == (2, 2, 2)
