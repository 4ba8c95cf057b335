//! The filling, field by field, on fake device buffers (an address and a length, no memory).

use normkit_core::{
    validate_backward, validate_forward, Backward, Buffer, CastingMode, DType, Forward, InOut, Layout, MatMut, MatRef, NormDesc, VecMut,
    VecRef,
};

use crate::params::*;
use crate::{bwd_params, fwd_params, BwdInfo, DeviceBuffer, FwdInfo};

/// Device memory that is never touched: an address, a dtype and a length.
#[derive(Debug)]
struct Dev {
    ptr: u64,
    dtype: DType,
    len: usize,
}

fn dev(ptr: u64, dtype: DType, len: usize) -> Dev {
    Dev { ptr, dtype, len }
}

impl Buffer for Dev {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn base_addr(&self) -> Option<u64> {
        Some(self.ptr)
    }
}

impl DeviceBuffer for Dev {
    fn device_addr(&self) -> u64 {
        self.ptr
    }
}

#[test]
fn addresses_count_elements_of_the_buffers_dtype() {
    assert_eq!(dev(0x1000, DType::BF16, 8).addr(3), 0x1006);
    assert_eq!(dev(0x1000, DType::F32, 8).addr(3), 0x100c);
    assert_eq!(dev(0x1000, DType::F16, 8).addr(0), 0x1000);
}

#[test]
fn a_full_forward_call_fills_every_operand_field() {
    let (m, n) = (3, 16);
    let x = dev(0x1000, DType::BF16, 100);
    let mut y = dev(0x10000, DType::F32, m * n);
    let r = dev(0x20000, DType::BF16, m * n);
    let mut r_out = dev(0x30000, DType::BF16, m * n + 2);
    let w = dev(0x40000, DType::BF16, n);
    let b = dev(0x50000, DType::BF16, n);
    let mut mean = dev(0x60000, DType::F32, m);
    let mut rstd = dev(0x70000, DType::F32, m + 1);
    let desc = NormDesc::layer(1e-5).with_weight_offset(1.0).with_residual(true).with_save_stats(true).with_casting(CastingMode::Llama);
    let a = Forward::new(InOut::separate(MatRef::with_layout(&x, Layout::strided(m, n, 24).with_offset(8)), MatMut::new(&mut y, m, n)))
        .residual(InOut::separate(MatRef::new(&r, m, n), MatMut::with_layout(&mut r_out, Layout::contiguous(m, n).with_offset(2))))
        .weight(VecRef::new(&w))
        .bias(VecRef::new(&b))
        .mean(VecMut::new(&mut mean))
        .rstd(VecMut::with_span(&mut rstd, 1, m));
    let plan = validate_forward(&desc, &a).unwrap();
    let (p, info) = fwd_params(&desc, &a, &plan);
    assert_eq!(
        (p.x, p.y, p.r, p.r_out, p.w, p.b, p.mean, p.rstd, p.ws),
        (0x1010, 0x10000, 0x20000, 0x30004, 0x40000, 0x50000, 0x60000, 0x70004, 0)
    );
    assert_eq!((p.m, p.n, p.sx, p.sy, p.sr, p.sro, p.nsplit), (3, 16, 24, 16, 16, 16, 0));
    assert_eq!((p.eps, p.offset), (1e-5, 1.0));
    assert_eq!((p.dt_x, p.dt_y, p.dt_r, p.dt_w), (DT_BF16, DT_F32, DT_BF16, DT_BF16));
    assert_eq!(p.flags, F_LN | F_WEIGHT | F_BIAS | F_RESIDUAL | F_STATS);
    assert_eq!(p.casting, CAST_LLAMA);
    assert_eq!((p.group, p.rpc, p.slot, p.lag), (0, 0, 0, 0));
    assert_eq!(
        info,
        FwdInfo {
            m,
            n,
            dtypes: plan.dtypes,
            ln: true,
            gemma: false,
            residual: true,
            weight: true,
            bias: true,
            // residual_out starts 4 bytes into its buffer.
            aligned: false,
            fp8: None
        }
    );
}

#[test]
fn an_in_place_forward_without_optional_operands_leaves_them_zero() {
    let (m, n) = (2, 8);
    let mut x = dev(0x1000, DType::F16, m * n);
    let desc = NormDesc::rms(1e-6).without_weight();
    let a = Forward::new(InOut::in_place(MatMut::new(&mut x, m, n)));
    let plan = validate_forward(&desc, &a).unwrap();
    let (p, info) = fwd_params(&desc, &a, &plan);
    assert_eq!((p.x, p.y), (0x1000, 0x1000));
    assert_eq!((p.r, p.r_out, p.w, p.b, p.mean, p.rstd, p.sr, p.sro), (0, 0, 0, 0, 0, 0, 0, 0));
    assert_eq!((p.sx, p.sy, p.offset, p.flags, p.casting), (8, 8, 0.0, 0, CAST_GEMMA));
    // With no residual, dt_r is x's code (the plan's residual dtype), and with no weight f32's.
    assert_eq!((p.dt_x, p.dt_y, p.dt_r, p.dt_w), (DT_F16, DT_F16, DT_F16, DT_F32));
    assert_eq!(
        info,
        FwdInfo {
            m,
            n,
            dtypes: plan.dtypes,
            ln: false,
            gemma: true,
            residual: false,
            weight: false,
            bias: false,
            aligned: true,
            fp8: None
        }
    );
}

