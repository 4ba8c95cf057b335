//! The kernel parameter structs, mirrored field for field from kernels-common/nk_params.h.

use cudarc::driver::DeviceRepr;

pub(crate) const DT_F32: i32 = 0;
pub(crate) const DT_F16: i32 = 1;
pub(crate) const DT_BF16: i32 = 2;

pub(crate) const F_LN: i32 = 1;
pub(crate) const F_WEIGHT: i32 = 2;
pub(crate) const F_BIAS: i32 = 4;
pub(crate) const F_RESIDUAL: i32 = 8;
pub(crate) const F_STATS: i32 = 16;
pub(crate) const F_NOFULL: i32 = 32;
pub(crate) const F_WGLOBAL: i32 = 64;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FwdParams {
    pub x: u64,
    pub y: u64,
    pub r: u64,
    pub r_out: u64,
    pub w: u64,
    pub b: u64,
    pub mean: u64,
    pub rstd: u64,
    pub ws: u64,
    pub m: i64,
    pub n: i64,
    pub sx: i64,
    pub sy: i64,
    pub sr: i64,
    pub sro: i64,
    pub nsplit: i64,
    pub eps: f32,
    pub offset: f32,
    pub dt_x: i32,
    pub dt_y: i32,
    pub dt_r: i32,
    pub dt_w: i32,
    pub flags: i32,
    pub casting: i32,
    pub group: i32,
    pub rpc: i32,
    pub slot: i32,
    pub pad_: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BwdParams {
    pub x: u64,
    pub dy: u64,
    pub dx: u64,
    pub dres: u64,
    pub w: u64,
    pub mean: u64,
    pub rstd: u64,
    pub ws_stats: u64,
    pub ws_dw: u64,
    pub ws_db: u64,
    pub dw: u64,
    pub db: u64,
    pub m: i64,
    pub n: i64,
    pub sx: i64,
    pub sdy: i64,
    pub sdx: i64,
    pub sdres: i64,
    pub nsplit: i64,
    pub nparts: i64,
    pub offset: f32,
    pub dt_x: i32,
    pub dt_y: i32,
    pub dt_w: i32,
    pub flags: i32,
    pub group: i32,
    pub rpc: i32,
    pub slot: i32,
}

// The C++ side static_asserts the same sizes.
const _: () = assert!(std::mem::size_of::<FwdParams>() == 176);
const _: () = assert!(std::mem::size_of::<BwdParams>() == 192);

// SAFETY: both structs are #[repr(C)] plain old data (integers and floats only, no padding
// beyond what the identical C++ layout has), passed by value as the kernel's single argument.
unsafe impl DeviceRepr for FwdParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for BwdParams {}
