// The C API's runtimes: make one from a graph, set inputs, execute, read outputs (luminal.h).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/c_api_handles.h"
#include "runtime/native/native.h"

using namespace luminal;
using namespace luminal::capi;

namespace {

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

// ---- runtimes ---------------------------------------------------------------------------

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

namespace {

// The input node that set_data's arguments name, once they are checked.
NodeId data_target(lm_runtime& r, const lm_tensor* input, const void* data, int64_t count,
                   const char* fn) {
  const Edge& e = edge_of(*r.state, input, fn, "input");
  if (count < 0) throw ShapeError(fn_msg(fn, "count " + std::to_string(count) + " is negative"));
  if (count > 0 && !data) throw InvalidArgument(fn_msg(fn, "data is NULL"));
  return e.node;
}

}  // namespace

lm_status lm_set_data(lm_runtime* runtime, const lm_tensor* input, lm_dtype dtype,
                      const void* data, int64_t count) {
  const char* fn = "lm_set_data";
  return guard([&] {
    lm_runtime& r = runtime_of(runtime, fn);
    const NodeId node = data_target(r, input, data, count, fn);
    r.runtime->set_data(node, data, count, dtype_of(dtype, fn));
  });
}

lm_status lm_set_data_f32(lm_runtime* runtime, const lm_tensor* input, const float* data,
                          int64_t count) {
  const char* fn = "lm_set_data_f32";
  return guard([&] {
    lm_runtime& r = runtime_of(runtime, fn);
    const NodeId node = data_target(r, input, data, count, fn);
    DType dtype = r.state->graph.node(node).dtype;
    if (dtype == DType::F32) {
      r.runtime->set_data(node, data, count, dtype);
      return;
    }
    if (!is_half(dtype)) {
      const Node& n = r.state->graph.node(node);
      throw DTypeError(fn_msg(fn, "input '" + n.name + "' of shape " + dims_to_string(n.shape) +
                                      " is " + dtype_name(dtype) +
                                      ", not a float; use lm_set_data"));
    }
    std::vector<uint16_t> words(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      words[i] = dtype == DType::F16 ? f32_to_f16(data[i]) : f32_to_bf16(data[i]);
    }
    r.runtime->set_data(node, words.data(), count, dtype);
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
        default:
          throw InternalError("lm_get_f32: a quantized output");  // Graph::output refuses them
      }
    }
  });
}

}  // extern "C"
