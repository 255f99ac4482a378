// The int8 GEMM of quantized activations and a quantized weight (schedule quant_dot 1 with
// int8_gemm 1, rules/cpu_int8.rules), for the rows past the int8 GEMV's (c/quant_int8.cc): x's
// rows are quantized once (bytes shifted to unsigned, q + 128), then threads take (n block,
// m chunk) tasks as the f32 GEMM does (c/matmul.cc). A task lays its columns of W out, one k
// block at a time, as panels of their integers: per group of 4 k and column 4 signed bytes
// (a 512-bit vector holds 16 columns' groups), and per sub-block (32 k; Q6_K's 16) and column
// the scale, -128 times the sum of its integers (so that the unsigned x's sums come out
// exact) and, for Q4_K and Q5_K, the minimum. The micro-kernel holds a block of mr rows x nr
// columns as int32 sums of a sub-block, 64 products a vpdpbusd (AVX512-VNNI), each sub-block's
// sum then times its two scales into f32 sums, less the minimum times x's sum. The same
// products as the int8 GEMV, summed in another order. Not the GEMV nor x's quantization.
#include <set>
#include <string>

#include "codegen/c/matmul.h"
#include "codegen/c/quant.h"
#include "codegen/c/renderer.h"
#include "codegen/c/schedule.h"
#include "core/errors.h"
#include "kernel/quant_row_groups.h"

