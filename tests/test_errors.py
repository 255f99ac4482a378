"""Every user error is a clear luminal exception naming the tensor and shapes; none
crashes the interpreter."""

import numpy as np
import pytest
import torch

import luminal as lm


def test_hierarchy():
    assert issubclass(lm.ShapeError, lm.LuminalError)
    assert issubclass(lm.ShapeError, ValueError)
    assert issubclass(lm.DTypeError, lm.LuminalError)
    assert issubclass(lm.DTypeError, TypeError)
    for cls in (lm.CompileError, lm.DeviceError, lm.InternalError):
        assert issubclass(cls, lm.LuminalError)


def test_mismatched_shapes_name_both():
    cx = lm.Graph()
    a, b = cx.tensor((3, 4)), cx.tensor((5, 4))
    with pytest.raises(lm.ShapeError, match=r"\(3, 4\).*\(5, 4\)"):
        a + b
    with pytest.raises(lm.ShapeError, match=r"matmul.*\(3, 4\).*\(5, 4\)"):
        a @ b


def test_core_checks_shapes_too():
    from luminal._core import OpKind

    cx = lm.Graph()
    a, b = cx.tensor((3, 4)), cx.tensor((4, 3))
    with pytest.raises(lm.ShapeError, match=r"Add: shapes \(3, 4\) and \(4, 3\)"):
        a._binary(OpKind.Add, b)
    c = cx.tensor((3, 4), lm.int32)
    with pytest.raises(lm.DTypeError, match="Add: dtypes f32 and int"):
        a._binary(OpKind.Add, c)


def test_missing_input_at_execute():
    cx = lm.Graph()
    a, b = cx.tensor(3, name="a"), cx.tensor(3, name="weights")
    (a + b).output()
    rt = cx.search(lm.NativeRuntime())
    rt.set_data(a, [1, 2, 3])
    with pytest.raises(lm.ShapeError, match=r"no data set for input 'weights' of shape \(3,\)"):
        rt.execute(cx.dyn_map)


def test_wrong_data_length():
    cx = lm.Graph()
    a = cx.tensor((2, 3), name="a")
    (a * 2).output()
    rt = cx.search(lm.NativeRuntime())
    with pytest.raises(lm.ShapeError, match=r"input 'a' of shape \(2, 3\).*needs 6 elements, got 5"):
        rt.set_data(a, [1, 2, 3, 4, 5])
    with pytest.raises(lm.ShapeError, match=r"'a' has shape \(2, 3\), got data of shape \(3, 2\)"):
        rt.set_data(a, np.zeros((3, 2)))


def test_wrong_data_length_with_symbolic_dims():
    cx = lm.Graph()
    a = cx.tensor(("s", 2), name="a")
    (a * 2).output()
    rt = cx.search(lm.NativeRuntime())
    rt.set_data(a, np.zeros((3, 2)))
    cx.set_dim("s", 4)
    with pytest.raises(lm.ShapeError, match="'a'.*needs 8 elements.*has 6"):
        rt.execute(cx.dyn_map)


def test_unbound_symbol():
    cx = lm.Graph()
    a = cx.tensor(("seq", 2), name="a")
    (a * 2).output()
    rt = cx.search(lm.NativeRuntime())
    rt.set_data(a, np.zeros((3, 2)))
    with pytest.raises(lm.ShapeError, match="symbol 'seq' has no value"):
        rt.execute({})


def test_bad_symbol_names_and_values():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match="symbol name"):
        cx.tensor(("not a name", 2))
    with pytest.raises(lm.ShapeError, match="reserved"):
        cx.tensor(("z", 2))
    with pytest.raises(lm.ShapeError, match="negative"):
        cx.tensor((-1, 2))
    with pytest.raises(lm.ShapeError, match="non-negative int"):
        cx.set_dim("s", -3)
    with pytest.raises(lm.ShapeError, match="must be an int"):
        cx.tensor((2.5,))


def test_tensor_from_another_graph():
    cx1, cx2 = lm.Graph(), lm.Graph()
    a, b = cx1.tensor(3), cx2.tensor(3)
    with pytest.raises(lm.ShapeError, match="another graph"):
        a + b
    (a * 2).output()
    rt = cx1.search(lm.NativeRuntime())
    with pytest.raises(lm.ShapeError, match="not a tensor of the compiled graph"):
        rt.set_data(b, [1, 2, 3])


