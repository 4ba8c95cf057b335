// normkit kernel bodies for HIP: forward (row and split-row paths), backward (persistent row
// path, split-row path, fixed-order dW/dB finalize).
//
// Built only from the primitives of platform.h (geometry, shfl_xor, sync_block, rsqrt, the
// dtype conversions, 16-byte loads/stores) and templated on nk::WAVE.
//
// Thread mapping, shared by every kernel: a row (or a segment of one) is cut into chunks of V
// consecutive elements, V = 16 bytes / sizeof(x's dtype) (8 for f16/bf16, 4 for f32). Thread t of
// a workgroup of B threads owns chunks t, t + B, ..., t + (R-1)B. Full chunks of aligned rows move
// as 16-byte vectors, the rest element by element, with the same ownership, so the fp32
// accumulation order (per thread: chunk by chunk, element by element; then a xor butterfly across
// the wavefront; then waves in index order through LDS) depends on N and B only. B is picked by
// the host from N and the dtypes, never from M: the forward is batch-invariant.
#pragma once
#include "platform.h"
#include "params.h"

namespace nk {

// ---- chunk I/O ----------------------------------------------------------------------------
template <class T> NK_DEVICE void unpack16(u32x4 u, float* out);
template <> NK_DEVICE void unpack16<float>(u32x4 u, float* out) {
#pragma unroll
  for (int i = 0; i < 4; ++i) out[i] = __builtin_bit_cast(float, u[i]);
}
template <> NK_DEVICE void unpack16<f16>(u32x4 u, float* out) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = (float)__builtin_bit_cast(f16, (unsigned short)(u[i] & 0xffffu));
    out[2 * i + 1] = (float)__builtin_bit_cast(f16, (unsigned short)(u[i] >> 16));
  }
}
template <> NK_DEVICE void unpack16<bf16>(u32x4 u, float* out) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __builtin_bit_cast(float, u[i] << 16);
    out[2 * i + 1] = __builtin_bit_cast(float, u[i] & 0xffff0000u);
  }
}

template <class T> NK_DEVICE unsigned short bits16(float v) { return __builtin_bit_cast(unsigned short, from_f32<T>(v)); }

template <class T> NK_DEVICE u32x4 pack16(const float* v);
template <> NK_DEVICE u32x4 pack16<float>(const float* v) {
  u32x4 u;
#pragma unroll
  for (int i = 0; i < 4; ++i) u[i] = __builtin_bit_cast(u32, v[i]);
  return u;
}
template <> NK_DEVICE u32x4 pack16<f16>(const float* v) {
  u32x4 u;
#pragma unroll
  for (int i = 0; i < 4; ++i) u[i] = (u32)bits16<f16>(v[2 * i]) | ((u32)bits16<f16>(v[2 * i + 1]) << 16);
  return u;
}
template <> NK_DEVICE u32x4 pack16<bf16>(const float* v) {
  u32x4 u;
#pragma unroll
  for (int i = 0; i < 4; ++i) u[i] = (u32)bits16<bf16>(v[2 * i]) | ((u32)bits16<bf16>(v[2 * i + 1]) << 16);
  return u;
}

// Loads the V elements of `row` at [col, col + V) that lie below `end`, widened to fp32; the
// others read as 0. `vec`: the row start is 16-byte aligned (then so is every chunk).
template <class T, int V> NK_DEVICE void load_chunk(const T* row, i64 col, i64 end, bool vec, float (&out)[V]) {
  constexpr int PER16 = 16 / (int)sizeof(T);
  static_assert(V % PER16 == 0, "a chunk is a whole number of 16-byte vectors");
  if (vec && col + V <= end) {
#pragma unroll
    for (int q = 0; q < V / PER16; ++q) unpack16<T>(load16(row + col + q * PER16), out + q * PER16);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = (col + i < end) ? to_f32<T>(row[col + i]) : 0.0f;
  }
}

// Stores the elements of a chunk that lie below `end`, rounded to T.
template <class T, int V> NK_DEVICE void store_chunk(T* row, i64 col, i64 end, bool vec, const float (&v)[V]) {
  constexpr int PER16 = 16 / (int)sizeof(T);
  if (vec && col + V <= end) {
#pragma unroll
    for (int q = 0; q < V / PER16; ++q) store16(row + col + q * PER16, pack16<T>(v + q * PER16));
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (col + i < end) row[col + i] = from_f32<T>(v[i]);
  }
}

