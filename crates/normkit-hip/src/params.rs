//! Kernel arguments, mirroring kernels-hip/params.h field for field (`#[repr(C)]`). Both sides
//! assert the size; the kernel descriptor's kernarg size is checked against it at load time.

use std::ffi::c_void;

pub const F_LAYER: u32 = 1 << 0;
pub const F_WEIGHT: u32 = 1 << 1;
pub const F_BIAS: u32 = 1 << 2;
pub const F_RESIDUAL: u32 = 1 << 3;
pub const F_STATS: u32 = 1 << 4;
pub const F_VEC: u32 = 1 << 5;
pub const F_CAST_SHIFT: u32 = 8;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FwdParams {
    pub x: *const c_void,
    pub y: *mut c_void,
    pub res: *const c_void,
    pub res_out: *mut c_void,
    pub w: *const c_void,
    pub b: *const c_void,
    pub mean: *mut f32,
    pub rstd: *mut f32,
    pub ws: *mut f32,
    pub m: i64,
    pub n: i64,
    pub x_stride: i64,
    pub y_stride: i64,
    pub r_stride: i64,
    pub ro_stride: i64,
    pub eps: f32,
    pub w_offset: f32,
    pub flags: u32,
    pub nseg: u32,
    pub grid_rows: u32,
    pub pad0: u32,
    pub seg_len: i64,
}
const _: () = assert!(std::mem::size_of::<FwdParams>() == 152);

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BwdParams {
    pub x: *const c_void,
    pub dy: *const c_void,
    pub dx: *mut c_void,
    pub dres: *const c_void,
    pub w: *const c_void,
    pub mean: *const f32,
    pub rstd: *const f32,
    pub ws_dw: *mut f32,
    pub ws_db: *mut f32,
    pub ws_rows: *mut f32,
    pub dw: *mut c_void,
    pub db: *mut c_void,
    pub m: i64,
    pub n: i64,
    pub x_stride: i64,
    pub dy_stride: i64,
    pub dx_stride: i64,
    pub dres_stride: i64,
    pub ws_stride: i64,
    pub w_offset: f32,
    pub flags: u32,
    pub nseg: u32,
    pub grid_rows: u32,
    pub seg_len: i64,
}
const _: () = assert!(std::mem::size_of::<BwdParams>() == 176);

/// All-null arguments, filled in field by field by the launcher.
pub fn fwd_zeroed() -> FwdParams {
    let null = std::ptr::null_mut::<c_void>();
    FwdParams {
        x: null,
        y: null,
        res: null,
        res_out: null,
        w: null,
        b: null,
        mean: std::ptr::null_mut(),
        rstd: std::ptr::null_mut(),
        ws: std::ptr::null_mut(),
        m: 0,
        n: 0,
        x_stride: 0,
        y_stride: 0,
        r_stride: 0,
        ro_stride: 0,
        eps: 0.0,
        w_offset: 0.0,
        flags: 0,
        nseg: 0,
        grid_rows: 0,
        pad0: 0,
        seg_len: 0,
    }
}

pub fn bwd_zeroed() -> BwdParams {
    let null = std::ptr::null_mut::<c_void>();
    BwdParams {
        x: null,
        dy: null,
        dx: null,
        dres: null,
        w: null,
        mean: std::ptr::null(),
        rstd: std::ptr::null(),
        ws_dw: std::ptr::null_mut(),
        ws_db: std::ptr::null_mut(),
        ws_rows: std::ptr::null_mut(),
        dw: null,
        db: null,
        m: 0,
        n: 0,
        x_stride: 0,
        dy_stride: 0,
        dx_stride: 0,
        dres_stride: 0,
        ws_stride: 0,
        w_offset: 0.0,
        flags: 0,
        nseg: 0,
        grid_rows: 0,
        seg_len: 0,
    }
}
