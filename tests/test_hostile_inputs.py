"""Hostile and extreme inputs to the weight readers, the model configs, the tokenizer glue, a
generation session and the ``luminal`` command: each gets a clear LuminalError (a WeightsError
naming the file and the key or tensor, a ShapeError naming the value), never a traceback from
deep inside, a wrong answer or a crash. Files are written byte by byte here, so every field a
reader trusts can be made wrong."""

import json
import struct

import numpy as np
import pytest

import luminal as lm
from luminal.models import LlamaForCausalLM
from luminal.models.bert import BertConfig
from luminal.models.llama import LlamaConfig
from luminal.weights import load_gguf, load_safetensors

LLAMA = {"vocab_size": 32, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
         "tie_word_embeddings": True}
BERT = {"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 4,
        "intermediate_size": 32}


# ---- safetensors -----------------------------------------------------------------------

def write_safetensors(path, header: dict, data: bytes = b"") -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def test_overlapping_tensors_are_refused(tmp_path):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}},
                      bytes(16))
    with pytest.raises(lm.WeightsError, match="tensors 'a' and 'b' overlap"):
        load_safetensors(path)


def test_adjacent_and_empty_tensors_are_not_overlaps(tmp_path):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                             "e": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]},
                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}},
                      np.arange(4, dtype="<f4").tobytes())
    f = load_safetensors(path)
    np.testing.assert_array_equal(f["b"], [2.0, 3.0])
    assert f["e"].shape == (0,)


@pytest.mark.parametrize("shape", [[2**32, 2**32], [2**62, 4], [2**40, 2**40, 2**40]])
def test_a_shape_whose_size_wraps_int64_is_refused(tmp_path, shape):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"a": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}})
    with pytest.raises(lm.WeightsError, match="tensor 'a'.*needs"):
        load_safetensors(path)


def test_a_deeply_nested_header_is_refused(tmp_path):
    raw = b"[" * 100000 + b"]" * 100000
    path = tmp_path / "w.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    with pytest.raises(lm.WeightsError, match="nested too deeply|not valid JSON"):
        load_safetensors(path)


def test_a_header_integer_with_too_many_digits_is_refused(tmp_path):
    raw = b'{"a": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}'
    path = tmp_path / "w.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4))
    with pytest.raises(lm.WeightsError, match="w.safetensors: bad safetensors header: .*digits"):
        load_safetensors(path)


# ---- GGUF ------------------------------------------------------------------------------