// ---- reductions ---------------------------------------------------------------------------
// Xor butterfly: lane l adds lane l^m's value, m = WAVE/2 .. 1. Both partners add the same two
// numbers (commutative), so every lane ends with bitwise the same sum.
NK_DEVICE float wave_sum(float v) {
#pragma unroll
  for (int m = WAVE / 2; m > 0; m >>= 1) v += shfl_xor(v, m);
  return v;
}

// K sums over the workgroup; every thread gets bitwise the same results (waves are added in
// index order). `red` holds MAX_WAVES * K floats of LDS.
template <int K> NK_DEVICE void block_sum(float (&v)[K], float* red) {
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = wave_sum(v[k]);
  const int nw = block_dim() / WAVE;
  if (lane_id() == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) red[wave_id() * K + k] = v[k];
  }
  sync_block();
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float s = red[k];
    for (int w = 1; w < nw; ++w) s += red[w * K + k];
    v[k] = s;
  }
  sync_block();  // red is reused by the next reduction
}

// ---- statistics of the chunks a workgroup holds ---------------------------------------------
// h[k][i] is element col0 + (t + k*B)*V + i; elements at or beyond `end` are 0 and masked.
// Returns sum (LayerNorm: sum and sum of squared deviations about the local mean, two passes
// over registers, never E[x^2] - mean^2).
template <int R, int V>
NK_DEVICE void chunk_stats(const float (&h)[R][V], i64 col0, i64 end, bool layer, float* red, float& mean_out,
                           float& m2_out) {
  const int t = thread_idx(), bs = block_dim();
  const float cnt = (float)(end - col0);
  if (layer) {
    float s[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < R; ++k)
#pragma unroll
      for (int i = 0; i < V; ++i) s[0] += h[k][i];
    block_sum<1>(s, red);
    const float mean = s[0] / cnt;
    float q[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const i64 col = col0 + (i64)(t + k * bs) * V;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float d = (col + i < end) ? h[k][i] - mean : 0.0f;
        q[0] += d * d;
      }
    }
    block_sum<1>(q, red);
    mean_out = mean;
    m2_out = q[0];
  } else {
    float q[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < R; ++k)
#pragma unroll
      for (int i = 0; i < V; ++i) q[0] += h[k][i] * h[k][i];
    block_sum<1>(q, red);
    mean_out = 0.0f;
    m2_out = q[0];  // sum of squares
  }
}

// ---- forward elementwise ------------------------------------------------------------------
// y for one element, in the casting mode of `flags` (see desc.rs). `mean`/`rstd` are fp32; in
// mode none they were rounded to x's dtype by `final_stats`.
template <class TX>
NK_DEVICE float norm_one(float h, float mean, float rstd, float w, float b, float w_offset, unsigned flags) {
  const unsigned cast = (flags >> F_CAST_SHIFT) & 3u;
  const bool hw = flags & F_WEIGHT, hb = flags & F_BIAS;
  float v;
  if (cast == CAST_NONE) {
    // RMSNorm multiplies h as stored; LayerNorm rounds h - mean first (as the CPU backend).
    const float d = (flags & F_LAYER) ? round_to<TX>(h - mean) : h;
    v = round_to<TX>(d * rstd);
    if (hw) v = round_to<TX>(v * round_to<TX>(w + w_offset));
    if (hb) v = round_to<TX>(v + b);
  } else {
    v = (h - mean) * rstd;
    if (cast == CAST_LLAMA) v = round_to<TX>(v);
    if (hw) v = v * (w + w_offset);
    if (hb) v = v + b;
  }
  return v;
}

template <class TX, class TW, class TY, int R, int V>
NK_DEVICE void fwd_store_rows(const FwdParams& p, const float (&h)[R][V], i64 row, i64 col0, i64 end, bool vec,
                              float mean, float rstd) {
  const int t = thread_idx(), bs = block_dim();
  const TW* w = (const TW*)p.w;
  const TW* b = (const TW*)p.b;
  TY* yr = (TY*)p.y + row * p.y_stride;
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const i64 col = col0 + (i64)(t + k * bs) * V;
    if (col < end) {
      float wv[V], bv[V], y[V];
      if (p.flags & F_WEIGHT) load_chunk<TW, V>(w, col, end, vec, wv);
      if (p.flags & F_BIAS) load_chunk<TW, V>(b, col, end, vec, bv);
#pragma unroll
      for (int i = 0; i < V; ++i)
        y[i] = norm_one<TX>(h[k][i], mean, rstd, (p.flags & F_WEIGHT) ? wv[i] : 1.0f, (p.flags & F_BIAS) ? bv[i] : 0.0f,
                            p.w_offset, p.flags);
      store_chunk<TY, V>(yr, col, end, vec, y);
    }
  }
}

