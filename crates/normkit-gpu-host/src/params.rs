//! The kernel parameter structs, mirrored field for field from `kernels-common/nk_params.h`
//! (`#[repr(C)]`; the sizes are asserted here and by `static_assert` there, every field's offset
//! here against the header's field order; the HIP backend also checks the kernel descriptors'
//! kernarg sizes against them when a code object is loaded), and the header's constants.
//!
//! Both structs are plain old data (integers and floats only), passed by value as a kernel's
//! single argument. A backend whose launch API wants a marker trait on the argument type
//! (cudarc's `DeviceRepr`) wraps them in a `#[repr(transparent)]` newtype of its own.

/// `NK_DT_F32`: a `dt_*` field's code for f32.
pub const DT_F32: i32 = 0;
/// `NK_DT_F16`: f16.
pub const DT_F16: i32 = 1;
/// `NK_DT_BF16`: bf16.
pub const DT_BF16: i32 = 2;

/// `NK_DT_E4M3`: a quantised `y` in OCP E4M3FN (`dt_y` only).
pub const DT_E4M3: i32 = 3;
/// `NK_DT_E5M2`: OCP E5M2.
pub const DT_E5M2: i32 = 4;
/// `NK_DT_E4M3FNUZ`: AMD gfx942 e4m3fnuz.
pub const DT_E4M3FNUZ: i32 = 5;
/// `NK_DT_E5M2FNUZ`: AMD gfx942 e5m2fnuz.
pub const DT_E5M2FNUZ: i32 = 6;

/// `NK_Q_ROW`: per-row dynamic scaling.
pub const Q_ROW: i32 = 1;
/// `NK_Q_DEVSCALE`: the per-tensor scale is read from `scale` (else `scale_host`).
pub const Q_DEVSCALE: i32 = 2;
/// `NK_Q_AMAX`: `amax` is written (through the backend's synchronisation words, `q_sync`).
pub const Q_AMAX: i32 = 4;
/// `NK_Q_INV`: `scale_inv` is written.
pub const Q_INV: i32 = 8;
/// `NK_Q_TFUSED`: the row kernel writes yT through its shared-memory tile (set by the plan).
pub const Q_TFUSED: i32 = 16;

/// `NK_F_LN` flag: LayerNorm (else RMSNorm).
pub const F_LN: i32 = 1;
/// `NK_F_WEIGHT` flag: an affine weight is present (forward) / `dw` is wanted (backward).
pub const F_WEIGHT: i32 = 2;
/// `NK_F_BIAS` flag: a bias is present (forward) / `db` is wanted (backward).
pub const F_BIAS: i32 = 4;
/// `NK_F_RESIDUAL` flag: fused residual add (forward) / `d_residual_out` given (backward).
pub const F_RESIDUAL: i32 = 8;
/// `NK_F_STATS` flag: the forward writes `mean` (LayerNorm) and `rstd`.
pub const F_STATS: i32 = 16;
/// `NK_F_NOFULL` flag: a measurement knob, the register kernels skip their FULL
/// specialisation (set by the CUDA backend's `Tuning::no_full`, never by the filling here).
pub const F_NOFULL: i32 = 32;
/// `NK_F_WGLOBAL` flag: the prefetching register backward reads the weight from global memory
/// (its fp32 slots do not fit; set by the CUDA launch step, never by the filling here).
pub const F_WGLOBAL: i32 = 64;
/// `NK_F_TRIGGER` flag: the register forward lets the stream's next kernel launch at its entry
/// (`griddepcontrol.launch_dependents`; set by the CUDA plan for decode-sized grids, never by the
/// filling here).
pub const F_TRIGGER: i32 = 128;

/// `NK_CAST_GEMMA`: [`normkit_core::CastingMode::Gemma`].
pub const CAST_GEMMA: i32 = 0;
/// `NK_CAST_LLAMA`: [`normkit_core::CastingMode::Llama`].
pub const CAST_LLAMA: i32 = 1;
/// `NK_CAST_NONE`: [`normkit_core::CastingMode::None`].
pub const CAST_NONE: i32 = 2;