def gguf_string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path, metadata: list, tensors: list, data: bytes = b"") -> None:
    """metadata: (key, type id, value bytes); tensors: (name, dims, ggml type, offset)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", kind) + value
    for name, dims, kind, offset in tensors:
        out += gguf_string(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", kind, offset)
    out += bytes(-len(out) % 32)
    path.write_bytes(out + data)


def nested_array(depth: int) -> bytes:
    """A metadata value: arrays of one array each, ``depth`` deep, around one u32."""
    value = struct.pack("<I", 7)
    kind = 4
    for _ in range(depth):
        value = struct.pack("<IQ", kind, 1) + value
        kind = 9
    return value


def test_gguf_arrays_nested_too_deep_are_refused(tmp_path):
    path = tmp_path / "t.gguf"
    write_gguf(path, [("deep", 9, nested_array(100000))], [])
    with pytest.raises(lm.WeightsError, match="'deep' nests arrays more than 8 deep"):
        load_gguf(path)
    write_gguf(path, [("ok", 9, nested_array(3))], [])
    assert load_gguf(path).metadata["ok"] == [[[7]]]


def test_gguf_tensor_whose_size_wraps_int64_is_refused(tmp_path):
    path = tmp_path / "t.gguf"
    write_gguf(path, [], [("a", [2**32, 2**32], 0, 0)], bytes(32))
    with pytest.raises(lm.WeightsError, match="tensor 'a'.* needs"):
        load_gguf(path)


def test_gguf_alignment_of_the_wrong_type_is_refused(tmp_path):
    path = tmp_path / "t.gguf"
    write_gguf(path, [("general.alignment", 8, gguf_string("32"))], [])
    with pytest.raises(lm.WeightsError, match="bad GGUF alignment"):
        load_gguf(path)


def test_gguf_llama_metadata_is_checked(tmp_path):
    """Zero heads and a float layer count in a GGUF's llama metadata: WeightsErrors naming the
    file and the key, not a ZeroDivisionError."""
    u32 = lambda v: struct.pack("<I", v)  # noqa: E731
    base = [("general.architecture", 8, gguf_string("llama")),
            ("llama.embedding_length", 4, u32(16)), ("llama.feed_forward_length", 4, u32(32)),
            ("llama.block_count", 4, u32(1)), ("llama.vocab_size", 4, u32(32))]
    path = tmp_path / "t.gguf"
    write_gguf(path, base + [("llama.attention.head_count", 4, u32(0))], [])
    with pytest.raises(lm.WeightsError, match=r"t\.gguf: GGUF metadata.*'num_attention_heads' "
                                              r"is 0"):
        LlamaForCausalLM.from_gguf(path)
    layers = [m for m in base if m[0] != "llama.block_count"]
    write_gguf(path, layers + [("llama.attention.head_count", 4, u32(4)),
                               ("llama.block_count", 6, struct.pack("<f", 1.5))], [])
    with pytest.raises(lm.WeightsError, match="'num_hidden_layers' is 1.5"):
        LlamaForCausalLM.from_gguf(path)


# ---- configs ---------------------------------------------------------------------------

@pytest.mark.parametrize("change,message", [
    ({"num_attention_heads": 0}, "'num_attention_heads' is 0, it must be an integer >= 1"),
    ({"num_hidden_layers": 2.0}, "'num_hidden_layers' is 2.0"),
    ({"num_hidden_layers": True}, "'num_hidden_layers' is True"),
    ({"hidden_size": "16"}, "'hidden_size' is '16'"),
    ({"num_key_value_heads": 3}, "'num_attention_heads' \\(4\\) is not a multiple of "
                                 "'num_key_value_heads' \\(3\\)"),
    ({"hidden_size": 18}, "'hidden_size' \\(18\\) is not a multiple of"),
    ({"rms_norm_eps": -1.0}, "'rms_norm_eps' is -1.0, it must be a positive number"),
    ({"rope_theta": float("nan")}, "'rope_theta' is nan"),
    ({"tie_word_embeddings": "yes"}, "'tie_word_embeddings' is 'yes', it must be true or false"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}},
     "\\[rope_scaling\\]: lacks 'low_freq_factor'"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 8.0}}, "rope scaling of type 'yarn'"),
    ({"rope_scaling": [1, 2]}, "'rope_scaling' is \\[1, 2\\], it must be an object"),
    ({"eos_token_id": [1, "x"]}, "'eos_token_id' is \\[1, 'x'\\]"),
])
def test_bad_llama_config_values_name_the_key(change, message):
    with pytest.raises(lm.WeightsError, match=message):
        LlamaConfig.from_dict({**LLAMA, **change})


def test_a_config_that_is_not_an_object_is_refused(tmp_path):
    (tmp_path / "config.json").write_text("[1, 2, 3]")
    with pytest.raises(lm.WeightsError, match="config.json: the config is a list"):
        LlamaForCausalLM.from_pretrained(tmp_path)


def test_a_config_integer_with_too_many_digits_is_refused(tmp_path):
    (tmp_path / "config.json").write_text('{"vocab_size": ' + "9" * 5000 + "}")
    with pytest.raises(lm.WeightsError, match="config.json: not valid JSON .*digits"):
        LlamaForCausalLM.from_pretrained(tmp_path)


def test_a_missing_key_is_named():
    config = dict(LLAMA)
    del config["vocab_size"]
    with pytest.raises(lm.WeightsError, match="lacks 'vocab_size'"):
        LlamaConfig.from_dict(config)


def test_a_good_llama_config_reads_as_written():
    c = LlamaConfig.from_dict({**LLAMA, "eos_token_id": 3, "rope_scaling": {
        "rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}})
    assert (c.head_dim, c.num_key_value_heads, c.eos_token_id) == (4, 2, [3])
    assert c.rope.params["factor"] == 32.0 and c.tie_word_embeddings is True


@pytest.mark.parametrize("change,message", [
    ({"num_attention_heads": 0}, "'num_attention_heads' is 0"),
    ({"hidden_size": 18}, "'hidden_size' \\(18\\) is not a multiple"),
    ({"layer_norm_eps": "small"}, "'layer_norm_eps' is 'small'"),
])
def test_bad_bert_config_values_name_the_key(change, message):
    with pytest.raises(lm.WeightsError, match=message):
        BertConfig.from_dict({**BERT, **change})


# ---- tokenizer, session, CLI -------------------------------------------------------------

def tiny_llama_dir(tmp_path):
    """A 1-layer Llama directory with random f32 weights (no tokenizer)."""
    rng = np.random.default_rng(0)
    h, inter, vocab = LLAMA["hidden_size"], LLAMA["intermediate_size"], LLAMA["vocab_size"]
    kv = h // LLAMA["num_attention_heads"] * LLAMA["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": (vocab, h), "model.norm.weight": (h,),
              "model.layers.0.input_layernorm.weight": (h,),
              "model.layers.0.post_attention_layernorm.weight": (h,),
              "model.layers.0.self_attn.q_proj.weight": (h, h),
              "model.layers.0.self_attn.k_proj.weight": (kv, h),
              "model.layers.0.self_attn.v_proj.weight": (kv, h),
              "model.layers.0.self_attn.o_proj.weight": (h, h),
              "model.layers.0.mlp.gate_proj.weight": (inter, h),
              "model.layers.0.mlp.up_proj.weight": (inter, h),
              "model.layers.0.mlp.down_proj.weight": (h, inter)}
    header, data = {}, b""
    for name, shape in shapes.items():
        raw = (rng.standard_normal(shape) * 0.1).astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    write_safetensors(tmp_path / "model.safetensors", header, data)
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    return tmp_path


def test_token_ids_beyond_the_vocabulary_are_refused(tmp_path):
    """CpuRuntime's Gather reads 0 past the table's end: a session must not run such ids."""
    from luminal.models import CausalLMSession

    model = LlamaForCausalLM.from_pretrained(tiny_llama_dir(tmp_path), max_context=16)
    session = CausalLMSession(model, lm.NativeRuntime())
    for bad in (32, -1):
        with pytest.raises(lm.ShapeError, match=f"token id {bad} is out of range for the "
                                                f"model's vocabulary of 32"):
            session.step(np.array([[1, bad]]))
    assert session.past == 0  # nothing half-done
    assert session.step(np.array([[1, 31]])).shape == (1, 1, 32)


def test_a_corrupt_tokenizer_is_a_weights_error(tmp_path):
    pytest.importorskip("tokenizers")
    from luminal.models.tokenizer import load_tokenizer

    (tmp_path / "tokenizer.json").write_text('{"model": {"type": "nothing we know"}}')
    with pytest.raises(lm.WeightsError, match="tokenizer.json: not a tokenizer"):
        load_tokenizer(tmp_path)


@pytest.mark.parametrize("config", ['{"vocab_size": 0}', "[]", "{not json"])
def test_the_cli_reports_a_bad_config_in_one_line(tmp_path, capsys, config):
    from luminal.cli import main

    (tmp_path / "config.json").write_text(config)
    code = main(["run", str(tmp_path), "--prompt", "hi", "--runtime", "native"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("luminal: error: ")
    assert "Traceback" not in err


def test_an_iota_over_a_symbol_compiles_on_every_runtime():
    """The symbols of an Iota's expression are the program's symbols too (CpuRuntime
    declared only those of shapes, views and constants: 's' undeclared)."""
    from conftest import CpuRuntime

    for runtime in (lm.NativeRuntime(), CpuRuntime()):
        cx = lm.Graph()
        y = cx.iota(lm.Expr("z") + lm.Expr("s"), 4).output()
        rt = cx.search(runtime)
        rt.execute({"s": 5})
        np.testing.assert_array_equal(rt.get(y), [5, 6, 7, 8])


def test_a_very_long_elementwise_chain_compiles_on_the_cpu():
    """20000 chained adds: fusing them all into one kernel overflowed the C stack while
    lowering (recursion along the chain); the chain is cut into kernels of bounded depth."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, luminal as lm
        cx = lm.Graph()
        x = cx.tensor((8,))
        y = x
        for i in range(20000):
            y = y + 1.0
        y = y.output()
        rt = lm.CpuRuntime(cache_dir="")
        rt._load(cx)
        rt.set_data(x, np.arange(8, dtype=np.float32))
        rt.execute()
        print(rt.get(y).tolist())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str([20000.0 + i for i in range(8)])


