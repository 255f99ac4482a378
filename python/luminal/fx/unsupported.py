"""Unsupported: what the converter raises for a call luminal does not express; the backend
then runs that graph in PyTorch and reports the message. ``reason`` names why for the
operators luminal will not express, so the report says more than "not yet"."""


class Unsupported(Exception):
    """A call luminal does not express; its message is the one-line reason reported."""


# (substring of an operator's name, why luminal does not express it), first match wins
_WHY_NOT = [
    ("_fft_", "FFT needs complex numbers, which luminal does not have"),
    ("complex", "luminal has no complex numbers"),
    ("polar", "luminal has no complex numbers"),
    ("rand", "random sampling: luminal's generators are seeded per graph, so each call "
             "would repeat the same numbers"),
    ("normal", "random sampling: luminal's generators are seeded per graph, so each call "
               "would repeat the same numbers"),
    ("uniform", "random sampling: luminal's generators are seeded per graph, so each call "
                "would repeat the same numbers"),
    ("bernoulli", "random sampling: luminal's generators are seeded per graph"),
    ("multinomial", "random sampling: luminal's generators are seeded per graph"),
    ("linalg_", "a linear-algebra routine luminal lacks (decompositions and solvers iterate "
                "data-dependently)"),
    ("cholesky", "a matrix decomposition or solver (data-dependent iterations)"),
    ("nonzero.default", "its result's shape depends on the values"),
    ("masked_select", "its result's shape depends on the values"),
    ("unique", "its result's shape depends on the values"),
    ("_local_scalar_dense", "reads a tensor's value into Python (.item())"),
]


def reason(target) -> str:
    """The one-line reason for an operator without a luminal equivalent."""
    name = str(target)
    for part, why in _WHY_NOT:
        if part in name:
            return f"operator {name}: {why}"
    if name.endswith("_.default") or "_." in name:
        return f"operator {name} mutates its input in place"
    return f"operator {name} has no luminal equivalent yet"
