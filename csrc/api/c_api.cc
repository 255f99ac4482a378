// The C API of luminal.h over the C++ core. Each entry point checks its handles, calls the core,
// and turns every exception into a status code plus a thread-local message; nothing throws out.
// Holds no logic of its own beyond argument checks, Python-style axes and NumPy broadcasting.
#include "api/luminal.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "ir/graph.h"
#include "runtime/native.h"

using namespace luminal;

namespace luminal::capi {
struct GraphState;
}

// A tensor handle: a node of its graph read through a view. Owned by the GraphState.
struct lm_tensor {
  const luminal::capi::GraphState* owner;
  Edge edge;
};

namespace luminal::capi {

// What an lm_graph holds; shared with the runtimes made from it, so tensor handles outlive
// lm_graph_free while a runtime still reads them.
struct GraphState {
  Graph graph;
  std::deque<lm_tensor> tensors;  // every handle made; a deque keeps addresses stable
  std::string text;               // the buffer lm_graph_to_string returns
};

}  // namespace luminal::capi

using luminal::capi::GraphState;

struct lm_graph {
  std::shared_ptr<GraphState> state;  // never null
};

struct lm_runtime {
  std::shared_ptr<GraphState> state;  // the graph it was made from
  std::unique_ptr<Runtime> runtime;
  size_t compiled_size;               // nodes of the graph snapshot it compiled
  std::vector<std::string> symbols;   // of that snapshot: each needs a value at execute
};

namespace {

thread_local std::string t_error;
thread_local lm_status t_status = LM_OK;

// A NULL handle, a tensor of another graph, an unknown enum value: the caller's misuse.
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

lm_status fail(lm_status status, const char* message) {
  t_status = status;
  try {
    t_error = message;
  } catch (...) {
    t_error.clear();
  }
  return status;
}

// Runs f, mapping any exception to its status. The only place exceptions are caught.
template <typename F>
lm_status guard(F&& f) {
  try {
    f();
    return LM_OK;
  } catch (const ShapeError& e) {
    return fail(LM_SHAPE_ERROR, e.what());
  } catch (const DTypeError& e) {
    return fail(LM_DTYPE_ERROR, e.what());
  } catch (const CompileError& e) {
    return fail(LM_COMPILE_ERROR, e.what());
  } catch (const DeviceError& e) {
    return fail(LM_DEVICE_ERROR, e.what());
  } catch (const InternalError& e) {
    return fail(LM_INTERNAL_ERROR, e.what());
  } catch (const InvalidArgument& e) {
    return fail(LM_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(LM_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(LM_UNKNOWN_ERROR, e.what());
  } catch (...) {
    return fail(LM_UNKNOWN_ERROR, "unknown exception");
  }
}

// "fn: what", the form of every message this file makes.
std::string fn_msg(const char* fn, const std::string& what) {
  return std::string(fn) + ": " + what;
}

GraphState& state_of(lm_graph* graph, const char* fn) {
  if (!graph) throw InvalidArgument(fn_msg(fn, "graph is NULL"));
  return *graph->state;
}

lm_runtime& runtime_of(lm_runtime* runtime, const char* fn) {
  if (!runtime) throw InvalidArgument(fn_msg(fn, "runtime is NULL"));
  return *runtime;
}

const Edge& edge_of(const GraphState& s, const lm_tensor* t, const char* fn, const char* arg) {
  if (!t) throw InvalidArgument(fn_msg(fn, std::string("tensor ") + arg + " is NULL"));
  if (t->owner != &s) {
    throw InvalidArgument(fn_msg(fn, std::string("tensor ") + arg + " belongs to another graph"));
  }
  return t->edge;
}

DType dtype_of(lm_dtype dtype, const char* fn) {
  if (dtype < LM_F32 || dtype > LM_BOOL) {
    throw InvalidArgument(fn_msg(fn, "unknown dtype " + std::to_string(static_cast<int>(dtype))));
  }
  return static_cast<DType>(dtype);
}

// Python-style axis: negative counts from the end of `rank` positions.
int axis_of(int32_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int>(rank) : axis;
}

std::vector<Expr> dims_of(const int64_t* dims, int32_t rank, const char* fn) {
  if (rank < 0) throw ShapeError(fn_msg(fn, "rank " + std::to_string(rank) + " is negative"));
  if (rank > 0 && !dims) throw InvalidArgument(fn_msg(fn, "dims is NULL"));
  std::vector<Expr> out;
  for (int32_t k = 0; k < rank; ++k) {
    if (dims[k] < 0) {
      throw ShapeError(fn_msg(fn, "dim " + std::to_string(k) + " is negative (" +
                                      std::to_string(dims[k]) + ")"));
    }
    out.push_back(Expr(dims[k]));
  }
  return out;
}

lm_tensor* new_tensor(GraphState& s, NodeId node, ShapeTracker view) {
  s.tensors.push_back(lm_tensor{&s, Edge{node, std::move(view)}});
  return &s.tensors.back();
}

// The contiguous output of a node.
lm_tensor* node_tensor(GraphState& s, NodeId node) {
  return new_tensor(s, node, ShapeTracker::contiguous(s.graph.node(node).shape));
}

// Runs a builder f(GraphState&) -> lm_tensor*, giving NULL on failure.
template <typename F>
lm_tensor* build(lm_graph* graph, const char* fn, F&& f) {
  lm_tensor* out = nullptr;
  guard([&] { out = f(state_of(graph, fn)); });
  return out;
}

lm_tensor* unary(lm_graph* graph, OpKind op, const lm_tensor* a, const char* fn) {
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.unary(op, edge_of(s, a, fn, "a")));
  });
}