def test_a_symbolic_divisor_bound_to_zero_does_not_kill_the_process():
    """cx.iota(z // s) with s = 0: NativeRuntime raises; the generated C divided by zero
    (SIGFPE). It gives 0 there now (as int % 0 does), and the right values for s > 0."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import luminal as lm
        for s in (0, 3):
            cx = lm.Graph()
            y = cx.iota(lm.Expr("z") // lm.Expr("s") + lm.Expr("z") % lm.Expr("s"), 4).output()
            rt = cx.search(lm.CpuRuntime(cache_dir=""), progress=False, cache=False)
            rt.execute({"s": s})
            print(rt.get(y).tolist())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-2:] == ["[0, 0, 0, 0]", "[0, 1, 2, 1]"]
    with pytest.raises(lm.ShapeError, match="division by zero"):
        cx = lm.Graph()
        y = cx.iota(lm.Expr("z") // lm.Expr("s"), 4).output()
        rt = cx.search(lm.NativeRuntime())
        rt.execute({"s": 0})


def test_dims_beyond_int64_are_shape_errors():
    cx = lm.Graph()
    (cx.tensor(("s",)) * 2.0).output()
    with pytest.raises(lm.ShapeError, match="below 2\\*\\*63"):
        cx.set_dim("s", 2**63)
    rt = cx.search(lm.NativeRuntime())
    with pytest.raises(lm.ShapeError, match="below 2\\*\\*63"):
        rt.execute({"s": 2**64})


def test_a_read_only_search_cache_does_not_fail_the_search(tmp_path, capsys):
    """Storing the result is a courtesy: a cache directory that cannot be written leaves the
    search's result intact and says so on stderr."""
    from conftest import unwritable_dir

    blocked = unwritable_dir(tmp_path)
    cx = lm.Graph()
    x = cx.tensor((4,))
    y = (x * 2.0 + 1.0).output()
    rt = cx.search(lm.NativeRuntime(), 2, cache_dir=str(blocked))
    rt.set_data(x, [1.0, 2.0, 3.0, 4.0])
    rt.execute()
    assert rt.get(y).tolist() == [3.0, 5.0, 7.0, 9.0]
    assert "search result not cached" in capsys.readouterr().err
