/* Embedding luminal from C: builds y = A @ B + bias from the primitives, runs it on the native
 * runtime and prints y as one line of floats; then shows how an error is reported.
 * Build against an installed package (paths from luminal.get_include() / get_library_dir()):
 *   cc matmul.c -I$INC -L$LIB -lluminal -Wl,-rpath,$LIB -o matmul
 */
#include <stdio.h>
#include <stdlib.h>

#include "luminal.h"

/* Aborts with luminal's message when a call failed (a NULL handle or a non-LM_OK status). */
#define CHECK(ok)                                                                          \
  do {                                                                                     \
    if (!(ok)) {                                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,                               \
              lm_status_name(lm_last_status()), lm_last_error());                          \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

int main(void) {
  /* Inputs: A (2, 3), B (3, 4), bias (4,). tests/test_c_api.py uses the same values. */
  const float a_data[6] = {1, 2, 3, 4, 5, 6};
  const float b_data[12] = {0.5f, -1, 2, 0, 1, 1.5f, -0.5f, 3, -2, 0.25f, 1, -1};
  const float bias_data[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  const int64_t a_dims[2] = {2, 3};
  const int64_t b_dims[2] = {3, 4};
  const int64_t bias_dims[1] = {4};

  lm_graph* g = lm_graph_new();
  CHECK(g);
  lm_tensor* a = lm_input(g, "A", LM_F32, 2, a_dims, NULL);
  lm_tensor* b = lm_input(g, "B", LM_F32, 2, b_dims, NULL);
  lm_tensor* bias = lm_input(g, "bias", LM_F32, 1, bias_dims, NULL);
  CHECK(a && b && bias);

  /* Matmul is a broadcast Mul then a SumReduce: A (2, 3, 1->4) * B (1->2, 3, 4), sum axis 1. */
  lm_tensor* a3 = lm_insert_axis(g, a, 2, 4); /* (2, 3, 4), stride 0 on the new axis */
  lm_tensor* b3 = lm_insert_axis(g, b, 0, 2); /* (2, 3, 4) */
  CHECK(a3 && b3);
  lm_tensor* products = lm_mul(g, a3, b3);
  CHECK(products);
  lm_tensor* c = lm_sum_reduce(g, products, 1); /* (2, 4) */
  CHECK(c);

  /* bias (4,) broadcasts against c (2, 4) by NumPy's rules. */
  lm_tensor* c_b = NULL;
  lm_tensor* bias_b = NULL;
  CHECK(lm_broadcast(g, c, bias, &c_b, &bias_b) == LM_OK);
  lm_tensor* y = lm_add(g, c_b, bias_b);
  CHECK(y);
  CHECK(lm_output(g, y) == LM_OK);

  /* An error: A (2, 3) and B (3, 4) cannot be added without broadcasting. Nothing is thrown;
   * the call returns NULL and lm_last_error() says why, with the shapes. */
  lm_tensor* bad = lm_add(g, a, b);
  if (bad == NULL) {
    fprintf(stderr, "expected error (%s): %s\n", lm_status_name(lm_last_status()),
            lm_last_error());
  }

  lm_runtime* rt = lm_native_runtime_new(g);
  CHECK(rt);
  CHECK(lm_set_data_f32(rt, a, a_data, 6) == LM_OK);
  CHECK(lm_set_data_f32(rt, b, b_data, 12) == LM_OK);
  CHECK(lm_set_data_f32(rt, bias, bias_data, 4) == LM_OK);
  CHECK(lm_execute(rt, 0, NULL, NULL) == LM_OK);

  int64_t n = lm_output_numel(rt, y);
  CHECK(n >= 0);
  float* out = malloc((size_t)n * sizeof(float));
  CHECK(out);
  CHECK(lm_get_f32(rt, y, out, n) == LM_OK);
  for (int64_t i = 0; i < n; ++i) printf(i ? " %.9g" : "%.9g", out[i]);
  printf("\n");

  free(out);
  lm_runtime_free(rt);
  lm_graph_free(g);
  return 0;
}