lm_tensor* binary(lm_graph* graph, OpKind op, const lm_tensor* a, const lm_tensor* b,
                  const char* fn) {
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.binary(op, edge_of(s, a, fn, "a"), edge_of(s, b, fn, "b")));
  });
}

lm_tensor* reduce(lm_graph* graph, OpKind op, const lm_tensor* a, int32_t axis, const char* fn) {
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    return node_tensor(s, s.graph.reduce(op, e, axis_of(axis, e.view.rank())));
  });
}

// Python's slice-bound rule: negatives count from the end, then clamp to [0, n].
Expr clamp_index(int64_t i, const Expr& n) {
  if (i < 0) return max(n + Expr(i), Expr(0));
  return min(Expr(i), n);
}

// The Output node reading `t`, checked to be in the runtime's compiled snapshot.
NodeId output_node(lm_runtime& r, const lm_tensor* t, const char* fn) {
  const Edge& e = edge_of(*r.state, t, fn, "output");
  std::optional<NodeId> id = r.state->graph.find_output(e);
  if (!id) {
    throw ShapeError(fn_msg(fn, "the tensor of shape " + e.view.dims_string() +
                                    " is not an output; mark it with lm_output"));
  }
  if (static_cast<size_t>(*id) >= r.compiled_size) {
    throw ShapeError(fn_msg(fn, "the tensor of shape " + e.view.dims_string() +
                                    " became an output after the runtime was made; make a new"
                                    " runtime"));
  }
  return *id;
}

const HostBuffer& output_buffer(lm_runtime* runtime, const lm_tensor* t, const char* fn) {
  lm_runtime& r = runtime_of(runtime, fn);
  return r.runtime->get(output_node(r, t, fn));
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<Expr> dims(shape.begin(), shape.end());
  return dims_to_string(dims);
}

void check_capacity(const HostBuffer& b, const void* out, int64_t capacity, const char* fn) {
  if (capacity < b.numel()) {
    throw ShapeError(fn_msg(fn, "the output of shape " + shape_text(b.shape) + " has " +
                                    std::to_string(b.numel()) + " elements, the buffer holds " +
                                    std::to_string(capacity)));
  }
  if (b.numel() > 0 && !out) throw InvalidArgument(fn_msg(fn, "out is NULL"));
}

}  // namespace

extern "C" {

// ---- errors -----------------------------------------------------------------------------

const char* lm_last_error(void) { return t_error.c_str(); }

lm_status lm_last_status(void) { return t_status; }

const char* lm_status_name(lm_status status) {
  switch (status) {
    case LM_OK:
      return "LM_OK";
    case LM_SHAPE_ERROR:
      return "LM_SHAPE_ERROR";
    case LM_DTYPE_ERROR:
      return "LM_DTYPE_ERROR";
    case LM_COMPILE_ERROR:
      return "LM_COMPILE_ERROR";
    case LM_DEVICE_ERROR:
      return "LM_DEVICE_ERROR";
    case LM_INTERNAL_ERROR:
      return "LM_INTERNAL_ERROR";
    case LM_INVALID_ARGUMENT:
      return "LM_INVALID_ARGUMENT";
    case LM_OUT_OF_MEMORY:
      return "LM_OUT_OF_MEMORY";
    case LM_UNKNOWN_ERROR:
      return "LM_UNKNOWN_ERROR";
    case LM_STATUS_MAX_ENUM:
      break;
  }
  return "LM_UNKNOWN_STATUS";
}

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

lm_tensor* lm_input(lm_graph* graph, const char* name, lm_dtype dtype, int32_t rank,
                    const int64_t* dims, const char* const* symbols) {
  const char* fn = "lm_input";
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
    NodeId id = s.graph.input(label, shape, dtype_of(dtype, fn));
    return new_tensor(s, id, ShapeTracker::contiguous(shape));
  });
}

