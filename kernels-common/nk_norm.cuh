// normkit kernels, vendor-neutral bodies. A platform's translation unit (kernels-cuda/norm.cu)
// defines the NK_CONST constants its build script generates from its variants.rs, includes this
// file and expands the generated kernel list (nk_kernels.inc) into entry points that call these
// templates.
//
// Forward, two paths, chosen on the host by N and the dtypes (never by M or the layout), so a row's output
// is bitwise the same whatever the batch and however it is laid out. Each path has an ALIGNED
// variant (16-byte accesses) and an element-by-element one for any other layout; both assign the
// same 8-element chunks to the same threads and reduce in the same order (nk_common.cuh).
//   fwd_row          a group of G threads per row (G ≤ NK_ROW_MAX_THREADS, several groups per CTA
//                    for small N), persistent CTAs; the row is staged once into shared memory
//                    (cp.async on the aligned path), reduced, and written from there. One HBM read
//                    and one write per element. Used while the row (and weights) fit in shared memory.
//   fwd_split_*      any N: a row is cut into chunks of NK_SPLIT_THREADS·NK_SPLIT_ELEMS elements,
//                    one CTA per (row, chunk). `stats` writes per-chunk partials (sum of squares, or
//                    count/mean/M2 for LayerNorm, combined by Chan's formula in chunk order);
//                    `apply` combines them (every chunk CTA in the same order, so they agree
//                    bitwise) and writes y. x is read twice; used only where the row path cannot
//                    stage a row (and the weights) in shared memory.
// Backward (deterministic, no atomics): a persistent grid of CTAs walks rows; each keeps its dW/dB
// partial in shared memory (bwd_row) or registers (bwd_split_apply_pre) and writes one fp32 partial
// row to a (parts × N) workspace; bwd_finalize sums the parts in index order.
//
// Statistics are fp32: RMSNorm rstd = 1/sqrt(Σx²/N + eps); LayerNorm mean, then Σ(x−mean)² in a
// second pass over the staged row (never E[x²]−μ²). 64-bit indexing throughout; grids stride over
// rows, so any M up to 2^31−1 works with a bounded grid.
//
// The bodies live in one header per kernel family, included here in dependency order:
//   nk_base.cuh      flags, specialisation, chunk statistics, backward chunk math
//   nk_row.cuh       fwd_row, bwd_row
//   nk_split.cuh     fwd/bwd split stats, reduce and apply
//   nk_finalize.cuh  bwd_finalize, bwd_finalize_wide, bwd_finalize_cols
//   nk_reg.cuh       fwd_reg, bwd_reg (register-resident, and their prefetching twins)
//   nk_entry.cuh     the NARROW / run-time dispatch entries of the row and split bodies
//   nk_fp8.cuh       the quantised (FP8) forward: row, split and transpose kernels
#pragma once
#include "nk_base.cuh"
#include "nk_row.cuh"
#include "nk_split.cuh"
#include "nk_finalize.cuh"
#include "nk_fp8.cuh"
#include "nk_reg.cuh"
#include "nk_entry.cuh"