namespace luminal {

namespace {

constexpr int64_t kRows = 4;    // rows of x in the register block (mr)
constexpr int64_t kVecs = 2;    // 16-column vectors in it (nr = 16 * kVecs)
constexpr int64_t kLanes = 16;  // int32 sums a vector
constexpr int64_t kNr = kVecs * kLanes;
constexpr int64_t kNcMax = 256;  // columns of a task's n block

std::string str(int64_t v) { return std::to_string(v); }

// k of a sub-block: one scale (and minimum) per column.
int64_t sub_block(DType w) { return w == DType::Q6_K ? 16 : 32; }
bool has_minimum(DType w) { return w == DType::Q4_K || w == DType::Q5_K; }

// `groups`: the pack of a weight in row groups (kernel/quant_row_groups.h).
std::string pack_name(DType w, bool groups) {
  return std::string(groups ? "lm_qpackg_" : "lm_qpack_") + dtype_name(w);
}
std::string micro_name(DType w) {
  return std::string("lm_qmm_") + dtype_name(w) + "_" + str(kRows) + "x" + str(kNr);
}

// The integers q[0, block), scales qd[0, block / sub_block) and minimums qm[0, block / 32) of
// weight block b, so that its value j is qd[j / sub_block] * q[j] - qm[j / 32]. Bytes a vector
// of 32 (16 for Q4_0) at a time: lm_vb32 / lm_vb16 (kPackTypes), loaded and stored unaligned
// by memcpy. In row groups (`groups`, kernel/quant_row_groups.h) the block's scales of the
// group's rows are at sp (row lm_r's) and its row's first 16 bytes of integers at qp, each next
// 16 a vector of the group on (Q8_0's stored q + 128).
void emit_unpack_block(DType w, bool groups, CodeWriter& c) {
  // the 32 bytes at `at` as vector `name`, and vector `v` stored into q + `at`
  auto load = [&](const std::string& name, const std::string& at) {
    c.line("lm_vb32 " + name + ";");
    c.line("__builtin_memcpy(&" + name + ", " + at + ", 32);");
  };
  auto store = [&](const std::string& at, const std::string& v) {
    c.open("");
    c.line("const lm_vb32 t = " + v + ";");
    c.line("__builtin_memcpy(q + " + at + ", &t, 32);");
    c.close();
  };
  switch (w) {
    case DType::Q8_0:
      c.line(groups ? "qd[0] = lm_block_scale(sp + lm_r * 2);" : "qd[0] = lm_block_scale(b);");
      if (!groups) {
        c.line("__builtin_memcpy(q, b + 2, 32);");
        break;
      }
      for (int h = 0; h < 2; ++h) {
        c.open("");
        c.line("lm_vb16 t;");
        c.line("__builtin_memcpy(&t, qp + " + str(64 * h) + ", 16);");
        c.line("t ^= 0x80;");
        c.line("__builtin_memcpy(q + " + str(16 * h) + ", &t, 16);");
        c.close();
      }
      break;
    case DType::Q4_0:
      c.line(groups ? "qd[0] = lm_block_scale(sp + lm_r * 2);" : "qd[0] = lm_block_scale(b);");
      c.line("lm_vb16 raw;");
      c.line(groups ? "__builtin_memcpy(&raw, qp, 16);" : "__builtin_memcpy(&raw, b + 2, 16);");
      c.line("const lm_vb16 lo = (raw & 15) - 8, hi = (raw >> 4) - 8;");
      c.line("__builtin_memcpy(q, &lo, 16);");
      c.line("__builtin_memcpy(q + 16, &hi, 16);");
      break;
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool five = w == DType::Q5_K;
      if (groups) {  // the scales laid out as bytes, and 16 bytes of nibbles a vector of 64 on
        c.line("const float lm_d = lm_block_scale(sp + 64 + lm_r * 2), "
               "lm_dm = lm_block_scale(sp + 72 + lm_r * 2);");
        c.open("for (int s = 0; s < 8; s++)");
        c.line("qd[s] = lm_d * (float)sp[s * 4 + lm_r];");
        c.line("qm[s] = lm_dm * (float)sp[32 + s * 4 + lm_r];");
        c.close();
        for (int h = 0; h < 8; ++h) {  // bytes 16h .. 16h + 15: sub-blocks h / 2 * 2 and + 1
          c.open("");
          c.line("lm_vb16 t;");
          c.line("__builtin_memcpy(&t, qp + " + str(64 * h) + ", 16);");
          c.line("const lm_vb16 lo = t & 15, hi = t >> 4;");
          const int at = h / 2 * 64 + h % 2 * 16;
          c.line("__builtin_memcpy(q + " + str(at) + ", &lo, 16);");
          c.line("__builtin_memcpy(q + " + str(at + 32) + ", &hi, 16);");
          c.close();
        }
        break;
      }
      // 6-bit scales and minimums of the 8 sub-blocks (GGUF's get_scale_min_k4, c/quant.cc)
      open_k_quant_sub_blocks(c);
      c.line("qd[sub] = s0;");
      c.line("qd[sub + 1] = s1;");
      c.line("qm[sub] = m0;");
      c.line("qm[sub + 1] = m1;");
      c.close();
      if (five) load("qh", "b + 16");
      for (int p = 0; p < 4; ++p) {
        const std::string P = str(p);
        load("raw" + P, std::string("b + ") + (five ? "48" : "16") + " + " + str(32 * p));
        std::string lo = "raw" + P + " & 15";
        std::string hi = "raw" + P + " >> 4";
        if (five) {
          lo += " | (((qh >> " + str(2 * p) + ") & 1) << 4)";
          hi += " | (((qh >> " + str(2 * p + 1) + ") & 1) << 4)";
        }
        store(str(64 * p), lo);
        store(str(64 * p + 32), hi);
      }
      break;
    }
    case DType::Q6_K:
      // ql (128 bytes), qh (64), 16 int8 scales, d; element 128h + 32r + l from a nibble of
      // ql and bits 2r of qh, less 32
      c.line("const float dd = lm_block_scale(b + 208);");
      c.line("for (int l = 0; l < 16; l++) qd[l] = dd * (float)(signed char)b[192 + l];");
      for (int h = 0; h < 2; ++h) {
        const std::string H = str(h);
        load("ql" + H + "a", "b + " + str(64 * h));
        load("ql" + H + "b", "b + " + str(64 * h + 32));
        load("qh" + H, "b + " + str(128 + 32 * h));
        const std::string qh = "qh" + H;
        store(str(128 * h), "((ql" + H + "a & 15) | ((" + qh + " & 3) << 4)) - 32");
        store(str(128 * h + 32), "((ql" + H + "b & 15) | (((" + qh + " >> 2) & 3) << 4)) - 32");
        store(str(128 * h + 64), "((ql" + H + "a >> 4) | (((" + qh + " >> 4) & 3) << 4)) - 32");
        store(str(128 * h + 96), "((ql" + H + "b >> 4) | (((" + qh + " >> 6) & 3) << 4)) - 32");
      }
      break;
    default:
      throw InternalError(std::string("int8 gemm: ") + dtype_name(w) + " has no integers");
  }
}

const char* kPackTypes =
    "typedef unsigned char lm_vb32 __attribute__((vector_size(32)));\n"
    "typedef unsigned char lm_vb16 __attribute__((vector_size(16)));\n";

// static void lm_qpack_q4_0(const uint8_t* w, int64_t ldw, int64_t pc, int64_t kc,
// int64_t cols, signed char* wp, int* ws, float* wd, float* wm): rows 0 .. cols of W (ldw
// bytes apart; a panel's columns) over k [pc, pc + kc) into one panel of kNr columns: the
// integers of k and column j at wp[((k / 4) * kNr + j) * 4 + k % 4], per sub-block g the
// scale wd[g * kNr + j], -128 times the integers' sum ws[g * kNr + j], the minimum
// wm[(k / 32) * kNr + j]; columns past cols are 0.
// In row groups (`groups`) ldw is the bytes between groups of rows.
std::string pack_function(DType w, bool groups) {
  const int64_t bv = block_values(w);
  const int64_t g = sub_block(w);
  const std::string nr = str(kNr);
  CodeWriter c;
  c.open("static void " + pack_name(w, groups) +
         "(const uint8_t* restrict w, int64_t ldw, int64_t pc, int64_t kc, int64_t cols, "
         "signed char* restrict wp, int* restrict ws, float* restrict wd, float* restrict wm)");
  c.open("for (int64_t j = 0; j < " + nr + "; j++)");
  c.open("if (j >= cols)");
  c.line("for (int64_t k = 0; k < kc; k++) wp[((k / 4) * " + nr + " + j) * 4 + k % 4] = 0;");
  c.open("for (int64_t s = 0; s < kc / " + str(g) + "; s++)");
  c.line("ws[s * " + nr + " + j] = 0;");
  c.line("wd[s * " + nr + " + j] = 0.0f;");
  c.close();
  if (has_minimum(w)) {
    c.line("for (int64_t s = 0; s < kc / 32; s++) wm[s * " + nr + " + j] = 0.0f;");
  }
  c.line("continue;");
  c.close();
  // The column's next k block, fetched while this one is unpacked: a column's blocks of one k
  // block are a few cache lines, each next column's ldw bytes on, which the hardware's
  // prefetchers do not see coming (a 2048 x 8192 Q4_0 weight's unpack, 9 rows, took 6.8 ms
  // without it, 4.9 with it). A prefetch past the weight's end does not fault.
  const std::string bytes = str(block_bytes(w));
  if (groups) {  // the group's chunks, once a group
    const std::string chunk = str(group_chunk_bytes(w));
    const std::string per = str(group_chunk_blocks(w) * bv);
    c.line("const uint8_t* restrict lm_next = w + j / " + str(kGroupRows) + " * ldw + (pc + kc) / " +
           per + " * " + chunk + ";");
    c.line("if (j % " + str(kGroupRows) + " == 0) for (int64_t o = 0; o < (kc + " + per +
           " - 1) / " + per + " * " + chunk + "; o += 64) __builtin_prefetch(lm_next + o);");
  } else {
    c.line("const uint8_t* restrict lm_next = w + j * ldw + (pc + kc) / " + str(bv) + " * " +
           bytes + ";");
    c.line("for (int64_t o = 0; o < kc / " + str(bv) + " * " + bytes + "; o += 64) "
           "__builtin_prefetch(lm_next + o);");
  }
  c.open("for (int64_t kb = 0; kb < kc / " + str(bv) + "; kb++)");
  if (groups) {  // the block's integers of row lm_r at qp, its scales (all 4 rows') at sp
    const std::string per = str(group_chunk_blocks(w));
    c.line("const int64_t lm_kb = pc / " + str(bv) + " + kb, lm_r = j % " + str(kGroupRows) +
           ";");
    c.line("const uint8_t* restrict ch = w + j / " + str(kGroupRows) + " * ldw + lm_kb / " + per +
           " * " + str(group_chunk_bytes(w)) + ";");
    c.line("const uint8_t* restrict qp = ch + lm_kb % " + per + " * " +
           str(group_slot_bytes(w)) + " + lm_r * 16;");
    c.line("const uint8_t* restrict sp = ch + " +
           str(group_chunk_blocks(w) * group_slot_bytes(w)) + " + lm_kb % " + per + " * " +
           str(group_meta_bytes(w)) + ";");
  } else {
    c.line("const uint8_t* restrict b = w + j * ldw + (pc / " + str(bv) + " + kb) * " +
           str(block_bytes(w)) + ";");
  }
  c.line("signed char q[" + str(bv) + "];");
  c.line("float qd[" + str(bv / g) + "];");
  c.line(has_minimum(w) ? "float qm[" + str(bv / 32) + "];" : "(void)wm;");
  emit_unpack_block(w, groups, c);
  c.line("const int64_t k0 = kb * " + str(bv) + ";");
  c.open("for (int64_t s = 0; s < " + str(bv / g) + "; s++)");
  c.line("int sum = 0;");
  c.line("for (int l = 0; l < " + str(g) + "; l++) sum += q[s * " + str(g) + " + l];");
  c.line("const int64_t at = (k0 / " + str(g) + " + s) * " + nr + " + j;");
  c.line("ws[at] = -128 * sum;");
  c.line("wd[at] = qd[s];");
  c.close();
  if (has_minimum(w)) {
    c.line("for (int64_t s = 0; s < " + str(bv / 32) + "; s++) wm[(k0 / 32 + s) * " + nr +
           " + j] = qm[s];");
  }
  c.line("for (int64_t k = 0; k < " + str(bv) +
         "; k += 4) __builtin_memcpy(wp + (((k0 + k) / 4) * " +
         nr + " + j) * 4, q + k, 4);");
  c.close();
  c.close();
  c.close();
  return c.str();
}

// static inline void lm_qmm_q4_0_4x32(int64_t kc, const unsigned char* x, int64_t xs,
// const float* dx, const float* sx, int64_t fs, const signed char* wp, const int* ws,
// const float* wd, const float* wm, float* c, int64_t ldc, int64_t rows, int64_t cols,
// int first): c[0:rows, 0:cols] (+)= the k block's products of rows of x (unsigned bytes xs
// apart; their scales per 32 at dx and sums per 16 times the scale at sx, fs floats apart)
// and the panel. Rows past `rows` read the last real one and are not stored.
std::string micro_kernel(DType w) {
  const int64_t g = sub_block(w);
  const std::string nr = str(kNr);
  CodeWriter c;
  c.open("static inline void " + micro_name(w) +
         "(int64_t kc, const unsigned char* restrict x, int64_t xs, const float* restrict dx, "
         "const float* restrict sx, int64_t fs, const signed char* restrict wp, "
         "const int* restrict ws, const float* restrict wd, const float* restrict wm, "
         "float* restrict c, int64_t ldc, int64_t rows, int64_t cols, int first)");
  if (!has_minimum(w)) c.line("(void)wm;");
  if (!has_minimum(w)) c.line("(void)sx;");
  for (int64_t r = 0; r < kRows; ++r) {
    const std::string R = str(r);
    c.line("const int64_t r" + R + " = " + R + " < rows ? " + R + " : rows - 1;");
    c.line("const unsigned char* restrict x" + R + " = x + r" + R + " * xs;");
    c.line("const float* restrict dx" + R + " = dx + r" + R + " * fs;");
    if (has_minimum(w)) c.line("const float* restrict sx" + R + " = sx + r" + R + " * fs;");
  }
  auto rj = [](int64_t r, int64_t j) { return str(r) + "_" + str(j); };
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t j = 0; j < kVecs; ++j) c.line("lm_vf16 c" + rj(r, j) + " = {0};");
  }
  c.open("for (int64_t s = 0; s < kc / " + str(g) + "; s++)");
  for (int64_t j = 0; j < kVecs; ++j) {
    const std::string J = str(j);
    c.line("const lm_vi16 o" + J + " = *(const lm_vi16*)(ws + s * " + nr + " + " +
           str(j * kLanes) + ");");
    for (int64_t r = 0; r < kRows; ++r) c.line("lm_vi16 i" + rj(r, j) + " = o" + J + ";");
  }
  open_unrolled(c, "for (int q = 0; q < " + str(g / 4) + "; q++)");
  c.line("const signed char* restrict p = wp + (s * " + str(g / 4) + " + q) * " + str(kNr * 4) +
         ";");
  for (int64_t j = 0; j < kVecs; ++j) {
    c.line("const lm_vi16 b" + str(j) + " = *(const lm_vi16*)(p + " + str(j * kLanes * 4) + ");");
  }
  for (int64_t r = 0; r < kRows; ++r) {
    const std::string R = str(r);
    c.line("const lm_vi16 a" + R + " = (lm_vi16){0} + *(const lm_int_word*)(x" + R + " + s * " +
           str(g) + " + q * 4);");
    for (int64_t j = 0; j < kVecs; ++j) {
      c.line("i" + rj(r, j) + " = lm_dpbusd(i" + rj(r, j) + ", a" + R + ", b" + str(j) + ");");
    }
  }
  c.close();
  const std::string xscale = g == 32 ? "s" : "s / 2";
  for (int64_t j = 0; j < kVecs; ++j) {
    const std::string J = str(j);
    c.line("const lm_vf16 d" + J + " = *(const lm_vf16*)(wd + s * " + nr + " + " +
           str(j * kLanes) + ");");
    if (has_minimum(w)) {
      c.line("const lm_vf16 m" + J + " = *(const lm_vf16*)(wm + s * " + nr + " + " +
             str(j * kLanes) + ");");
    }
    for (int64_t r = 0; r < kRows; ++r) {
      const std::string R = str(r);
      c.line("c" + rj(r, j) + " += __builtin_convertvector(i" + rj(r, j) + ", lm_vf16) * (d" +
             J + " * dx" + R + "[" + xscale + "]);");
      if (has_minimum(w)) {
        c.line("c" + rj(r, j) + " -= m" + J + " * (sx" + R + "[2 * s] + sx" + R +
               "[2 * s + 1]);");
      }
    }
  }
  c.close();
  emit_block_store(kRows, kNr, kLanes, "rows", "cols", c);
  c.close();
  return c.str();
}