// rstd from the variance (or mean square); in casting mode none both statistics are rounded to
// x's dtype, and those rounded values are what the forward uses and saves (as the CPU backend).
template <class TX>
NK_DEVICE void final_stats(const FwdParams& p, float var, float& mean, float& rstd) {
  rstd = rsqrt(var + p.eps);
  if (((p.flags >> F_CAST_SHIFT) & 3u) == CAST_NONE) {
    mean = round_to<TX>(mean);
    rstd = round_to<TX>(rstd);
  }
}

// Loads h = x (+ residual, rounded to the residual's dtype and stored to residual_out) for the
// chunks of [col0, end) this thread owns.
template <class TX, class TR, int R, int V>
NK_DEVICE void fwd_load_h(const FwdParams& p, i64 row, i64 col0, i64 end, bool vec, float (&h)[R][V]) {
  const int t = thread_idx(), bs = block_dim();
  const TX* xr = (const TX*)p.x + row * p.x_stride;
  const bool res = p.flags & F_RESIDUAL;
  const TR* rr = (const TR*)p.res + row * p.r_stride;
  TR* ror = (TR*)p.res_out + row * p.ro_stride;
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const i64 col = col0 + (i64)(t + k * bs) * V;
    load_chunk<TX, V>(xr, col, end, vec, h[k]);
    if (res) {
      float r[V];
      load_chunk<TR, V>(rr, col, end, vec, r);
#pragma unroll
      for (int i = 0; i < V; ++i) h[k][i] = round_to<TR>(h[k][i] + r[i]);
      if (col < end) store_chunk<TR, V>(ror, col, end, vec, h[k]);
    }
  }
}

// One workgroup per row (rows visited with stride grid_rows). The row lives in registers:
// B * R * V >= N is guaranteed by the host.
template <class TX, class TW, class TR, class TY, int R>
NK_DEVICE void fwd_row(const FwdParams& p) {
  constexpr int V = 16 / (int)sizeof(TX);
  __shared__ float red[MAX_WAVES];
  const bool vec = p.flags & F_VEC, layer = p.flags & F_LAYER;
  for (i64 row = block_idx_x(); row < p.m; row += p.grid_rows) {
    float h[R][V];
    fwd_load_h<TX, TR, R, V>(p, row, 0, p.n, vec, h);
    float mean, m2;
    chunk_stats<R, V>(h, 0, p.n, layer, red, mean, m2);
    float rstd;
    final_stats<TX>(p, m2 / (float)p.n, mean, rstd);
    if ((p.flags & F_STATS) && thread_idx() == 0) {
      p.rstd[row] = rstd;
      if (layer) p.mean[row] = mean;
    }
    fwd_store_rows<TX, TW, TY, R, V>(p, h, row, 0, p.n, vec, mean, rstd);
  }
}

// Split-row forward, pass 1: workgroup (rows, s) reduces segment s of its rows to
// (mean_s, M2_s) (LayerNorm) or (sum of squares, 0) (RMSNorm) and stores h to residual_out.
template <class TX, class TW, class TR, class TY, int R>
NK_DEVICE void fwd_split_stats(const FwdParams& p) {
  constexpr int V = 16 / (int)sizeof(TX);
  __shared__ float red[MAX_WAVES];
  const bool vec = p.flags & F_VEC, layer = p.flags & F_LAYER;
  const i64 s = block_idx_y();
  const i64 col0 = s * p.seg_len;
  const i64 end = (col0 + p.seg_len < p.n) ? col0 + p.seg_len : p.n;
  for (i64 row = block_idx_x(); row < p.m; row += p.grid_rows) {
    float h[R][V];
    fwd_load_h<TX, TR, R, V>(p, row, col0, end, vec, h);
    float mean, m2;
    chunk_stats<R, V>(h, col0, end, layer, red, mean, m2);
    if (thread_idx() == 0) {
      float* o = p.ws + (row * p.nseg + s) * 2;
      o[0] = layer ? mean : m2;
      o[1] = m2;
    }
  }
}