/// `NkFwdParams`. Pointers are device addresses already advanced to element 0 of their view.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FwdParams {
    /// Device address of `x`.
    pub x: u64,
    /// Device address of `y`.
    pub y: u64,
    /// Device address of `residual` (0 without the fused add).
    pub r: u64,
    /// Device address of `residual_out`.
    pub r_out: u64,
    /// Device address of the weight (0 without).
    pub w: u64,
    /// Device address of the bias (0 without).
    pub b: u64,
    /// Device address where the mean is saved (0 if not).
    pub mean: u64,
    /// Device address where rstd is saved (0 if not).
    pub rstd: u64,
    /// Device address of the workspace (split path: per-chunk partial statistics).
    pub ws: u64,
    /// Rows, M.
    pub m: i64,
    /// Hidden size, N.
    pub n: i64,
    /// Row stride of `x`, in elements.
    pub sx: i64,
    /// Row stride of `y`, in elements.
    pub sy: i64,
    /// Row stride of `residual`, in elements.
    pub sr: i64,
    /// Row stride of `residual_out`, in elements.
    pub sro: i64,
    /// Split path: chunks per row.
    pub nsplit: i64,
    /// `eps` of the descriptor.
    pub eps: f32,
    /// Weight offset (added to every weight element).
    pub offset: f32,
    /// Dtype code of `x` (`DT_*`).
    pub dt_x: i32,
    /// Dtype code of `y`.
    pub dt_y: i32,
    /// Dtype code of the residual and `residual_out`.
    pub dt_r: i32,
    /// Dtype code of the weight and bias.
    pub dt_w: i32,
    /// `F_*` bits.
    pub flags: i32,
    /// Casting mode (`CAST_*`).
    pub casting: i32,
    /// Row path: threads per row.
    pub group: i32,
    /// Row path: rows per workgroup.
    pub rpc: i32,
    /// Row path: bytes per staged chunk (16 if every tensor is 16-bit, else 32).
    pub slot: i32,
    /// Staged cluster forward (CUDA `fwd_cstage`): the next row's pass 1 runs this many stages
    /// behind its refills (0 elsewhere).
    pub lag: i32,
    /// FP8: device address of the per-tensor scale (`Q_DEVSCALE`).
    pub scale: u64,
    /// FP8: device address of `amax` (`Q_AMAX`).
    pub amax: u64,
    /// FP8: device address of `scale_inv` (`Q_INV`; per row, always).
    pub scale_inv: u64,
    /// FP8: device address of `yT` (0 without).
    pub yt: u64,
    /// FP8, long rows per row: the workspace of per-(row, chunk) maxima.
    pub ws_q: u64,
    /// FP8: row stride of `yT`, in bytes (elements).
    pub syt: i64,
    /// FP8: the host scale (without `Q_DEVSCALE`).
    pub scale_host: f32,
    /// FP8: `Q_*` bits (0: y is not quantised).
    pub q: i32,
    /// FP8 fused transpose: rows per tile.
    pub tm: i32,
    /// FP8 fused transpose: bytes per shared-memory tile row.
    pub tpitch: i32,
    /// FP8 amax: the backend's two zeroed synchronisation words (running max, CTAs arrived).
    pub q_sync: u64,
    /// Staged cluster forward: stages of a later row's slice that each CTA prefetches into L2
    /// at the top of a row (0: none).
    pub pf: i32,
    /// Staged cluster forward: which later row `pf` prefetches (1: the next, 2: the one after).
    pub pfd: i32,
}
const _: () = assert!(std::mem::size_of::<FwdParams>() == 256);

/// `NkBwdParams`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BwdParams {
    /// Device address of `x` (the tensor that was normalised).
    pub x: u64,
    /// Device address of `dy`.
    pub dy: u64,
    /// Device address of `dx`.
    pub dx: u64,
    /// Device address of `d_residual_out` (0 if not given).
    pub dres: u64,
    /// Device address of the weight (0 without).
    pub w: u64,
    /// Device address of the saved mean (LayerNorm).
    pub mean: u64,
    /// Device address of the saved rstd.
    pub rstd: u64,
    /// Workspace: per-chunk partial sums of the split path.
    pub ws_stats: u64,
    /// Workspace: fp32 partial rows of dW.
    pub ws_dw: u64,
    /// Workspace: fp32 partial rows of dB.
    pub ws_db: u64,
    /// Device address of `dw` (0 if not wanted).
    pub dw: u64,
    /// Device address of `db` (0 if not wanted).
    pub db: u64,
    /// Rows, M.
    pub m: i64,
    /// Hidden size, N.
    pub n: i64,
    /// Row stride of `x`, in elements.
    pub sx: i64,
    /// Row stride of `dy`, in elements.
    pub sdy: i64,
    /// Row stride of `dx`, in elements.
    pub sdx: i64,
    /// Row stride of `d_residual_out`, in elements.
    pub sdres: i64,
    /// Split path: chunks per row.
    pub nsplit: i64,
    /// Partial dW/dB rows in the workspace.
    pub nparts: i64,
    /// Weight offset (added to every weight element).
    pub offset: f32,
    /// Dtype code of `x` (`DT_*`).
    pub dt_x: i32,
    /// Dtype code of the gradients (`dy`, `dx`, `d_residual_out`).
    pub dt_y: i32,
    /// Dtype code of the weight, `dw` and `db`.
    pub dt_w: i32,
    /// `F_*` bits.
    pub flags: i32,
    /// Row path: threads per row.
    pub group: i32,
    /// Row path: rows per workgroup.
    pub rpc: i32,
    /// Row path: bytes per staged chunk (16 if every tensor is 16-bit, else 32).
    pub slot: i32,
}
const _: () = assert!(std::mem::size_of::<BwdParams>() == 192);