lm_tensor* lm_constant(lm_graph* graph, double value, lm_dtype dtype) {
  const char* fn = "lm_constant";
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.constant(value, dtype_of(dtype, fn)));
  });
}

// ---- primitives -------------------------------------------------------------------------

lm_tensor* lm_log2(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Log2, a, "lm_log2");
}
lm_tensor* lm_exp2(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Exp2, a, "lm_exp2");
}
lm_tensor* lm_sin(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Sin, a, "lm_sin");
}
lm_tensor* lm_sqrt(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Sqrt, a, "lm_sqrt");
}
lm_tensor* lm_recip(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Recip, a, "lm_recip");
}

lm_tensor* lm_add(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::Add, a, b, "lm_add");
}
lm_tensor* lm_mul(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::Mul, a, b, "lm_mul");
}
lm_tensor* lm_mod(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::Mod, a, b, "lm_mod");
}
lm_tensor* lm_less_than(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::LessThan, a, b, "lm_less_than");
}

lm_status lm_broadcast(lm_graph* graph, const lm_tensor* a, const lm_tensor* b,
                       lm_tensor** a_out, lm_tensor** b_out) {
  const char* fn = "lm_broadcast";
  return guard([&] {
    GraphState& s = state_of(graph, fn);
    Edge ea = edge_of(s, a, fn, "a");
    Edge eb = edge_of(s, b, fn, "b");
    if (!a_out || !b_out) throw InvalidArgument(fn_msg(fn, "a_out or b_out is NULL"));
    std::string shapes = ea.view.dims_string() + " and " + eb.view.dims_string();
    while (ea.view.rank() < eb.view.rank()) ea.view = ea.view.insert_axis(0, Expr(1));
    while (eb.view.rank() < ea.view.rank()) eb.view = eb.view.insert_axis(0, Expr(1));
    for (size_t k = 0; k < ea.view.rank(); ++k) {
      Expr da = ea.view.dims[k];
      Expr db = eb.view.dims[k];
      if (da == db) continue;
      int axis = static_cast<int>(k);
      if (da == Expr(1)) {
        ea.view = ea.view.expand_axis(axis, db);
      } else if (db == Expr(1)) {
        eb.view = eb.view.expand_axis(axis, da);
      } else {
        throw ShapeError(fn_msg(fn, "shapes " + shapes + " do not broadcast (dims " +
                                        da.to_string() + " and " + db.to_string() + ")"));
      }
    }
    *a_out = new_tensor(s, ea.node, ea.view);
    *b_out = new_tensor(s, eb.node, eb.view);
  });
}

lm_tensor* lm_sum_reduce(lm_graph* g, const lm_tensor* a, int32_t axis) {
  return reduce(g, OpKind::SumReduce, a, axis, "lm_sum_reduce");
}
lm_tensor* lm_max_reduce(lm_graph* g, const lm_tensor* a, int32_t axis) {
  return reduce(g, OpKind::MaxReduce, a, axis, "lm_max_reduce");
}

lm_tensor* lm_cast(lm_graph* graph, const lm_tensor* a, lm_dtype dtype) {
  const char* fn = "lm_cast";
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.cast(edge_of(s, a, fn, "a"), dtype_of(dtype, fn)));
  });
}

lm_tensor* lm_gather(lm_graph* graph, const lm_tensor* data, const lm_tensor* indices) {
  const char* fn = "lm_gather";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& d = edge_of(s, data, fn, "data");
    return node_tensor(s, s.graph.gather(d, edge_of(s, indices, fn, "indices")));
  });
}

// ---- movement ---------------------------------------------------------------------------

lm_tensor* lm_permute(lm_graph* graph, const lm_tensor* a, const int32_t* axes, int32_t n_axes) {
  const char* fn = "lm_permute";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    if (n_axes < 0 || (n_axes > 0 && !axes)) throw InvalidArgument(fn_msg(fn, "bad axes"));
    std::vector<int> order;
    for (int32_t k = 0; k < n_axes; ++k) order.push_back(axis_of(axes[k], e.view.rank()));
    return new_tensor(s, e.node, e.view.permute(order));
  });
}