// Combines the nseg partial statistics of a row in segment order (Chan et al.'s pairwise update
// for LayerNorm). Every workgroup of the row computes the same bits.
NK_DEVICE void combine_segments(const float* part, unsigned nseg, i64 seg_len, i64 n, bool layer, float& mean,
                                float& var) {
  if (!layer) {
    float ss = 0.0f;
    for (unsigned s = 0; s < nseg; ++s) ss += part[2 * s];
    mean = 0.0f;
    var = ss / (float)n;
    return;
  }
  float na = 0.0f, ma = 0.0f, m2a = 0.0f;
  for (unsigned s = 0; s < nseg; ++s) {
    const i64 c0 = (i64)s * seg_len;
    const float nb = (float)(((c0 + seg_len < n) ? c0 + seg_len : n) - c0);
    const float mb = part[2 * s], m2b = part[2 * s + 1];
    if (s == 0) {
      na = nb;
      ma = mb;
      m2a = m2b;
    } else {
      const float nab = na + nb, d = mb - ma;
      ma = ma + d * (nb / nab);
      m2a = m2a + m2b + d * d * (na * nb / nab);
      na = nab;
    }
  }
  mean = ma;
  var = m2a / (float)n;
}

// Split-row forward, pass 2: workgroup (rows, s) combines the row's statistics, re-reads
// segment s of h (residual_out as stored, or x) and writes y; segment 0 writes mean and rstd.
template <class TX, class TW, class TR, class TY, int R>
NK_DEVICE void fwd_split_apply(const FwdParams& p) {
  constexpr int V = 16 / (int)sizeof(TX);
  const bool vec = p.flags & F_VEC, layer = p.flags & F_LAYER, res = p.flags & F_RESIDUAL;
  const i64 s = block_idx_y();
  const i64 col0 = s * p.seg_len;
  const i64 end = (col0 + p.seg_len < p.n) ? col0 + p.seg_len : p.n;
  const int t = thread_idx(), bs = block_dim();
  for (i64 row = block_idx_x(); row < p.m; row += p.grid_rows) {
    float mean, var;
    combine_segments(p.ws + row * p.nseg * 2, p.nseg, p.seg_len, p.n, layer, mean, var);
    float rstd;
    final_stats<TX>(p, var, mean, rstd);
    if ((p.flags & F_STATS) && s == 0 && t == 0) {
      p.rstd[row] = rstd;
      if (layer) p.mean[row] = mean;
    }
    float h[R][V];
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const i64 col = col0 + (i64)(t + k * bs) * V;
      if (res)
        load_chunk<TR, V>((const TR*)p.res_out + row * p.ro_stride, col, end, vec, h[k]);
      else
        load_chunk<TX, V>((const TX*)p.x + row * p.x_stride, col, end, vec, h[k]);
    }
    fwd_store_rows<TX, TW, TY, R, V>(p, h, row, col0, end, vec, mean, rstd);
  }
}

// ---- backward ------------------------------------------------------------------------------
// Per row: xh = (x - mean)·rstd, g = dy·(w + offset);
// dx = rstd·(g - xh·mean(g·xh) [- mean(g)]) [+ d_residual_out]; dw += dy·xh; db += dy.

// The (w + offset) chunks a thread owns; loaded once per workgroup (columns never change).
template <class TW, int R, int V>
NK_DEVICE void load_weights(const BwdParams& p, i64 col0, i64 end, bool vec, float (&wv)[R][V]) {
  const int t = thread_idx(), bs = block_dim();
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const i64 col = col0 + (i64)(t + k * bs) * V;
    if (p.flags & F_WEIGHT) {
      load_chunk<TW, V>((const TW*)p.w, col, end, vec, wv[k]);
#pragma unroll
      for (int i = 0; i < V; ++i) wv[k][i] += p.w_offset;
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) wv[k][i] = 1.0f;
    }
  }
}

template <class TX, class TY, int R, int V>
NK_DEVICE void bwd_load(const BwdParams& p, i64 row, i64 col0, i64 end, bool vec, float (&x)[R][V], float (&dy)[R][V]) {
  const int t = thread_idx(), bs = block_dim();
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const i64 col = col0 + (i64)(t + k * bs) * V;
    load_chunk<TX, V>((const TX*)p.x + row * p.x_stride, col, end, vec, x[k]);
    load_chunk<TY, V>((const TY*)p.dy + row * p.dy_stride, col, end, vec, dy[k]);
  }
}

