/* luminal.h: the C API of the luminal core, for embedding in C and C++ programs without Python.
 * Build a graph of primitive ops, create a runtime from it, set inputs, execute, read outputs.
 * Not the whole frontend: high-level ops (softmax, matmul, nn modules) live in Python; here a
 * program composes them from the primitives itself (see examples/embed/matmul.c).
 *
 * Conventions
 * - Handles are opaque. An lm_graph owns its lm_tensor handles: they stay valid until the graph
 *   is freed and every runtime created from it is freed too.
 * - A tensor is a node of the graph read through a view; movement functions (permute, reshape,
 *   slice, insert_axis, expand_axis) make new views and copy nothing.
 * - No C++ exception crosses this boundary. A function returning lm_status returns LM_OK or an
 *   error code; one returning a pointer returns NULL on failure; one returning a count returns
 *   -1. After a failure, lm_last_error() says what was wrong (with the shapes involved) and
 *   lm_last_status() says which kind of error it was. Both are per thread and describe the most
 *   recent failed call; successful calls leave them unchanged.
 * - Axes may be negative, counting from the end as in Python.
 * - A graph or runtime may be used from one thread at a time.
 */
#ifndef LUMINAL_H
#define LUMINAL_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define LM_API __attribute__((visibility("default")))
#else
#define LM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lm_status {
  LM_OK = 0,
  LM_SHAPE_ERROR = 1,       /* mismatched dims, bad axes, wrong data length, unbound symbols */
  LM_DTYPE_ERROR = 2,       /* a dtype an op cannot take, or mixed dtypes */
  LM_COMPILE_ERROR = 3,     /* generating or compiling a program failed */
  LM_DEVICE_ERROR = 4,      /* a device or driver is missing or failed */
  LM_INTERNAL_ERROR = 5,    /* a bug inside luminal */
  LM_INVALID_ARGUMENT = 6,  /* a NULL handle or pointer, a tensor of another graph, a bad enum */
  LM_OUT_OF_MEMORY = 7,
  LM_UNKNOWN_ERROR = 8,
  LM_STATUS_MAX_ENUM = 0x7fffffff /* not a status: makes any int32 a valid value of the type */
} lm_status;

/* Element types, in their storage formats: f16 and bf16 as 16-bit words, LM_INT as int32_t,
 * LM_BOOL as one byte (0 or 1). */
typedef enum lm_dtype {
  LM_F32 = 0,
  LM_F16 = 1,
  LM_BF16 = 2,
  LM_INT = 3,
  LM_BOOL = 4,
  LM_DTYPE_MAX_ENUM = 0x7fffffff /* not a dtype: makes any int32 a valid value of the type */
} lm_dtype;

typedef struct lm_graph lm_graph;
typedef struct lm_tensor lm_tensor;
typedef struct lm_runtime lm_runtime;

/* ---- errors ------------------------------------------------------------------------------ */
/* The message of the most recent failed call on this thread ("" if none). The pointer stays
 * valid until the next failing call on this thread. */
LM_API const char* lm_last_error(void);
LM_API lm_status lm_last_status(void);
LM_API const char* lm_status_name(lm_status status); /* "LM_SHAPE_ERROR", ... */

/* ---- graphs ------------------------------------------------------------------------------ */
LM_API lm_graph* lm_graph_new(void);
/* Frees the graph and its tensor handles (those are kept alive while a runtime from the graph
 * lives). NULL is ignored. */
LM_API void lm_graph_free(lm_graph* graph);
/* The graph as text, one node per line. Valid until the next call on this graph. */
LM_API const char* lm_graph_to_string(lm_graph* graph);

/* ---- tensors: facts ---------------------------------------------------------------------- */
LM_API int32_t lm_tensor_rank(const lm_tensor* t);           /* -1 on a NULL tensor */
LM_API int64_t lm_tensor_dim(const lm_tensor* t, int32_t axis); /* -1 if symbolic or bad axis */
LM_API lm_dtype lm_tensor_dtype(const lm_tensor* t);         /* LM_F32 on a NULL tensor */

/* ---- sources ----------------------------------------------------------------------------- */
/* An input of `rank` dims. Axis k has size dims[k], unless symbols is non-NULL and symbols[k]
 * is non-NULL: then it is the symbolic dim of that name, valued at execute. */
LM_API lm_tensor* lm_input(lm_graph* graph, const char* name, lm_dtype dtype, int32_t rank,
                           const int64_t* dims, const char* const* symbols);
/* A parameter: an input as lm_input whose data stays the same across executions (a weight),
 * so a runtime may lay it out once, when its data is set. */
LM_API lm_tensor* lm_parameter(lm_graph* graph, const char* name, lm_dtype dtype, int32_t rank,
                               const int64_t* dims, const char* const* symbols);
/* A scalar (rank 0); broadcast it with lm_broadcast or lm_insert_axis. */
LM_API lm_tensor* lm_constant(lm_graph* graph, double value, lm_dtype dtype);

/* ---- unary primitives (float tensors) ---------------------------------------------------- */
LM_API lm_tensor* lm_log2(lm_graph* graph, const lm_tensor* a);
LM_API lm_tensor* lm_exp2(lm_graph* graph, const lm_tensor* a);
LM_API lm_tensor* lm_sin(lm_graph* graph, const lm_tensor* a);
LM_API lm_tensor* lm_sqrt(lm_graph* graph, const lm_tensor* a);
LM_API lm_tensor* lm_recip(lm_graph* graph, const lm_tensor* a);

