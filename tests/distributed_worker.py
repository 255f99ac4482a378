"""One rank of tests/test_distributed.py, started by torchrun: ``generate MODEL OUT MB`` splits
the model over the ranks (PipelineSession on CpuRuntime, micro-batches of MB positions),
decodes 12 greedy tokens and writes
them, its layers and its resident weight bytes to OUT.<rank>.json; ``disagree OUT`` has the
ranks state different values to Communicator.agree and writes the error each rank got."""

import json
import sys

import luminal as lm
from luminal import distributed

from conftest import CpuRuntime


def main(mode, *args):
    comm = distributed.init()
    if mode == "generate":
        from luminal.models import LlamaForCausalLM, PipelineSession, generate

        model_dir, out, micro_batch = args
        model = LlamaForCausalLM.from_pretrained(model_dir, max_context=32)
        session = PipelineSession(model, comm, CpuRuntime(threads=1),
                                  micro_batch=int(micro_batch))
        memory = session.runtime.memory()  # the weights alone, before any cache is set
        tokens = list(generate(session, [9, 8, 7, 6, 5], 12))
        result = {"tokens": tokens, "layers": [session.layers.start, session.layers.stop],
                  "weights": memory["borrowed_input_bytes"] + memory["owned_input_bytes"]}
    elif mode == "tp":
        from luminal.models import LlamaForCausalLM, generate
        from luminal.models.tensor_parallel import TensorParallelSession

        model_dir, out = args
        model = LlamaForCausalLM.from_pretrained(model_dir, max_context=32)
        session = TensorParallelSession(model, comm, lambda: CpuRuntime(threads=1))
        weights = sum(m["borrowed_input_bytes"] + m["owned_input_bytes"]
                      for m in (rt.memory() for rt in session.runtimes()))
        tokens = list(generate(session, [9, 8, 7, 6, 5], 12))
        result = {"tokens": tokens, "weights": weights}
    else:
        (out,) = args
        try:
            comm.agree(("batch", 1 + comm.rank), "the batch")
            result = {"error": None}
        except lm.ShapeError as e:
            result = {"error": str(e)}
    with open(f"{out}.{comm.rank}.json", "w") as f:
        json.dump(result, f)
    comm.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
