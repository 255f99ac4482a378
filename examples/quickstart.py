"""The README quickstart: build a lazy graph, compile it, run it."""

import luminal as lm

cx = lm.Graph()
a = cx.tensor((3, 1), name="a")
b = cx.tensor((1, 4), name="b")
c = a.matmul(b).output()  # nothing runs yet: ops are recorded

cx.build_search_space(lm.NativeRuntime)
rt = cx.search(lm.NativeRuntime(), 1)

rt.set_data(a, [1.0, 2.0, 3.0])
rt.set_data(b, [1.0, 2.0, 3.0, 3.0])
rt.execute(cx.dyn_map)
print(rt.get_f32(c))