// acc + the products of x's unsigned bytes and b's signed ones, four a lane: inline assembly,
// so that the generated C needs no intrinsics header and builds with GCC and Clang alike.
const char* kDpbusd =
    "typedef int lm_vi16 __attribute__((vector_size(64)));\n"
    "typedef int lm_int_word __attribute__((aligned(1), may_alias));\n"
    "static inline lm_vi16 lm_dpbusd(lm_vi16 acc, lm_vi16 x, lm_vi16 b) {\n"
    "  __asm__(\"vpdpbusd %2, %1, %0\" : \"+v\"(acc) : \"v\"(x), \"v\"(b));\n"
    "  return acc;\n"
    "}\n";

// Whether the int8 GEMM of `k` runs on AMX tiles (int8_gemm 2, c/quant_int8_amx.cc).
bool amx(const Kernel& k) { return CpuSchedule{}.with(k.schedule).int8_gemm == kAmxInt8; }

}  // namespace

bool takes_int8_gemm(const Kernel& k, int64_t native) {
  return k.matmul.present && k.matmul.a_q8_0 && cpu_schedule(k, native).int8_gemm >= 1 &&
         folded_batch_loops(k) == k.matmul.m_loop;
}

std::string int8_gemm_prelude(const Kernel& k, std::set<std::string>& seen) {
  const DType w = k.matmul.b_stored;
  std::string s;
  if (seen.insert(float_vector(kLanes)).second) s += float_vector_typedefs(kLanes);
  if (seen.insert("lm_dpbusd").second) s += std::string(kDpbusd) + kPackTypes;
  if (amx(k)) {
    s += amx_int8_prelude(w, sub_block(w), has_minimum(w), seen);
  } else if (seen.insert(micro_name(w)).second) {
    s += micro_kernel(w);
  }
  const bool groups = k.panels && k.panels->row_groups;
  if (seen.insert(pack_name(w, groups)).second) s += pack_function(w, groups);
  if (groups) s += group_gemv_prelude(w, seen);
  return s;
}

