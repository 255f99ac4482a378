"""The ATen operators that read or write by index, and those that sort, in luminal terms
(entries of aten.ATEN, which merges INDEXING): advanced indexing, index_put and the scatter
family, diagonals, sort/topk/kthvalue/median and searchsorted. Luminal sorts by O(n^2)
comparisons, so a sort too large for that runs in PyTorch. Not here: the table's other
entries (aten.py)."""

from __future__ import annotations

import torch

from .. import dtype as dt
from ..hl_ops.shape_utils import product
from ..hl_ops.sorting import searchsorted
from .unsupported import Unsupported

aten = torch.ops.aten


def _index(x, indices):
    """x[indices]: int index tensors at some axes (None: the whole axis), torch's advanced
    indexing."""
    if any(t is not None and t.dtype == dt.bool_ for t in indices):
        raise Unsupported("index with a boolean mask (its result's shape depends on values)")
    return x[tuple(slice(None) if t is None else t for t in indices)]


def _index_put(x, indices, values, accumulate=False):
    return x.index_put(list(indices), values, accumulate)


# Sorting ranks every element against every other of its row: (rows x n x n) comparisons.
# A larger sort (or one of a symbolic length) runs in PyTorch rather than build that.
SORT_COMPARISONS_LIMIT = 1 << 24


def _sortable(x, dim, op):
    """Raises Unsupported where sorting ``x`` along ``dim`` would take too many comparisons."""
    if x.ndim == 0:
        return
    n = x.st.dims[dim if dim >= 0 else dim + x.ndim]
    size = product(x.st.dims)
    if not n.is_const() or not size.is_const():
        raise Unsupported(f"{op} along a symbolic dim (luminal sorts by O(n^2) comparisons)")
    work = size.as_const() * n.as_const()
    if work > SORT_COMPARISONS_LIMIT:
        raise Unsupported(f"{op} of {n.as_const()} elements a row: {work} comparisons (luminal "
                          f"sorts by O(n^2) comparisons; the limit is {SORT_COMPARISONS_LIMIT})")


def _sort(x, dim=-1, descending=False, stable=None):
    _sortable(x, dim, "sort")
    return tuple(x.sort(dim, descending))


def _topk(x, k, dim=-1, largest=True, sorted=True):
    _sortable(x, dim, "topk")
    return tuple(x.topk(k, dim, largest, sorted))


def _kthvalue(x, k, dim=-1, keepdim=False):
    _sortable(x, dim, "kthvalue")
    return tuple(x.kthvalue(k, dim, keepdim))


def _median(method):
    def median(x, dim=None, keepdim=False):
        _sortable(x.reshape(-1) if dim is None else x, 0 if dim is None else dim, method)
        out = getattr(x, method)(dim, keepdim)
        return out if dim is None else tuple(out)
    return median


def _searchsorted(seq, values, out_int32=False, right=False, side=None, sorter=None):
    return searchsorted(seq, values, right=right, side=side, sorter=sorter)


INDEXING = {
    aten.index_select.default: lambda x, dim, index: x.index_select(dim, index),
    aten.gather.default: lambda x, dim, index, sparse_grad=False: x.gather(dim, index),
    aten.index.Tensor: _index,
    aten.index_put.default: _index_put,
    aten._unsafe_index_put.default: _index_put,
    aten._unsafe_index.Tensor: lambda x, indices: _index(x, indices),
    aten.diagonal.default: lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
    aten.diag_embed.default: lambda x, offset=0, dim1=-2, dim2=-1:
        x.diag_embed(offset, dim1, dim2),
    aten.scatter.src: lambda x, dim, index, src: x.scatter(dim, index, src),
    aten.scatter.value: lambda x, dim, index, value: x.scatter(dim, index, value=value),
    aten.scatter_add.default: lambda x, dim, index, src: x.scatter_add(dim, index, src),
    aten.scatter_reduce.two: lambda x, dim, index, src, reduce, include_self=True:
        x.scatter_reduce(dim, index, src, reduce, include_self=include_self),
    aten.index_reduce.default: lambda x, dim, index, source, reduce, include_self=True:
        x.index_reduce(dim, index, source, reduce, include_self=include_self),
    aten.slice_scatter.default: lambda x, src, dim=0, start=None, end=None, step=1:
        x.slice_scatter(src, dim, start, end, step),
    aten.select_scatter.default: lambda x, src, dim, index: x.select_scatter(src, dim, index),
    aten.diagonal_scatter.default: lambda x, src, offset=0, dim1=0, dim2=1:
        x.diagonal_scatter(src, offset, dim1, dim2),
    aten.masked_scatter.default: lambda x, mask, source: x.masked_scatter(mask, source),
    aten.put.default: lambda x, index, source, accumulate=False:
        x.put(index, source, accumulate),
    aten.sort.default: _sort,
    aten.sort.stable: lambda x, stable=None, dim=-1, descending=False: _sort(
        x, dim, descending),
    aten.topk.default: _topk,
    aten.kthvalue.default: _kthvalue,
    aten.median.default: _median("median"),
    aten.median.dim: _median("median"),
    aten.nanmedian.default: _median("nanmedian"),
    aten.nanmedian.dim: _median("nanmedian"),
    aten.searchsorted.Tensor: _searchsorted,
    aten.bucketize.Tensor: lambda x, boundaries, out_int32=False, right=False:
        searchsorted(boundaries, x, right=right),
}