lm_tensor* lm_reshape(lm_graph* graph, const lm_tensor* a, const int64_t* dims, int32_t rank) {
  const char* fn = "lm_reshape";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    std::vector<Expr> shape = dims_of(dims, rank, fn);
    if (std::optional<ShapeTracker> view = e.view.reshape(shape)) {
      return new_tensor(s, e.node, *view);
    }
    // The view cannot express it: materialize a contiguous copy, which always reshapes.
    NodeId copy = s.graph.cast(e, s.graph.node(e.node).dtype);
    return new_tensor(s, copy, ShapeTracker::contiguous(shape));
  });
}

lm_tensor* lm_insert_axis(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t size) {
  const char* fn = "lm_insert_axis";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    std::vector<Expr> size_dim = dims_of(&size, 1, fn);
    int position = axis_of(axis, e.view.rank() + 1);
    return new_tensor(s, e.node, e.view.insert_axis(position, size_dim[0]));
  });
}

lm_tensor* lm_expand_axis(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t size) {
  const char* fn = "lm_expand_axis";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    std::vector<Expr> size_dim = dims_of(&size, 1, fn);
    return new_tensor(s, e.node, e.view.expand_axis(axis_of(axis, e.view.rank()), size_dim[0]));
  });
}

lm_tensor* lm_remove_axis(lm_graph* graph, const lm_tensor* a, int32_t axis) {
  const char* fn = "lm_remove_axis";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    return new_tensor(s, e.node, e.view.remove_axis(axis_of(axis, e.view.rank())));
  });
}

lm_tensor* lm_slice(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t start,
                    int64_t stop, int64_t step) {
  const char* fn = "lm_slice";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    int ax = axis_of(axis, e.view.rank());
    if (ax < 0 || static_cast<size_t>(ax) >= e.view.rank()) {
      throw ShapeError(fn_msg(fn, "axis " + std::to_string(axis) + " is out of range for shape " +
                                      e.view.dims_string()));
    }
    const Expr& n = e.view.dims[ax];
    ShapeTracker view = e.view.slice(ax, clamp_index(start, n), clamp_index(stop, n), step);
    return new_tensor(s, e.node, view);
  });
}

// ---- outputs and runtimes ---------------------------------------------------------------

lm_status lm_output(lm_graph* graph, const lm_tensor* t) {
  const char* fn = "lm_output";
  return guard([&] {
    GraphState& s = state_of(graph, fn);
    s.graph.output(edge_of(s, t, fn, "t"));
  });
}

lm_runtime* lm_native_runtime_new(lm_graph* graph) {
  lm_runtime* out = nullptr;
  guard([&] {
    GraphState& s = state_of(graph, "lm_native_runtime_new");
    auto runtime = std::make_unique<NativeRuntime>();
    runtime->compile(s.graph);
    out = new lm_runtime{graph->state, std::move(runtime), s.graph.size(), s.graph.symbols()};
  });
  return out;
}

void lm_runtime_free(lm_runtime* runtime) { delete runtime; }

lm_status lm_set_data(lm_runtime* runtime, const lm_tensor* input, lm_dtype dtype,
                      const void* data, int64_t count) {
  const char* fn = "lm_set_data";
  return guard([&] {
    lm_runtime& r = runtime_of(runtime, fn);
    const Edge& e = edge_of(*r.state, input, fn, "input");
    if (count < 0) throw ShapeError(fn_msg(fn, "count " + std::to_string(count) + " is negative"));
    if (count > 0 && !data) throw InvalidArgument(fn_msg(fn, "data is NULL"));
    r.runtime->set_data(e.node, data, count, dtype_of(dtype, fn));
  });
}

lm_status lm_set_data_f32(lm_runtime* runtime, const lm_tensor* input, const float* data,
                          int64_t count) {
  const char* fn = "lm_set_data_f32";
  return guard([&] {
    lm_runtime& r = runtime_of(runtime, fn);
    const Edge& e = edge_of(*r.state, input, fn, "input");
    if (count < 0) throw ShapeError(fn_msg(fn, "count " + std::to_string(count) + " is negative"));
    if (count > 0 && !data) throw InvalidArgument(fn_msg(fn, "data is NULL"));
    DType dtype = r.state->graph.node(e.node).dtype;
    if (dtype == DType::F32) {
      r.runtime->set_data(e.node, data, count, dtype);
      return;
    }
    if (dtype != DType::F16 && dtype != DType::BF16) {
      const Node& n = r.state->graph.node(e.node);
      throw DTypeError(fn_msg(fn, "input '" + n.name + "' of shape " + dims_to_string(n.shape) +
                                      " is " + dtype_name(dtype) +
                                      ", not a float; use lm_set_data"));
    }
    std::vector<uint16_t> words(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      words[i] = dtype == DType::F16 ? f32_to_f16(data[i]) : f32_to_bf16(data[i]);
    }
    r.runtime->set_data(e.node, words.data(), count, dtype);
  });
}