#[test]
fn a_full_backward_call_fills_every_operand_field() {
    let (m, n) = (4, 32);
    let x = dev(0x1000, DType::BF16, m * n);
    let dy = dev(0x10000, DType::F32, m * 40);
    let mut dx = dev(0x20000, DType::F32, m * n);
    let dres = dev(0x30000, DType::F32, m * n);
    let w = dev(0x40000, DType::F32, n + 1);
    let mean = dev(0x50000, DType::F32, m);
    let rstd = dev(0x60000, DType::F32, m);
    let mut dw = dev(0x70000, DType::F32, n);
    let mut db = dev(0x80000, DType::F32, n);
    let desc = NormDesc::layer(1e-5).with_residual(true).with_weight_offset(0.5);
    let a = Backward::new(
        MatRef::new(&x, m, n),
        InOut::separate(MatRef::with_layout(&dy, Layout::strided(m, n, 40)), MatMut::new(&mut dx, m, n)),
        VecRef::new(&rstd),
    )
    .d_residual_out(MatRef::new(&dres, m, n))
    .weight(VecRef::with_span(&w, 1, n))
    .mean(VecRef::new(&mean))
    .dw(VecMut::new(&mut dw))
    .db(VecMut::new(&mut db));
    let plan = validate_backward(&desc, &a).unwrap();
    let (p, info) = bwd_params(&desc, &a, &plan);
    assert_eq!(
        (p.x, p.dy, p.dx, p.dres, p.w, p.mean, p.rstd, p.dw, p.db),
        (0x1000, 0x10000, 0x20000, 0x30000, 0x40004, 0x50000, 0x60000, 0x70000, 0x80000)
    );
    assert_eq!((p.ws_stats, p.ws_dw, p.ws_db, p.nsplit, p.nparts), (0, 0, 0, 0, 0));
    assert_eq!((p.m, p.n, p.sx, p.sdy, p.sdx, p.sdres), (4, 32, 32, 40, 32, 32));
    assert_eq!(p.offset, 0.5);
    assert_eq!((p.dt_x, p.dt_y, p.dt_w), (DT_BF16, DT_F32, DT_F32));
    assert_eq!(p.flags, F_LN | F_RESIDUAL | F_WEIGHT | F_BIAS);
    assert_eq!((p.group, p.rpc, p.slot), (0, 0, 0));
    let want = BwdInfo {
        m,
        n,
        dtypes: plan.dtypes,
        ln: true,
        d_residual: true,
        weight: true,
        dw: true,
        db: true,
        aligned: false, /* w + 4 bytes */
        in_place: false,
    };
    assert_eq!(info, want);
    assert_eq!(info.nacc(), 2);
}

#[test]
fn an_in_place_backward_without_weight_leaves_the_optional_fields_zero() {
    let (m, n) = (2, 24);
    let x = dev(0x1000, DType::BF16, m * n);
    let mut dy = dev(0x10000, DType::BF16, m * n);
    let rstd = dev(0x20000, DType::F32, m);
    let desc = NormDesc::rms(1e-6).without_weight();
    let a = Backward::new(MatRef::new(&x, m, n), InOut::in_place(MatMut::new(&mut dy, m, n)), VecRef::new(&rstd));
    let plan = validate_backward(&desc, &a).unwrap();
    let (p, info) = bwd_params(&desc, &a, &plan);
    assert_eq!((p.dy, p.dx, p.sdy, p.sdx), (0x10000, 0x10000, 24, 24));
    assert_eq!((p.dres, p.w, p.mean, p.dw, p.db, p.sdres, p.flags, p.offset), (0, 0, 0, 0, 0, 0, 0, 0.0));
    assert_eq!((p.dt_x, p.dt_y, p.dt_w), (DT_BF16, DT_BF16, DT_F32));
    assert_eq!(
        info,
        BwdInfo {
            m,
            n,
            dtypes: plan.dtypes,
            ln: false,
            d_residual: false,
            weight: false,
            dw: false,
            db: false,
            aligned: true,
            in_place: true
        }
    );
    assert_eq!(info.nacc(), 0);
}

/// The FP8 tile pitch: whole 8-byte chunks per row, and the 4-byte reads of `q_write_t` (items
/// along the rows first: lane i reads row 4·(i mod TM/4) + k, word i div (TM/4)) fall in 32
/// distinct banks of 4 bytes for every 32 lanes.
#[test]
fn fp8_tile_pitch_is_conflict_free() {
    for n in [1, 7, 8, 9, 64, 100, 1000, 1024, 2048, 4095, 4096, 4097, 8192] {
        for tm in [8u32, 16, 32] {
            let pitch = crate::fp8_tile_pitch(n, tm);
            assert!(pitch >= n.div_ceil(8) * 8 && pitch.is_multiple_of(4) && pitch < n.div_ceil(8) * 8 + 32, "n={n} tm={tm}: {pitch}");
            let nrb = tm as usize / 4;
            for k in 0..4 {
                let banks: std::collections::BTreeSet<usize> = (0..32).map(|i| ((4 * (i % nrb) + k) * pitch / 4 + i / nrb) % 32).collect();
                assert_eq!(banks.len(), 32, "n={n} tm={tm} k={k}: pitch {pitch}");
            }
        }
    }
}
