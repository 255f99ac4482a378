// The C API's shared checks and its error entry points (lm_last_error, lm_last_status,
// lm_status_name): the thread-local status and message of the last failure.
#include <string>

#include "api/c_api_handles.h"

namespace luminal::capi {

namespace {
thread_local std::string t_error;
thread_local lm_status t_status = LM_OK;
}  // namespace

lm_status fail(lm_status status, const char* message) {
  t_status = status;
  try {
    t_error = message;
  } catch (...) {
    t_error.clear();
  }
  return status;
}

lm_status status_of(const LuminalError& error) {
#define LUMINAL_ERROR(name, status) \
  if (dynamic_cast<const name*>(&error)) return LM_##status;
#include "core/errors.def"
#undef LUMINAL_ERROR
  return LM_UNKNOWN_ERROR;
}

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

}  // namespace luminal::capi

using namespace luminal::capi;

extern "C" {

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

}  // extern "C"