lm_status lm_execute(lm_runtime* runtime, int32_t n_symbols, const char* const* names,
                     const int64_t* values) {
  const char* fn = "lm_execute";
  return guard([&] {
    lm_runtime& r = runtime_of(runtime, fn);
    if (n_symbols < 0 || (n_symbols > 0 && (!names || !values))) {
      throw InvalidArgument(fn_msg(fn, "n_symbols is negative or names/values is NULL"));
    }
    DynMap dyn_map;
    for (int32_t i = 0; i < n_symbols; ++i) {
      if (!names[i]) throw InvalidArgument(fn_msg(fn, "names[" + std::to_string(i) + "] is NULL"));
      if (values[i] < 0) {
        throw ShapeError(fn_msg(fn, std::string("symbol '") + names[i] + "' has negative value " +
                                        std::to_string(values[i])));
      }
      dyn_map[names[i]] = values[i];
    }
    for (const std::string& name : r.symbols) {
      if (!dyn_map.count(name)) {
        throw ShapeError(fn_msg(fn, "symbol '" + name + "' has no value; pass it in names/values"));
      }
    }
    r.runtime->execute(dyn_map);
  });
}

int64_t lm_output_numel(lm_runtime* runtime, const lm_tensor* output) {
  int64_t out = -1;
  guard([&] { out = output_buffer(runtime, output, "lm_output_numel").numel(); });
  return out;
}

lm_status lm_output_shape(lm_runtime* runtime, const lm_tensor* output, int32_t* rank,
                          int64_t* dims, int32_t max_rank) {
  const char* fn = "lm_output_shape";
  return guard([&] {
    const HostBuffer& b = output_buffer(runtime, output, fn);
    if (!rank) throw InvalidArgument(fn_msg(fn, "rank is NULL"));
    *rank = static_cast<int32_t>(b.shape.size());
    for (int32_t k = 0; dims && k < max_rank && static_cast<size_t>(k) < b.shape.size(); ++k) {
      dims[k] = b.shape[k];
    }
  });
}

lm_status lm_get_data(lm_runtime* runtime, const lm_tensor* output, lm_dtype dtype, void* out,
                      int64_t capacity) {
  const char* fn = "lm_get_data";
  return guard([&] {
    const HostBuffer& b = output_buffer(runtime, output, fn);
    if (dtype_of(dtype, fn) != b.dtype) {
      throw DTypeError(fn_msg(fn, "the output of shape " + shape_text(b.shape) + " is " +
                                      dtype_name(b.dtype) + ", asked for " +
                                      dtype_name(static_cast<DType>(dtype))));
    }
    check_capacity(b, out, capacity, fn);
    if (!b.bytes.empty()) std::copy(b.bytes.begin(), b.bytes.end(), static_cast<uint8_t*>(out));
  });
}

lm_status lm_get_f32(lm_runtime* runtime, const lm_tensor* output, float* out,
                     int64_t capacity) {
  const char* fn = "lm_get_f32";
  return guard([&] {
    const HostBuffer& b = output_buffer(runtime, output, fn);
    check_capacity(b, out, capacity, fn);
    const uint8_t* bytes = b.bytes.data();
    for (int64_t i = 0; i < b.numel(); ++i) {
      switch (b.dtype) {
        case DType::F32:
          std::memcpy(&out[i], bytes + 4 * i, 4);
          break;
        case DType::F16:
        case DType::BF16: {
          uint16_t w;
          std::memcpy(&w, bytes + 2 * i, 2);
          out[i] = b.dtype == DType::F16 ? f16_to_f32(w) : bf16_to_f32(w);
          break;
        }
        case DType::Int: {
          int32_t v;
          std::memcpy(&v, bytes + 4 * i, 4);
          out[i] = static_cast<float>(v);
          break;
        }
        case DType::Bool:
          out[i] = bytes[i] ? 1.0f : 0.0f;
          break;
      }
    }
  });
}

}  // extern "C"