/// Every field's offset, in the order nk_params.h declares them (9 addresses, 7 `int64_t`, two
/// floats, 12 `int32_t`; then the FP8 fields: 5 addresses, an `int64_t`, a float, 3 `int32_t`, an address).
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(FwdParams, x) == 0);
    assert!(offset_of!(FwdParams, y) == 8);
    assert!(offset_of!(FwdParams, r) == 16);
    assert!(offset_of!(FwdParams, r_out) == 24);
    assert!(offset_of!(FwdParams, w) == 32);
    assert!(offset_of!(FwdParams, b) == 40);
    assert!(offset_of!(FwdParams, mean) == 48);
    assert!(offset_of!(FwdParams, rstd) == 56);
    assert!(offset_of!(FwdParams, ws) == 64);
    assert!(offset_of!(FwdParams, m) == 72);
    assert!(offset_of!(FwdParams, n) == 80);
    assert!(offset_of!(FwdParams, sx) == 88);
    assert!(offset_of!(FwdParams, sy) == 96);
    assert!(offset_of!(FwdParams, sr) == 104);
    assert!(offset_of!(FwdParams, sro) == 112);
    assert!(offset_of!(FwdParams, nsplit) == 120);
    assert!(offset_of!(FwdParams, eps) == 128);
    assert!(offset_of!(FwdParams, offset) == 132);
    assert!(offset_of!(FwdParams, dt_x) == 136);
    assert!(offset_of!(FwdParams, dt_y) == 140);
    assert!(offset_of!(FwdParams, dt_r) == 144);
    assert!(offset_of!(FwdParams, dt_w) == 148);
    assert!(offset_of!(FwdParams, flags) == 152);
    assert!(offset_of!(FwdParams, casting) == 156);
    assert!(offset_of!(FwdParams, group) == 160);
    assert!(offset_of!(FwdParams, rpc) == 164);
    assert!(offset_of!(FwdParams, slot) == 168);
    assert!(offset_of!(FwdParams, lag) == 172);
    assert!(offset_of!(FwdParams, scale) == 176);
    assert!(offset_of!(FwdParams, amax) == 184);
    assert!(offset_of!(FwdParams, scale_inv) == 192);
    assert!(offset_of!(FwdParams, yt) == 200);
    assert!(offset_of!(FwdParams, ws_q) == 208);
    assert!(offset_of!(FwdParams, syt) == 216);
    assert!(offset_of!(FwdParams, scale_host) == 224);
    assert!(offset_of!(FwdParams, q) == 228);
    assert!(offset_of!(FwdParams, tm) == 232);
    assert!(offset_of!(FwdParams, tpitch) == 236);
    assert!(offset_of!(FwdParams, q_sync) == 240);
};

/// Every field's offset, in the order nk_params.h declares them (12 addresses, 8 `int64_t`, a
/// float, 7 `int32_t`).
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(BwdParams, x) == 0);
    assert!(offset_of!(BwdParams, dy) == 8);
    assert!(offset_of!(BwdParams, dx) == 16);
    assert!(offset_of!(BwdParams, dres) == 24);
    assert!(offset_of!(BwdParams, w) == 32);
    assert!(offset_of!(BwdParams, mean) == 40);
    assert!(offset_of!(BwdParams, rstd) == 48);
    assert!(offset_of!(BwdParams, ws_stats) == 56);
    assert!(offset_of!(BwdParams, ws_dw) == 64);
    assert!(offset_of!(BwdParams, ws_db) == 72);
    assert!(offset_of!(BwdParams, dw) == 80);
    assert!(offset_of!(BwdParams, db) == 88);
    assert!(offset_of!(BwdParams, m) == 96);
    assert!(offset_of!(BwdParams, n) == 104);
    assert!(offset_of!(BwdParams, sx) == 112);
    assert!(offset_of!(BwdParams, sdy) == 120);
    assert!(offset_of!(BwdParams, sdx) == 128);
    assert!(offset_of!(BwdParams, sdres) == 136);
    assert!(offset_of!(BwdParams, nsplit) == 144);
    assert!(offset_of!(BwdParams, nparts) == 152);
    assert!(offset_of!(BwdParams, offset) == 160);
    assert!(offset_of!(BwdParams, dt_x) == 164);
    assert!(offset_of!(BwdParams, dt_y) == 168);
    assert!(offset_of!(BwdParams, dt_w) == 172);
    assert!(offset_of!(BwdParams, flags) == 176);
    assert!(offset_of!(BwdParams, group) == 180);
    assert!(offset_of!(BwdParams, rpc) == 184);
    assert!(offset_of!(BwdParams, slot) == 188);
};