// Partial sums of g·xh and g over the chunks a thread owns (masked elements are 0 in dy).
template <int R, int V>
NK_DEVICE void bwd_partial(const float (&x)[R][V], const float (&dy)[R][V], const float (&wv)[R][V], float mean,
                           float rstd, float (&acc)[2]) {
#pragma unroll
  for (int k = 0; k < R; ++k)
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const float xh = (x[k][i] - mean) * rstd, g = dy[k][i] * wv[k][i];
      acc[0] += g * xh;
      acc[1] += g;
    }
}

// dx for the thread's chunks, and the dw/db accumulation.
template <class TY, int R, int V>
NK_DEVICE void bwd_dx(const BwdParams& p, i64 row, i64 col0, i64 end, bool vec, const float (&x)[R][V],
                      const float (&dy)[R][V], const float (&wv)[R][V], float mean, float rstd, float c1, float c2,
                      float (&dwa)[R][V], float (&dba)[R][V]) {
  const int t = thread_idx(), bs = block_dim();
  TY* dxr = (TY*)p.dx + row * p.dx_stride;
  const TY* drr = (const TY*)p.dres + row * p.dres_stride;
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const i64 col = col0 + (i64)(t + k * bs) * V;
    if (col < end) {
      float d[V], dr[V];
      if (p.flags & F_RESIDUAL) load_chunk<TY, V>(drr, col, end, vec, dr);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float xh = (x[k][i] - mean) * rstd, g = dy[k][i] * wv[k][i];
        d[i] = rstd * (g - xh * c1 - c2);
        if (p.flags & F_RESIDUAL) d[i] += dr[i];
        dwa[k][i] += dy[k][i] * xh;
        dba[k][i] += dy[k][i];
      }
      store_chunk<TY, V>(dxr, col, end, vec, d);
    }
  }
}

// Writes a workgroup's partial dw/db rows (fp32, always 16-byte aligned: the host pads
// ws_stride to a multiple of 8 floats, so whole chunks fit).
template <int R, int V>
NK_DEVICE void bwd_write_partials(const BwdParams& p, i64 g, i64 col0, i64 end, const float (&dwa)[R][V],
                                  const float (&dba)[R][V]) {
  const int t = thread_idx(), bs = block_dim();
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const i64 col = col0 + (i64)(t + k * bs) * V;
    if (col < end) {
#pragma unroll
      for (int q = 0; q < V / 4; ++q) {
        if (p.flags & F_WEIGHT) store16(p.ws_dw + g * p.ws_stride + col + 4 * q, pack16<float>(dwa[k] + 4 * q));
        if (p.flags & F_BIAS) store16(p.ws_db + g * p.ws_stride + col + 4 * q, pack16<float>(dba[k] + 4 * q));
      }
    }
  }
}

// Persistent row path: workgroup g takes rows g, g + G, ...; the whole row lives in registers.
template <class TX, class TW, class TY, int R>
NK_DEVICE void bwd_row(const BwdParams& p) {
  constexpr int V = 16 / (int)sizeof(TX);
  __shared__ float red[MAX_WAVES * 2];
  const bool vec = p.flags & F_VEC, layer = p.flags & F_LAYER;
  const i64 g = block_idx_x();
  float wv[R][V], dwa[R][V], dba[R][V];
  load_weights<TW, R, V>(p, 0, p.n, vec, wv);
#pragma unroll
  for (int k = 0; k < R; ++k)
#pragma unroll
    for (int i = 0; i < V; ++i) dwa[k][i] = dba[k][i] = 0.0f;
  const float inv_n = 1.0f / (float)p.n;
  for (i64 row = g; row < p.m; row += p.grid_rows) {
    const float rstd = p.rstd[row], mean = layer ? p.mean[row] : 0.0f;
    float x[R][V], dy[R][V];
    bwd_load<TX, TY, R, V>(p, row, 0, p.n, vec, x, dy);
    float acc[2] = {0.0f, 0.0f};
    bwd_partial<R, V>(x, dy, wv, mean, rstd, acc);
    block_sum<2>(acc, red);
    bwd_dx<TY, R, V>(p, row, 0, p.n, vec, x, dy, wv, mean, rstd, acc[0] * inv_n, layer ? acc[1] * inv_n : 0.0f, dwa,
                     dba);
  }
  bwd_write_partials<R, V>(p, g, 0, p.n, dwa, dba);
}

