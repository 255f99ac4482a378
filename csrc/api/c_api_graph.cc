// The C API's graphs, tensor facts, sources and outputs (luminal.h).
#include <string>
#include <vector>

#include "api/c_api_handles.h"

using namespace luminal;
using namespace luminal::capi;

extern "C" {

// ---- graphs -----------------------------------------------------------------------------

lm_graph* lm_graph_new(void) {
  lm_graph* out = nullptr;
  guard([&] { out = new lm_graph{std::make_shared<GraphState>()}; });
  return out;
}

void lm_graph_free(lm_graph* graph) { delete graph; }

const char* lm_graph_to_string(lm_graph* graph) {
  const char* out = nullptr;
  guard([&] {
    GraphState& s = state_of(graph, "lm_graph_to_string");
    s.text = s.graph.to_string();
    out = s.text.c_str();
  });
  return out;
}

// ---- tensors: facts ---------------------------------------------------------------------

int32_t lm_tensor_rank(const lm_tensor* t) {
  if (!t) {
    fail(LM_INVALID_ARGUMENT, "lm_tensor_rank: tensor is NULL");
    return -1;
  }
  return static_cast<int32_t>(t->edge.view.rank());
}

int64_t lm_tensor_dim(const lm_tensor* t, int32_t axis) {
  int64_t out = -1;
  guard([&] {
    if (!t) throw InvalidArgument("lm_tensor_dim: tensor is NULL");
    const ShapeTracker& v = t->edge.view;
    int a = axis_of(axis, v.rank());
    if (a < 0 || static_cast<size_t>(a) >= v.rank()) {
      throw ShapeError("lm_tensor_dim: axis " + std::to_string(axis) +
                       " is out of range for shape " + v.dims_string());
    }
    out = v.dims[a].try_const().value_or(-1);
  });
  return out;
}

lm_dtype lm_tensor_dtype(const lm_tensor* t) {
  if (!t) {
    fail(LM_INVALID_ARGUMENT, "lm_tensor_dtype: tensor is NULL");
    return LM_F32;
  }
  return static_cast<lm_dtype>(t->owner->graph.node(t->edge.node).dtype);
}

// ---- sources ----------------------------------------------------------------------------

namespace {
// lm_input and lm_parameter: an input, a parameter where `parameter` (ir/graph.h).
lm_tensor* make_input(lm_graph* graph, const char* name, lm_dtype dtype, int32_t rank,
                      const int64_t* dims, const char* const* symbols, bool parameter,
                      const char* fn) {
  return build(graph, fn, [&](GraphState& s) {
    std::string label = name ? name : "input" + std::to_string(s.graph.inputs().size());
    if (rank < 0) throw ShapeError(fn_msg(fn, "rank of '" + label + "' is negative"));
    if (rank > 0 && !dims && !symbols) throw InvalidArgument(fn_msg(fn, "dims is NULL"));
    std::vector<Expr> shape;
    for (int32_t k = 0; k < rank; ++k) {
      const char* sym = symbols ? symbols[k] : nullptr;
      if (sym) {
        std::string sname = sym;
        if (sname.empty() || sname == "z") {
          throw ShapeError(fn_msg(fn, "'" + label + "' dim " + std::to_string(k) + ": '" +
                                          sname + "' is not a usable symbol ('z' is reserved)"));
        }
        shape.push_back(Expr::symbol(sname));
        continue;
      }
      if (!dims) throw InvalidArgument(fn_msg(fn, "dims is NULL and symbols[k] is NULL"));
      if (dims[k] < 0) {
        throw ShapeError(fn_msg(fn, "'" + label + "' dim " + std::to_string(k) +
                                        " is negative (" + std::to_string(dims[k]) + ")"));
      }
      shape.push_back(Expr(dims[k]));
    }
    NodeId id = s.graph.input(label, shape, dtype_of(dtype, fn), parameter);
    return new_tensor(s, id, ShapeTracker::contiguous(shape));
  });
}
}  // namespace

lm_tensor* lm_input(lm_graph* graph, const char* name, lm_dtype dtype, int32_t rank,
                    const int64_t* dims, const char* const* symbols) {
  return make_input(graph, name, dtype, rank, dims, symbols, false, "lm_input");
}

lm_tensor* lm_parameter(lm_graph* graph, const char* name, lm_dtype dtype, int32_t rank,
                        const int64_t* dims, const char* const* symbols) {
  return make_input(graph, name, dtype, rank, dims, symbols, true, "lm_parameter");
}

lm_tensor* lm_constant(lm_graph* graph, double value, lm_dtype dtype) {
  const char* fn = "lm_constant";
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.constant(value, dtype_of(dtype, fn)));
  });
}

// ---- outputs ---------------------------------------------------------------

lm_status lm_output(lm_graph* graph, const lm_tensor* t) {
  const char* fn = "lm_output";
  return guard([&] {
    GraphState& s = state_of(graph, fn);
    s.graph.output(edge_of(s, t, fn, "t"));
  });
}

}  // extern "C"