void CRenderer::emit_int8_gemm(const Kernel& k, CodeWriter& w) const {
  const DType stored = k.matmul.b_stored;
  const int64_t bv = block_values(stored);
  const int64_t g = sub_block(stored);
  const int64_t kc = (cpu_schedule(k, vector_width_).tile_k + bv - 1) / bv * bv;
  const std::string KC = str(kc);
  const std::string NC = str(kNcMax);
  const bool tiles = amx(k);
  const int64_t mr = tiles ? 32 : kRows;  // AMX's block: 2 x 2 tiles of 16 x 16
  emit_gemm_tasks(mr, kNr, kNcMax, kNr, w);
  std::string team = omp_team(k, "M * N * K");
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  if (tiles) w.line(amx_int8_switch_name(g) + "();  /* this thread's tiles */");
  // the task's panels of one k block: integers, then per sub-block sums, scales, minimums
  w.line("char* lm_praw = (char*)malloc(" + KC + " * " + NC + " + 3 * 4 * " + str(kc / g) +
         " * " + NC + " + 64);");
  w.line("signed char* lm_wp = (signed char*)(((unsigned long)lm_praw + 63) & ~63ul);");
  w.line("int* lm_ws = (int*)(lm_wp + " + KC + " * " + NC + ");");
  w.line("float* lm_wd = (float*)(lm_ws + " + str(kc / g) + " * " + NC + ");");
  w.line("float* lm_wm = lm_wd + " + str(kc / g) + " * " + NC + ";");
  open_gemm_task_loop(w);
  emit_batch_bases(k, 0, "uint8_t", w);
  w.line("(void)A;");
  emit_gemm_task_bounds(w);
  w.open("for (int64_t pc = 0; pc < K; pc += " + KC + ")");
  w.line("const int64_t kcur = K - pc < " + KC + " ? K - pc : " + KC + ";");
  const std::string panel_at = "jr * kcur";
  const std::string sums_at = "jr * (kcur / " + str(g) + ")";
  const std::string mins_at = "jr * (kcur / 32)";
  w.open("for (int64_t jr = 0; jr < ncols; jr += " + str(kNr) + ")");
  const bool groups = k.panels && k.panels->row_groups;
  const std::string wb = groups ? "B + (n0 + jr) / " + str(kGroupRows) + " * lm_gbytes, lm_gbytes"
                                : "B + (n0 + jr) * lm_ldw, lm_ldw";
  w.line(pack_name(stored, groups) + "(" + wb + ", pc, kcur, ncols - jr, lm_wp + " +
         panel_at + ", lm_ws + " + sums_at + ", lm_wd + " + sums_at + ", lm_wm + " + mins_at +
         ");");
  w.close();
  w.open("for (int64_t i = m0; i < m1; i += " + str(mr) + ")");
  w.line("const int64_t rows = m1 - i < " + str(mr) + " ? m1 - i : " + str(mr) + ";");
  w.line("const char* restrict lm_x = lm_xq + i * lm_xbytes;");
  w.open("for (int64_t jr = 0; jr < ncols; jr += " + str(kNr) + ")");
  w.line((tiles ? amx_int8_micro_name(stored) : micro_name(stored)) +
         "(kcur, (const unsigned char*)lm_x + pc, lm_xbytes, "
         "(const float*)(lm_x + K) + pc / 32, (const float*)(lm_x + K + K / 32 * 4) + pc / 16, "
         "lm_xbytes / 4, lm_wp + " + panel_at + ", lm_ws + " + sums_at + ", lm_wd + " + sums_at +
         ", lm_wm + " + mins_at + ", C + i * N + n0 + jr, N, rows, ncols - jr < " + str(kNr) +
         " ? ncols - jr : " + str(kNr) + ", pc == 0);");
  w.close();
  if (k.matmul.epilogue_from >= 0) {
    w.open("if (pc + kcur == K)");
    emit_matmul_epilogue(k, 0, "i", "i + rows", "n0", "n0 + ncols", w);
    w.close();
  }
  w.close();
  w.close();
  w.close();
  w.line("free(lm_praw);");
  if (tiles) w.line("lm_amx_off();");
  w.close();
}

}  // namespace luminal