// Split-row backward, pass 1: partial (sum g·xh, sum g) of segment s of each row.
template <class TX, class TW, class TY, int R>
NK_DEVICE void bwd_split_sums(const BwdParams& p) {
  constexpr int V = 16 / (int)sizeof(TX);
  __shared__ float red[MAX_WAVES * 2];
  const bool vec = p.flags & F_VEC, layer = p.flags & F_LAYER;
  const i64 s = block_idx_y();
  const i64 col0 = s * p.seg_len;
  const i64 end = (col0 + p.seg_len < p.n) ? col0 + p.seg_len : p.n;
  float wv[R][V];
  load_weights<TW, R, V>(p, col0, end, vec, wv);
  for (i64 row = block_idx_x(); row < p.m; row += p.grid_rows) {
    const float rstd = p.rstd[row], mean = layer ? p.mean[row] : 0.0f;
    float x[R][V], dy[R][V];
    bwd_load<TX, TY, R, V>(p, row, col0, end, vec, x, dy);
    float acc[2] = {0.0f, 0.0f};
    bwd_partial<R, V>(x, dy, wv, mean, rstd, acc);
    block_sum<2>(acc, red);
    if (thread_idx() == 0) {
      float* o = p.ws_rows + (row * p.nseg + s) * 2;
      o[0] = acc[0];
      o[1] = acc[1];
    }
  }
}

// Split-row backward, pass 2: workgroup (g, s) takes rows g, g + G, ... of segment s: sums the
// row's partials in segment order, writes dx and accumulates the segment's dw/db partials.
template <class TX, class TW, class TY, int R>
NK_DEVICE void bwd_split_apply(const BwdParams& p) {
  constexpr int V = 16 / (int)sizeof(TX);
  const bool vec = p.flags & F_VEC, layer = p.flags & F_LAYER;
  const i64 g = block_idx_x(), s = block_idx_y();
  const i64 col0 = s * p.seg_len;
  const i64 end = (col0 + p.seg_len < p.n) ? col0 + p.seg_len : p.n;
  float wv[R][V], dwa[R][V], dba[R][V];
  load_weights<TW, R, V>(p, col0, end, vec, wv);
#pragma unroll
  for (int k = 0; k < R; ++k)
#pragma unroll
    for (int i = 0; i < V; ++i) dwa[k][i] = dba[k][i] = 0.0f;
  const float inv_n = 1.0f / (float)p.n;
  for (i64 row = g; row < p.m; row += p.grid_rows) {
    const float rstd = p.rstd[row], mean = layer ? p.mean[row] : 0.0f;
    const float* part = p.ws_rows + row * p.nseg * 2;
    float a = 0.0f, c = 0.0f;
    for (unsigned q = 0; q < p.nseg; ++q) {
      a += part[2 * q];
      c += part[2 * q + 1];
    }
    float x[R][V], dy[R][V];
    bwd_load<TX, TY, R, V>(p, row, col0, end, vec, x, dy);
    bwd_dx<TY, R, V>(p, row, col0, end, vec, x, dy, wv, mean, rstd, a * inv_n, layer ? c * inv_n : 0.0f, dwa, dba);
  }
  bwd_write_partials<R, V>(p, g, col0, end, dwa, dba);
}

// dw[j] = sum over g = 0..G-1 of ws_dw[g][j], in that order (same for db), rounded once to the
// weight's dtype. Thread i owns columns 4i .. 4i+3; loads are 16-byte vectors.
template <class TW>
NK_DEVICE void bwd_finalize(const BwdParams& p) {
  const i64 j = ((i64)block_idx_x() * block_dim() + thread_idx()) * 4;
  if (j >= p.n) return;
  f32x4 dw = {0.0f, 0.0f, 0.0f, 0.0f}, db = {0.0f, 0.0f, 0.0f, 0.0f};
  const bool hw = p.flags & F_WEIGHT, hb = p.flags & F_BIAS;
  for (i64 g = 0; g < (i64)p.grid_rows; ++g) {
    if (hw) dw += __builtin_bit_cast(f32x4, load16(p.ws_dw + g * p.ws_stride + j));
    if (hb) db += __builtin_bit_cast(f32x4, load16(p.ws_db + g * p.ws_stride + j));
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (j + i < p.n) {
      if (hw) ((TW*)p.dw)[j + i] = from_f32<TW>(dw[i]);
      if (hb) ((TW*)p.db)[j + i] = from_f32<TW>(db[i]);
    }
  }
}

}  // namespace nk
