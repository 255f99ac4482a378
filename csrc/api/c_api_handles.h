// The C API's handles (lm_graph, lm_tensor, lm_runtime) and the checks every entry point
// shares: status and message of the last failure, `guard` (the one place exceptions are
// caught), handle and argument checks. Internal to the shared library; luminal.h is the API.
#pragma once

#include <deque>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/luminal.h"
#include "core/errors.h"
#include "ir/graph.h"
#include "runtime/runtime.h"

namespace luminal::capi {
struct GraphState;
}

// A tensor handle: a node of its graph read through a view. Owned by the GraphState.
struct lm_tensor {
  const luminal::capi::GraphState* owner;
  luminal::Edge edge;
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

struct lm_graph {
  std::shared_ptr<luminal::capi::GraphState> state;  // never null
};

struct lm_runtime {
  std::shared_ptr<luminal::capi::GraphState> state;  // the graph it was made from
  std::unique_ptr<luminal::Runtime> runtime;
  size_t compiled_size;               // nodes of the graph snapshot it compiled
  std::vector<std::string> symbols;   // of that snapshot: each needs a value at execute
};

namespace luminal::capi {

// A NULL handle, a tensor of another graph, an unknown enum value: the caller's misuse.
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Records `status` and `message` as the thread's last failure; returns `status`.
lm_status fail(lm_status status, const char* message);
// The status of a typed error (core/errors.def's column).
lm_status status_of(const LuminalError& error);

// Runs f, mapping any exception to its status. The only place exceptions are caught.
template <typename F>
lm_status guard(F&& f) {
  try {
    f();
    return LM_OK;
  } catch (const LuminalError& e) {
    return fail(status_of(e), e.what());
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

// "fn: what", the form of every message the C API makes.
std::string fn_msg(const char* fn, const std::string& what);

GraphState& state_of(lm_graph* graph, const char* fn);
lm_runtime& runtime_of(lm_runtime* runtime, const char* fn);
const Edge& edge_of(const GraphState& s, const lm_tensor* t, const char* fn, const char* arg);
DType dtype_of(lm_dtype dtype, const char* fn);
// Python-style axis: negative counts from the end of `rank` positions.
int axis_of(int32_t axis, size_t rank);
std::vector<Expr> dims_of(const int64_t* dims, int32_t rank, const char* fn);
lm_tensor* new_tensor(GraphState& s, NodeId node, ShapeTracker view);
// The contiguous output of a node.
lm_tensor* node_tensor(GraphState& s, NodeId node);

// Runs a builder f(GraphState&) -> lm_tensor*, giving NULL on failure.
template <typename F>
lm_tensor* build(lm_graph* graph, const char* fn, F&& f) {
  lm_tensor* out = nullptr;
  guard([&] { out = f(state_of(graph, fn)); });
  return out;
}

}  // namespace luminal::capi
