"""luminal.search: what Graph.build_search_space and Graph.search run (driver.py), in phases
spread over one module each: check, cost (the calibrated model) and calibrate (its probe
graphs), cache, descent, timing, report and plot. Not the e-graph itself (csrc/egraph)."""

from .driver import (
    DEFAULT_DIM,
    CandidateResult,
    SearchLimits,
    SearchReport,
    SpaceSpec,
    representative_dims,
    search,
)

__all__ = ["DEFAULT_DIM", "CandidateResult", "SearchLimits", "SearchReport", "SpaceSpec",
           "representative_dims", "search"]