/* ---- binary primitives (operands of one shape and one dtype) ----------------------------- */
LM_API lm_tensor* lm_add(lm_graph* graph, const lm_tensor* a, const lm_tensor* b);
LM_API lm_tensor* lm_mul(lm_graph* graph, const lm_tensor* a, const lm_tensor* b);
LM_API lm_tensor* lm_mod(lm_graph* graph, const lm_tensor* a, const lm_tensor* b);
LM_API lm_tensor* lm_less_than(lm_graph* graph, const lm_tensor* a, const lm_tensor* b); /* bool */

/* Broadcasts a and b to one shape by NumPy's rules (align from the right, size-1 and missing
 * axes stretch) and stores the two views in *a_out and *b_out. */
LM_API lm_status lm_broadcast(lm_graph* graph, const lm_tensor* a, const lm_tensor* b,
                              lm_tensor** a_out, lm_tensor** b_out);

/* ---- reductions over one axis, which disappears from the shape --------------------------- */
LM_API lm_tensor* lm_sum_reduce(lm_graph* graph, const lm_tensor* a, int32_t axis);
LM_API lm_tensor* lm_max_reduce(lm_graph* graph, const lm_tensor* a, int32_t axis);

/* ---- other primitives -------------------------------------------------------------------- */
LM_API lm_tensor* lm_cast(lm_graph* graph, const lm_tensor* a, lm_dtype dtype);
/* Element i is data's element at logical flat index indices[i] (indices: LM_INT). */
LM_API lm_tensor* lm_gather(lm_graph* graph, const lm_tensor* data, const lm_tensor* indices);

/* ---- movement (views; a reshape the view cannot express copies first) -------------------- */
LM_API lm_tensor* lm_permute(lm_graph* graph, const lm_tensor* a, const int32_t* axes,
                             int32_t n_axes);
LM_API lm_tensor* lm_reshape(lm_graph* graph, const lm_tensor* a, const int64_t* dims,
                             int32_t rank);
/* A new broadcast axis of `size` at position axis (0..rank). */
LM_API lm_tensor* lm_insert_axis(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t size);
/* Broadcasts the size-1 axis `axis` to `size`. */
LM_API lm_tensor* lm_expand_axis(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t size);
/* Drops the size-1 axis `axis`. */
LM_API lm_tensor* lm_remove_axis(lm_graph* graph, const lm_tensor* a, int32_t axis);
/* Elements start, start+step, ... below stop along axis, as Python's a[start:stop:step]: negative
 * start/stop count from the end, both are clamped to the axis, step > 0. */
LM_API lm_tensor* lm_slice(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t start,
                           int64_t stop, int64_t step);

/* ---- outputs ----------------------------------------------------------------------------- */
/* Marks t as a result the runtime keeps; read it later with lm_get_* using the same handle.
 * Mark every output before creating the runtime. */
LM_API lm_status lm_output(lm_graph* graph, const lm_tensor* t);

/* ---- runtimes ---------------------------------------------------------------------------- */
/* The reference interpreter, compiled from a snapshot of the graph (later edits of the graph
 * need a new runtime). */
LM_API lm_runtime* lm_native_runtime_new(lm_graph* graph);
LM_API void lm_runtime_free(lm_runtime* runtime); /* NULL is ignored */

/* Copies `count` elements of the input's dtype (in its storage format) from data. `dtype` must
 * be the input's dtype and count its number of elements (with the symbols' values to come). */
LM_API lm_status lm_set_data(lm_runtime* runtime, const lm_tensor* input, lm_dtype dtype,
                             const void* data, int64_t count);
/* Copies `count` floats into a float input (f32, f16 or bf16), rounding to its dtype. */
LM_API lm_status lm_set_data_f32(lm_runtime* runtime, const lm_tensor* input, const float* data,
                                 int64_t count);

/* Runs the program. names[i] is valued values[i] (>= 0); every symbol in the graph needs one.
 * n_symbols may be 0 with NULL arrays. */
LM_API lm_status lm_execute(lm_runtime* runtime, int32_t n_symbols, const char* const* names,
                            const int64_t* values);

/* Facts of an output after execute: its element count (-1 on failure), its shape (rank
 * returned in *rank; dims written to dims[0..min(rank, max_rank)) when dims is non-NULL). */
LM_API int64_t lm_output_numel(lm_runtime* runtime, const lm_tensor* output);
LM_API lm_status lm_output_shape(lm_runtime* runtime, const lm_tensor* output, int32_t* rank,
                                 int64_t* dims, int32_t max_rank);
/* Copies an output, row-major, into out, which holds `capacity` elements (at least numel).
 * lm_get_data copies the storage format and needs dtype to be the output's dtype;
 * lm_get_f32 converts any dtype to float (bool as 0/1). */
LM_API lm_status lm_get_data(lm_runtime* runtime, const lm_tensor* output, lm_dtype dtype,
                             void* out, int64_t capacity);
LM_API lm_status lm_get_f32(lm_runtime* runtime, const lm_tensor* output, float* out,
                            int64_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* LUMINAL_H */