def test_get_of_non_output():
    cx = lm.Graph()
    a = cx.tensor(3)
    b = a * 2
    (a + 1).output()
    rt = cx.search(lm.NativeRuntime())
    rt.set_data(a, [1, 2, 3])
    rt.execute()
    with pytest.raises(lm.ShapeError, match="not an output"):
        rt.get(b)


def test_set_data_on_non_input():
    cx = lm.Graph()
    a = cx.tensor(3)
    b = (a * 2).output()
    rt = cx.search(lm.NativeRuntime())
    with pytest.raises(lm.ShapeError, match="not an input"):
        rt.set_data(b, [1, 2, 3])


def test_bad_data_types():
    cx = lm.Graph()
    a = cx.tensor(2, name="a")
    i = cx.tensor(2, lm.int32, name="i")
    (a * 2).output()
    (i * 2).output()
    rt = cx.search(lm.NativeRuntime())
    with pytest.raises(lm.DTypeError):
        rt.set_data(a, ["x", "y"])
    with pytest.raises(lm.DTypeError, match="'i' is int32, got non-integral"):
        rt.set_data(i, [1.5, 2.0])
    rt.set_data(i, torch.tensor([1, 2]))  # int64 torch data converts


def test_execute_before_search_and_without_outputs():
    cx = lm.Graph()
    cx.tensor(2)
    with pytest.raises(lm.ShapeError, match="no outputs"):
        cx.search(lm.NativeRuntime())
    rt = lm.NativeRuntime()
    with pytest.raises(lm.ShapeError, match="call cx.search"):
        rt.execute({})


def test_bad_axes_and_dtypes():
    cx = lm.Graph()
    a = cx.tensor((2, 3))
    with pytest.raises(lm.ShapeError, match=r"dim 2 is out of range for shape \(2, 3\)"):
        a.sum(2)
    with pytest.raises(lm.ShapeError, match="permute"):
        a.permute(0, 0)
    with pytest.raises(lm.ShapeError, match="expand"):
        a.expand(4, 3)
    with pytest.raises(lm.DTypeError, match="unknown dtype"):
        cx.tensor(3, dtype="complex64")
    with pytest.raises(lm.ShapeError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(lm.ShapeError, match="out of range"):
        a[5]


def test_search_argument_errors():
    cx = lm.Graph()
    (cx.tensor(2) * 2).output()
    with pytest.raises(TypeError):
        cx.search(lm.NativeRuntime)  # the class, not an instance
    with pytest.raises(ValueError):
        cx.search(lm.NativeRuntime(), 0)
    with pytest.raises(TypeError):
        cx.build_search_space("native")


def test_lazy_tensor_has_no_truth_value():
    cx = lm.Graph()
    a = cx.tensor(2)
    with pytest.raises(TypeError, match="lazy"):
        bool(a < 1)


def test_read_only_and_broadcast_arrays_are_accepted(runtime):
    cx = lm.Graph()
    a = cx.tensor((2, 3), name="a")
    y = (a * 2.0).output()
    rt = cx.search(runtime(), 1)
    frozen = np.arange(6, dtype=np.float32).reshape(2, 3)
    frozen.setflags(write=False)
    rt.set_data(a, frozen)
    rt.execute()
    np.testing.assert_array_equal(rt.get(y), frozen * 2)
    rt.set_data(a, np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)))
    rt.execute()
    np.testing.assert_array_equal(rt.get(y), np.tile(np.arange(3) * 2.0, (2, 1)))


def test_set_storage_takes_raw_words_and_checks_them(runtime):
    cx = lm.Graph()
    w = cx.tensor((2, 2), lm.bfloat16, name="w")
    y = (w.float() * 1.0).output()
    rt = cx.search(runtime(), 1)
    values = torch.tensor([[1.5, -2.0], [0.25, 3.0]], dtype=torch.bfloat16)
    words = values.view(torch.int16).numpy().view(np.uint16)
    rt.set_storage(w, words)
    rt.execute()
    np.testing.assert_array_equal(rt.get(y), values.float().numpy())
    with pytest.raises(lm.DTypeError, match="set_storage: input 'w' \\(bfloat16\\) takes .*uint16"):
        rt.set_storage(w, values.float().numpy())
    with pytest.raises(lm.ShapeError, match="set_storage: input 'w' has shape \\(2, 2\\)"):
        rt.set_storage(w, np.zeros((3, 2), np.uint16))
