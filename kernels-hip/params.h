// Kernel arguments: one struct passed by value per launch. The Rust mirror is
// crates/normkit-hip/src/params.rs (`#[repr(C)]`, same field order); both sides assert the size.
//
// Offsets of views are folded into the pointers by the host; strides and sizes are in elements
// and 64-bit, so every index computed from them is 64-bit (M >= 2^23 rows, > 2^31 elements).
#pragma once

namespace nk {

enum : unsigned {
  F_LAYER = 1u << 0,     // LayerNorm (else RMSNorm)
  F_WEIGHT = 1u << 1,    // affine weight present
  F_BIAS = 1u << 2,      // bias present (forward) / db wanted (backward)
  F_RESIDUAL = 1u << 3,  // fused residual add (forward) / d_residual_out given (backward)
  F_STATS = 1u << 4,     // forward writes mean (LayerNorm) and rstd
  F_VEC = 1u << 5,       // every row start of every operand is 16-byte aligned: full chunks
                         // move as 16-byte vectors (the element-to-thread mapping is the same
                         // either way, so results are bitwise equal)
  F_CAST_SHIFT = 8,      // bits 8..9: 0 gemma, 1 llama, 2 none
};
enum : unsigned { CAST_GEMMA = 0, CAST_LLAMA = 1, CAST_NONE = 2 };

struct FwdParams {
  const void* x;
  void* y;
  const void* res;
  void* res_out;
  const void* w;
  const void* b;
  float* mean;
  float* rstd;
  float* ws;  // split path: (M x nseg) pairs of partial statistics
  long long m;
  long long n;
  long long x_stride;
  long long y_stride;
  long long r_stride;
  long long ro_stride;
  float eps;
  float w_offset;
  unsigned flags;
  unsigned nseg;       // split path: segments per row
  unsigned grid_rows;  // workgroups along x; rows are visited with this stride
  unsigned pad0;
  long long seg_len;   // split path: elements per segment
};
static_assert(sizeof(FwdParams) == 152, "FwdParams layout is shared with Rust");

struct BwdParams {
  const void* x;  // the normalised tensor as stored (residual_out with the fused add)
  const void* dy;
  void* dx;
  const void* dres;  // d_residual_out, added to dx
  const void* w;
  const float* mean;
  const float* rstd;
  float* ws_dw;    // (grid_rows x ws_stride) fp32 partial dw rows, one per persistent workgroup
  float* ws_db;    // same for db
  float* ws_rows;  // split path: (M x nseg) pairs of partial row sums
  void* dw;        // finalize output
  void* db;        // finalize output
  long long m;
  long long n;
  long long x_stride;
  long long dy_stride;
  long long dx_stride;
  long long dres_stride;
  long long ws_stride;  // floats between partial rows; a multiple of 8
  float w_offset;
  unsigned flags;
  unsigned nseg;
  unsigned grid_rows;  // persistent workgroups along rows (G); the finalize sums G partials
  long long seg_len;
};
static_assert(sizeof(BwdParams) == 176, "BwdParams layout is shared with Rust");

}  // namespace nk
