"""Seeded random numbers from primitives: a counter (Iota) run through an integer hash of
wrapping i32 Mul and Add (rounds of h * (2h + 1), a high-to-low fold, an odd multiply; a
right shift is an exact Mod, Cast and float scale), then scaled to [0, 1) or made normal by
Box-Muller. A seed gives the same values on every runtime; the stream is not torch's."""

from __future__ import annotations

import math

from .._core import Expr
from .. import dtype as dt
from ..errors import ShapeError
from .shape_utils import product

_GOLDEN = 0x9E3779B1
_MIX1 = 0x85EBCA6B
_MIX2 = 0xC2B2AE35


def _i32(v: int) -> int:
    """``v`` wrapped to a signed 32-bit value."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v


def _seed_offset(seed: int) -> int:
    """A well-mixed 32-bit start for ``seed`` (any Python int), so nearby seeds differ."""
    h = (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 31
    h = (h * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 29
    return _i32(h)


def _shift_right(x, k: int):
    """``x`` / 2**k toward zero for 8 <= k < 31: the multiple x - x % 2**k has at most 24
    significant bits, so it passes through f32 exactly."""
    whole = x - x.fmod(1 << k)
    return (whole.to(dt.float32) * (1.0 / (1 << k))).to(dt.int32)


def hash_bits(counter):
    """An int32 tensor of well-mixed bits for each int32 counter value. Each round is
    h * (2h + 1) (a nonlinear bijection mod 2**32, as in RC6), a fold of the high half into
    the low half, and a multiply by an odd constant."""
    h = counter * _i32(_GOLDEN)
    for mix in (_MIX1, _MIX2):
        h = h * (h * 2 + 1)
        h = h + _shift_right(h, 16)
        h = h * _i32(mix)
    return h + _shift_right(h, 16)


def _counter(graph, count, seed: int, lane: int, lanes: int):
    """Counter values lanes * i + lane (i < count) shifted by the seed's start."""
    return graph.iota(Expr("z") * lanes + lane, count) + _seed_offset(seed)


def _unit(bits):
    """Bits to a float in [0, 1) with 24 random bits."""
    top = _shift_right(bits, 8)  # in [-2**23, 2**23)
    return (top.to(dt.float32) + float(1 << 23)) * (1.0 / (1 << 24))


def uniform(graph, shape: list, seed: int):
    """Float32 uniform in [0, 1) of ``shape``."""
    _check_seed(seed)
    count = product(shape)
    return _unit(hash_bits(_counter(graph, count, seed, 0, 1))).reshape(shape)


def normal(graph, shape: list, seed: int):
    """Float32 standard normal of ``shape``: r * cos(theta) from two uniforms per element."""
    _check_seed(seed)
    count = product(shape)
    u1 = 1.0 - _unit(hash_bits(_counter(graph, count, seed, 0, 2)))  # in (0, 1]
    u2 = _unit(hash_bits(_counter(graph, count, seed, 1, 2)))
    radius = (u1.log2() * (-2.0 * math.log(2.0))).sqrt()
    return (radius * (u2 * (2.0 * math.pi)).cos()).reshape(shape)


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ShapeError(f"rand: seed must be an int, got {seed!r}")


class RandomState:
    """A graph's running random counter, for random numbers that differ on every execute
    (dropout in training): an int32 scalar input; each draw reads the next range of
    counters after it, and ``next_value()`` (an output) is the counter past every draw, which
    a train step carries back into the input (Runtime.carry). Made by ``Graph.random_state``.
    """

    def __init__(self, graph):
        self.graph = graph
        self.input = graph.tensor((), dt.int32, name="random.state")
        self.drawn = Expr(0)  # counters used so far by this graph's draws
        self._next = None

    def uniform(self, shape: list):
        """Uniform in [0, 1) of ``shape`` from the next counters."""
        if self._next is not None:
            raise ShapeError("random state: a draw after next_value() would reuse counters")
        count = product(shape)
        start = self.input + self.graph.constant(self.drawn, dt.int32)
        self.drawn = self.drawn + count
        counter = self.graph.iota(Expr("z"), count) + start
        return _unit(hash_bits(counter)).reshape(shape)

    def next_value(self):
        """The state after every draw (an output; built once)."""
        if self._next is None:
            self._next = (self.input + self.graph.constant(self.drawn, dt.int32)).output()
        return self._next
