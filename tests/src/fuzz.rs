//! Random calls through the public API: the case generator and runner shared by the
//! property-based test `tests/tests/fuzz_api.rs` (seeded, time-boxed) and the `cargo fuzz` target
//! `fuzz/fuzz_targets/api.rs` (libFuzzer bytes).
//!
//! A case is decoded from bytes ([`FuzzCase::decode`]; the test makes the bytes from a seed). It
//! picks a descriptor (RMSNorm/LayerNorm, fused add, weight offset, bias, saved statistics, casting
//! mode, eps including tiny, huge, zero, negative, NaN), dtypes per operand (invalid combinations
//! included), shapes (`M` from 0, `N` from 0, odd and large-ish), strides and offsets per operand,
//! in-place views (the only overlap the safe API allows), then a few deliberate contract
//! violations (a stride below the row length, a buffer one element short, a shape off by one, a
//! missing or unexpected operand, a view that overflows the address space), an absurd `alloc`, and
//! data with NaN/Inf/denormal/huge values, rows of zeros and constant rows.
//!
//! [`run_case`] makes the call through [`NormKernel`] with every output poisoned and asserts:
//! - no panic (the caller wraps it in `catch_unwind`; the runner itself never panics on purpose);
//! - `alloc` of any size is a buffer or `ResourceLimit`;
//! - a call that breaks a rule of the contract returns an error, a call that keeps every rule
//!   succeeds (or is `Unsupported` by the backend's own `supports`);
//! - on error, every output buffer is bitwise untouched; on success, nothing outside the output
//!   views changed and no input changed;
//! - on success, every element whose exact value the f64 oracle can bound is within the suite's
//!   tolerance ([`crate::iv`]); rows with a NaN/Inf input must come out non-finite (row-local
//!   propagation); rows whose fp32 statistics overflow or underflow (outside what any fp32 kernel
//!   can compute accurately) are only required not to crash.

use crate::data::{bits_at, buf_of_bits, gap_bits, place_mat, place_vec, poison_bits};
use crate::oracle::{self, BwdConsts, ColSums, FwdConsts};
use crate::rng::Rng;
use normkit_core::{
    round_to, Backward, Buffer, CastingMode, DType, Forward, HostBuf, InOut, Layout, MatMut, MatRef, NormDesc, NormError, NormKernel,
    NormKind, Span, VecMut, VecRef,
};

/// Reads choices from fuzz bytes; past the end every read is 0 (the first choice), so any byte
/// string is a valid case.
#[derive(Debug, Clone)]
pub struct Src<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Src<'a> {
    /// A reader over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Src { bytes, pos: 0 }
    }
    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    /// The next 8 bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |a, i| a | (self.u8() as u64) << (8 * i))
    }
    /// A value in `0..n` (`n ≥ 1`).
    pub fn below(&mut self, n: usize) -> usize {
        (u16::from_le_bytes([self.u8(), self.u8()]) as usize) % n.max(1)
    }
    /// True with probability about `p256 / 256`.
    pub fn chance(&mut self, p256: u8) -> bool {
        self.u8() < p256
    }
    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A 2-D operand: its layout, its buffer length and dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatSpec {
    pub layout: Layout,
    pub len: usize,
    pub dtype: DType,
}

/// A vector operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VecSpec {
    pub span: Span,
    pub len: usize,
    pub dtype: DType,
}

/// What fills a row of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowData {
    /// Normal samples at a scale (1, 1e-3, 1e3).
    Normal,
    /// All zeros (padding).
    Zeros,
    /// One value repeated.
    Constant,
    /// Mostly normal with a NaN or ±Inf somewhere.
    NonFinite,
    /// Denormals of the dtype.
    Denormal,
    /// Values near the largest finite value of the dtype.
    Huge,
}

/// One decoded case. Forward: `mats` = x, y, residual, residual_out. Backward: `mats` = x (the
/// normalised tensor), dy, dx, d_residual_out. `vecs` = weight, bias, mean, rstd, dw, db. An
/// operand is passed when its `give` flag is set.
#[derive(Debug, Clone)]
pub struct FuzzCase {
    pub backward: bool,
    pub desc: NormDesc,
    pub m: usize,
    pub n: usize,
    pub mats: [MatSpec; 4],
    pub vecs: [VecSpec; 6],
    /// Which of mats (index 0 always) and vecs are passed: `[_, y/dy, residual, residual_out or
    /// d_residual_out]` (y/dy always), then weight, bias, mean, rstd, dw, db.
    pub give_mat: [bool; 4],
    pub give_vec: [bool; 6],
    /// y over x (forward) or dx over dy (backward).
    pub in_place: bool,
    /// residual_out over residual (forward).
    pub residual_in_place: bool,
    /// The rules this case breaks on purpose or by its random choices; empty = a valid call.
    pub broken: Vec<String>,
    /// An `alloc` to try first.
    pub alloc: Option<(DType, usize)>,
    /// Row kinds, per row, of the first input (x) and of the others.
    pub rows: Vec<RowData>,
    /// Whether the backward's statistics are exact (else hostile: 0, inf, NaN, negative).
    pub exact_stats: bool,
    pub data_seed: u64,
}

const MAT_X: usize = 0;
const MAT_Y: usize = 1;
const MAT_R: usize = 2;
const MAT_RO: usize = 3;
const V_W: usize = 0;
const V_B: usize = 1;
const V_MEAN: usize = 2;
const V_RSTD: usize = 3;
const V_DW: usize = 4;
const V_DB: usize = 5;

const MAT_NAMES_F: [&str; 4] = ["x", "y", "residual", "residual_out"];
const MAT_NAMES_B: [&str; 4] = ["x", "dy", "dx", "d_residual_out"];
const VEC_NAMES: [&str; 6] = ["weight", "bias", "mean", "rstd", "dw", "db"];

fn same_or_f32(t: DType, x: DType) -> bool {
    t == x || t == DType::F32
}

impl FuzzCase {
    /// Decodes a case from fuzz bytes (any bytes give a case).
    pub fn decode(bytes: &[u8]) -> FuzzCase {
        let mut s = Src::new(bytes);
        let backward = s.chance(100);
        let layer = s.chance(128);
        let mut desc = if layer { NormDesc::layer(1e-5) } else { NormDesc::rms(1e-6) };
        desc.eps = match s.below(16) {
            0 => 1e-12,
            1 => 1e-30,
            2 => f32::from_bits(1), // the smallest denormal
            3 => 1e30,
            4 => 0.0,
            5 => -1e-5,
            6 => f32::NAN,
            7 => f32::INFINITY,
            8 => f32::from_bits(s.u64() as u32),
            9 => 1e-2,
            _ => [1e-5, 1e-6][s.below(2)],
        };
        desc.weight = match s.below(8) {
            0 | 1 => None,
            2..=4 => Some(normkit_core::WeightSpec { offset: 0.0 }),
            5 => Some(normkit_core::WeightSpec { offset: 1.0 }),
            6 => Some(normkit_core::WeightSpec { offset: s.pick(&[0.5, -1.0, 1e4]) }),
            _ => Some(normkit_core::WeightSpec { offset: s.pick(&[f32::NAN, f32::INFINITY, -0.25]) }),
        };
        desc.bias = s.chance(110);
        desc.residual = s.chance(100);
        desc.casting = s.pick(&CastingMode::ALL);
        desc.save_stats = s.chance(128);

        let m = match s.below(10) {
            0 => 0,
            1 => 1,
            2 => 2,
            3 => 3,
            4 => 7,
            5 => 16,
            6 => 33,
            _ => s.below(65),
        };
        let mut n = match s.below(16) {
            0 => 1,
            1 => 2,
            2 => 3,
            3 => 7,
            4 => 8,
            5 => 31,
            6 => 33,
            7 => 64,
            8 => 255,
            9 => 256,
            10 => 1000,
            11 => 1025,
            12 => 4097,
            13 => 0,
            _ => 1 + s.below(2048),
        };
        // Keep a case small (CI has two cores): at most ~64K elements per operand.
        if m > 0 && n > 65536 / m {
            n = (65536 / m).max(1);
        }

        // Dtypes: mostly a valid combination, sometimes anything.
        let dts = DType::ALL;
        let x = s.pick(&dts);
        let valid_dt = s.chance(200);
        let other = |s: &mut Src<'_>| {
            if valid_dt {
                if s.chance(128) {
                    x
                } else {
                    DType::F32
                }
            } else {
                s.pick(&dts)
            }
        };
        let y = other(&mut s);
        let w = other(&mut s);
        let r = other(&mut s);
        let mat_dt = if backward { [x, y, y, y] } else { [x, y, r, r] };
        let vec_dt = [w, w, DType::F32, DType::F32, w, w];

        let mut mats = [MatSpec { layout: Layout::contiguous(m, n), len: 0, dtype: x }; 4];
        for (k, spec) in mats.iter_mut().enumerate() {
            let pad = match s.below(6) {
                0..=2 => 0,
                3 => 1,
                4 => 3,
                _ => 8 + s.below(60),
            };
            let off = match s.below(5) {
                0..=2 => 0,
                3 => 1,
                _ => s.below(40),
            };
            let l = Layout::strided(m, n, n + pad).with_offset(off);
            let tail = if s.chance(64) { s.below(9) } else { 0 };
            *spec = MatSpec { layout: l, len: l.span().unwrap_or(0) + tail, dtype: mat_dt[k] };
        }
        let vec_len = [n, n, m, m, n, n];
        let mut vecs = [VecSpec { span: Span { offset: 0, len: 0 }, len: 0, dtype: x }; 6];
        for (k, spec) in vecs.iter_mut().enumerate() {
            let off = if s.chance(64) { s.below(20) } else { 0 };
            let tail = if s.chance(64) { s.below(5) } else { 0 };
            *spec = VecSpec { span: Span { offset: off, len: vec_len[k] }, len: off + vec_len[k] + tail, dtype: vec_dt[k] };
        }

        let layer = desc.kind == NormKind::Layer;
        let give_mat =
            if backward { [true, true, true, desc.residual && s.chance(170)] } else { [true, true, desc.residual, desc.residual] };
        let give_vec = if backward {
            [desc.weight.is_some(), false, layer, true, desc.weight.is_some(), desc.bias]
        } else {
            [desc.weight.is_some(), desc.bias, desc.save_stats && layer, desc.save_stats, false, false]
        };
        let in_place =
            s.chance(60) && (backward || mat_dt[MAT_Y] == x) && mats[MAT_Y].dtype == mats[if backward { MAT_Y } else { MAT_X }].dtype;
        let residual_in_place = !backward && desc.residual && s.chance(60);

        let mut c = FuzzCase {
            backward,
            desc,
            m,
            n,
            mats,
            vecs,
            give_mat,
            give_vec,
            in_place,
            residual_in_place,
            broken: Vec::new(),
            alloc: None,
            rows: Vec::new(),
            exact_stats: true,
            data_seed: 0,
        };
        if in_place {
            // One buffer: the output is the input (x for y, dy for dx).
            let src = if backward { MAT_Y } else { MAT_X };
            let dst = if backward { 2 } else { MAT_Y };
            c.mats[dst] = c.mats[src];
        }
        if residual_in_place {
            c.mats[MAT_RO] = c.mats[MAT_R];
        }

        // Deliberate violations.
        for _ in 0..s.below(3) {
            if !s.chance(90) {
                continue;
            }
            c.perturb(&mut s);
        }
        if s.chance(24) {
            let dt = s.pick(&dts);
            let len = s.pick(&[usize::MAX, usize::MAX / 2, usize::MAX / 4 + 1, 1 << 42, 1 << 62, 1 << 40, 1000, 0]);
            c.alloc = Some((dt, len));
        }
        c.rows = (0..m.max(1))
            .map(|_| match s.below(16) {
                0 => RowData::Zeros,
                1 => RowData::Constant,
                2 => RowData::NonFinite,
                3 => RowData::Denormal,
                4 => RowData::Huge,
                _ => RowData::Normal,
            })
            .collect();
        c.exact_stats = !s.chance(20);
        c.data_seed = s.u64();
        // The test's own buffers stay small: a length that a perturbation made huge becomes 16
        // (the view then lies outside its buffer, which `rules` sees).
        for v in c.mats.iter_mut().map(|m| &mut m.len).chain(c.vecs.iter_mut().map(|v| &mut v.len)) {
            if *v > 1 << 22 {
                *v = 16;
            }
        }
        c.rules();
        c
    }

    /// Whether 2-D operand `k` is passed as its own buffer (not replaced by an in-place view).
    fn live(&self, k: usize) -> bool {
        self.give_mat[k]
            && !(!self.backward && self.in_place && k == MAT_Y)
            && !(self.backward && self.in_place && k == 2)
            && !(!self.backward && self.residual_in_place && k == MAT_RO)
    }

    /// Breaks (usually) one rule of the contract on purpose; [`FuzzCase::rules`] then finds what
    /// is broken from the final case.
    fn perturb(&mut self, s: &mut Src<'_>) {
        match s.below(8) {
            // A stride below the row length.
            0 if self.n >= 1 => {
                let k = s.below(4);
                if self.live(k) {
                    self.mats[k].layout.stride = self.n - 1;
                }
            }
            // A buffer one element short.
            1 => {
                let k = s.below(4);
                let need = self.mats[k].layout.span().unwrap_or(0);
                if self.live(k) && need > 0 {
                    self.mats[k].len = need - 1;
                }
            }
            // A shape off by one (not x: x defines M and N).
            2 => {
                let k = 1 + s.below(3);
                if self.live(k) {
                    let l = &mut self.mats[k].layout;
                    if s.chance(128) {
                        l.rows += 1;
                    } else {
                        l.cols += 1;
                        l.stride += 1;
                    }
                    self.mats[k].len = l.span().unwrap_or(0) + 1;
                }
            }
            // A vector too short / too long, or its buffer short.
            3 => {
                let k = s.below(6);
                if self.give_vec[k] {
                    if s.chance(128) {
                        self.vecs[k].span.len += 1;
                        self.vecs[k].len = self.vecs[k].span.offset + self.vecs[k].span.len;
                    } else if self.vecs[k].span.offset + self.vecs[k].span.len > 0 {
                        self.vecs[k].len = self.vecs[k].span.offset + self.vecs[k].span.len - 1;
                    }
                }
            }
            // A missing or unexpected operand.
            4 => {
                let k = if self.backward { [V_W, V_MEAN, V_DW, V_DB][s.below(4)] } else { [V_W, V_B, V_MEAN, V_RSTD][s.below(4)] };
                self.give_vec[k] = !self.give_vec[k];
            }
            5 => {
                if self.backward {
                    self.give_mat[MAT_RO] = !self.give_mat[MAT_RO];
                } else {
                    self.give_mat[MAT_R] = !self.give_mat[MAT_R];
                    self.give_mat[MAT_RO] = self.give_mat[MAT_R];
                    self.residual_in_place = false;
                }
            }
            // A view that overflows the address space.
            6 => {
                let k = s.below(4);
                if self.live(k) && self.m >= 1 && self.n >= 1 {
                    let l = &mut self.mats[k].layout;
                    if s.chance(128) {
                        l.offset = usize::MAX - s.below(4);
                    } else {
                        l.stride = usize::MAX / 2 + 1;
                        if self.m < 3 {
                            l.offset = usize::MAX / 2;
                        }
                    }
                    self.mats[k].len = 16;
                }
            }
            // A statistic of the wrong dtype.
            _ => {
                let k = [V_MEAN, V_RSTD][s.below(2)];
                if self.give_vec[k] {
                    self.vecs[k].dtype = [DType::F16, DType::BF16][s.below(2)];
                }
            }
        }
    }

    /// Adds the rules broken by the random choices (eps, offset, N = 0, dtypes, presence) to
    /// `broken`: the contract as the docs state it, written independently of `validate.rs`.
    fn rules(&mut self) {
        let d = self.desc;
        let mut b = Vec::new();
        if !(d.eps.is_finite() && d.eps > 0.0) {
            b.push(format!("eps {}", d.eps));
        }
        if d.weight.is_some_and(|w| !w.offset.is_finite()) {
            b.push("weight offset not finite".into());
        }
        if self.n == 0 {
            b.push("N = 0".into());
        }
        let layer = d.kind == NormKind::Layer;
        let gv = self.give_vec;
        let x = self.mats[MAT_X].dtype;
        let wdt = if gv[V_W] {
            self.vecs[V_W].dtype
        } else if !self.backward && gv[V_B] {
            self.vecs[V_B].dtype
        } else if self.backward && gv[V_DB] {
            self.vecs[V_DB].dtype
        } else {
            DType::F32
        };
        if self.backward {
            let want = [d.weight.is_some(), false, layer, true, d.weight.is_some(), d.bias];
            for k in [V_W, V_MEAN, V_DW, V_DB] {
                if gv[k] != want[k] {
                    b.push(format!("{} presence", VEC_NAMES[k]));
                }
            }
            if self.give_mat[MAT_RO] && !d.residual {
                b.push("d_residual_out without the fused add".into());
            }
            let gdt = self.mats[MAT_Y].dtype;
            if !same_or_f32(gdt, x) {
                b.push("dy dtype".into());
            }
            if self.mats[2].dtype != gdt {
                b.push("dx dtype".into());
            }
            if self.give_mat[MAT_RO] && self.mats[MAT_RO].dtype != gdt {
                b.push("d_residual_out dtype".into());
            }
            if (d.weight.is_some() || d.bias) && !same_or_f32(wdt, x) {
                b.push("weight dtype".into());
            }
            for k in [V_W, V_DW, V_DB] {
                if gv[k] && self.vecs[k].dtype != wdt {
                    b.push(format!("{} dtype", VEC_NAMES[k]));
                }
            }
        } else {
            let want = [d.weight.is_some(), d.bias, d.save_stats && layer, d.save_stats, false, false];
            for (k, &w) in want.iter().enumerate() {
                if gv[k] != w {
                    b.push(format!("{} presence", VEC_NAMES[k]));
                }
            }
            if self.give_mat[MAT_R] != d.residual {
                b.push("residual presence".into());
            }
            if !same_or_f32(self.mats[MAT_Y].dtype, x) {
                b.push("y dtype".into());
            }
            if (d.weight.is_some() || d.bias) && !same_or_f32(wdt, x) {
                b.push("weight dtype".into());
            }
            for k in [V_W, V_B] {
                if gv[k] && self.vecs[k].dtype != wdt {
                    b.push(format!("{} dtype", VEC_NAMES[k]));
                }
            }
            if d.residual && self.give_mat[MAT_R] {
                let r = self.mats[MAT_R].dtype;
                if !same_or_f32(r, x) {
                    b.push("residual dtype".into());
                }
                if self.mats[MAT_RO].dtype != r {
                    b.push("residual_out dtype".into());
                }
            }
        }
        // Views: every operand passed must have M×N (2-D) or its length (vectors), a stride ≥ N,
        // an extent that does not overflow and fits in its buffer; statistics are f32.
        let names = if self.backward { MAT_NAMES_B } else { MAT_NAMES_F };
        for (k, name) in names.iter().enumerate() {
            if !self.live(k) {
                continue;
            }
            let (l, len) = (self.mats[k].layout, self.mats[k].len);
            if k != MAT_X && (l.rows != self.m || l.cols != self.n) {
                b.push(format!("{} shape", name));
            }
            if l.stride < l.cols {
                b.push(format!("{} stride < N", name));
            }
            let end = if l.rows == 0 || l.cols == 0 {
                Some(l.offset)
            } else {
                (l.rows - 1).checked_mul(l.stride).and_then(|v| v.checked_add(l.cols)).and_then(|v| v.checked_add(l.offset))
            };
            match end {
                None => b.push(format!("{} overflows", name)),
                Some(e) if e > len => b.push(format!("{} out of bounds", name)),
                _ => {}
            }
        }
        let want_len = [self.n, self.n, self.m, self.m, self.n, self.n];
        for k in 0..6 {
            if !gv[k] {
                continue;
            }
            let v = self.vecs[k];
            if v.span.len != want_len[k] {
                b.push(format!("{} length", VEC_NAMES[k]));
            }
            if v.span.offset.checked_add(v.span.len).is_none_or(|e| e > v.len) {
                b.push(format!("{} out of bounds", VEC_NAMES[k]));
            }
            if (k == V_MEAN || k == V_RSTD) && v.dtype != DType::F32 {
                b.push(format!("{} not f32", VEC_NAMES[k]));
            }
        }
        self.broken.extend(b);
    }

    /// Whether the call keeps every rule (so it must succeed).
    pub fn valid(&self) -> bool {
        self.broken.is_empty()
    }
}

impl std::fmt::Display for FuzzCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} M={} N={} eps={:e} weight={:?} bias={} casting={} save_stats={} in_place={} residual_in_place={} mats={:?} vecs={:?} give={:?}/{:?} broken={:?} alloc={:?} rows={:?} exact_stats={}",
            if self.backward { "backward" } else { "forward" },
            self.desc.op_name(self.backward),
            self.m,
            self.n,
            self.desc.eps,
            self.desc.weight.map(|w| w.offset),
            self.desc.bias,
            self.desc.casting.name(),
            self.desc.save_stats,
            self.in_place,
            self.residual_in_place,
            self.mats,
            self.vecs,
            self.give_mat,
            self.give_vec,
            self.broken,
            self.alloc,
            self.rows,
            self.exact_stats
        )
    }
}

/// What a case did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The call succeeded and its values were checked.
    Ok,
    /// The call returned a typed error and left its outputs untouched.
    Rejected,
    /// The backend declined the combination through `supports` / `Unsupported`.
    Unsupported,
}

/// One row of an input, in f32 values representable in `dt`.
fn gen_row(rng: &mut Rng, kind: RowData, n: usize, dt: DType, grad: bool) -> Vec<f32> {
    let max = match dt {
        DType::F16 => 65504.0f32,
        _ => f32::MAX,
    };
    let scale = [1.0, 1e-3, 1e3][rng.below(3) as usize] * if grad { 0.5 } else { 1.0 };
    let mut v: Vec<f32> = (0..n)
        .map(|_| match kind {
            RowData::Zeros => 0.0,
            RowData::Constant => 0.0,
            RowData::Denormal => match dt {
                DType::F16 => (rng.below(1023) as f32 + 1.0) * 5.960_464_5e-8 * if rng.below(2) == 0 { 1.0 } else { -1.0 },
                _ => f32::from_bits(1 + rng.below(0x7F_FFFF) as u32) * if rng.below(2) == 0 { 1.0 } else { -1.0 },
            },
            RowData::Huge => (max * (0.25 + 0.7 * rng.uniform() as f32)) * if rng.below(2) == 0 { 1.0 } else { -1.0 },
            _ => (rng.normal() * scale) as f32,
        })
        .collect();
    if kind == RowData::Constant {
        let c = round_to(dt, (rng.normal() * 3.0) as f32);
        v.iter_mut().for_each(|e| *e = c);
    }
    if kind == RowData::NonFinite && n > 0 {
        let j = rng.below(n as u64) as usize;
        v[j] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][rng.below(3) as usize];
    }
    v.iter().map(|&e| round_to(dt, e)).collect()
}

fn matrix(rng: &mut Rng, rows: &[RowData], m: usize, n: usize, dt: DType, grad: bool) -> Vec<f32> {
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        out.extend(gen_row(rng, rows[i % rows.len()], n, dt, grad));
    }
    out
}

/// A buffer for a view whose layout may be broken: data placed where the layout fits in the
/// buffer, gap sentinels elsewhere.
fn mat_buf(spec: &MatSpec, dense: Option<&[f32]>, fill: u32) -> HostBuf {
    let l = spec.layout;
    let fits = l.stride >= l.cols && l.span().is_some_and(|s| s <= spec.len) && l.rows.checked_mul(l.cols).is_some();
    match dense {
        Some(d) if fits && d.len() == l.rows * l.cols => place_mat(spec.dtype, d, &l, spec.len, fill),
        _ => buf_of_bits(spec.dtype, spec.len, fill),
    }
}

fn vec_buf(spec: &VecSpec, values: Option<&[f32]>, fill: u32) -> HostBuf {
    let fits = spec.span.offset.checked_add(spec.span.len).is_some_and(|e| e <= spec.len);
    match values {
        Some(v) if fits && v.len() == spec.span.len => place_vec(spec.dtype, v, &spec.span, spec.len, fill),
        _ => buf_of_bits(spec.dtype, spec.len, fill),
    }
}

/// The elements of a buffer of `len` covered by a layout (for the "nothing outside the view"
/// check).
fn covered(l: &Layout, len: usize) -> Vec<bool> {
    let mut c = vec![false; len];
    // Saturating: the fuzzer's views may overflow `usize` on purpose (the calls reject them); the
    // part of such a view inside the buffer is still what "outside the view" excludes.
    for i in 0..l.rows {
        let s = l.offset.saturating_add(i.saturating_mul(l.stride));
        for e in c.iter_mut().take(s.saturating_add(l.cols).min(len)).skip(s) {
            *e = true;
        }
    }
    c
}

fn covered_span(s: &Span, len: usize) -> Vec<bool> {
    (0..len).map(|i| i >= s.offset && i < s.offset.saturating_add(s.len)).collect()
}

/// Bitwise comparison of `after` with `before` where `mask` is false (or everywhere without a mask).
fn untouched(what: &str, before: &HostBuf, after: &HostBuf, mask: Option<&[bool]>) -> Result<(), String> {
    if before.dtype() != after.dtype() || before.len() != after.len() {
        return Err(format!("{what}: buffer changed shape"));
    }
    for i in 0..before.len() {
        if mask.is_some_and(|m| m[i]) {
            continue;
        }
        if bits_at(before, i) != bits_at(after, i) {
            return Err(format!("{what}: element {i} changed from bits {:#x} to {:#x}", bits_at(before, i), bits_at(after, i)));
        }
    }
    Ok(())
}

/// The f64 sum of squares and of magnitudes of a row (as the statistics see it).
fn row_in_contract(desc: &NormDesc, h: &[f32]) -> bool {
    if h.iter().any(|v| !v.is_finite()) {
        return false;
    }
    let n = h.len() as f64;
    let mu = if desc.kind == NormKind::Layer { h.iter().map(|&v| v as f64).sum::<f64>() / n } else { 0.0 };
    let max_sq = h.iter().map(|&v| (v as f64 - mu) * (v as f64 - mu)).fold(0.0, f64::max);
    let sum_abs: f64 = h.iter().map(|&v| (v as f64).abs()).sum();
    let ms = h.iter().map(|&v| (v as f64 - mu) * (v as f64 - mu)).sum::<f64>() / n;
    let big = f32::MAX as f64 / 4.0;
    // fp32 statistics finite (no overflow of Σx², Σ|x|, (x − μ)²), and the quantity under the
    // square root comfortably inside the normal range (squares of denormals lose all precision).
    // Denormal inputs (of f32/bf16; f16's are normal in fp32) lose relative precision in every
    // fp32 operation, which the interval model does not cover.
    let normal = h.iter().all(|&v| v == 0.0 || v.abs() >= f32::MIN_POSITIVE);
    normal && sum_abs < big && max_sq * n < big && ms + desc.eps as f64 > 1e-30
}

/// Runs one case on `k`. `Err` is a failure report (the caller adds the case and its seed).
pub fn run_case<K: NormKernel>(k: &K, c: &FuzzCase) -> Result<Outcome, String> {
    if let Some((dt, len)) = c.alloc {
        match k.alloc(dt, len) {
            Ok(b) if b.len() == len && b.dtype() == dt => {}
            Ok(b) => return Err(format!("alloc({dt}, {len}) gave a buffer of {} × {}", b.len(), b.dtype())),
            Err(NormError::ResourceLimit { .. }) => {}
            Err(e) => return Err(format!("alloc({dt}, {len}) failed with {e:?}, expected a buffer or ResourceLimit")),
        }
    }
    if c.backward {
        run_backward(k, c)
    } else {
        run_forward(k, c)
    }
}

fn up<K: NormKernel>(k: &K, h: &HostBuf) -> Result<K::Buffer, String> {
    k.upload(h).map_err(|e| format!("upload of {} × {} failed: {e}", h.len(), h.dtype()))
}

fn dl<K: NormKernel>(k: &K, b: &K::Buffer) -> Result<HostBuf, String> {
    k.download(b).map_err(|e| format!("download failed: {e}"))
}

/// What to do with the call's result: the common part of forward and backward.
fn judge(c: &FuzzCase, r: Result<(), NormError>) -> Result<Option<Outcome>, String> {
    match r {
        Ok(()) if c.valid() => Ok(None),
        Ok(()) => Err(format!("the call succeeded although it breaks {:?}", c.broken)),
        Err(NormError::Unsupported { .. }) if c.valid() => Ok(Some(Outcome::Unsupported)),
        Err(e) if c.valid() => Err(format!("a valid call failed: {e} ({e:?})")),
        Err(_) => Ok(Some(Outcome::Rejected)),
    }
}

/// Checks one output element against its oracle interval, skipping what the oracle cannot bound.
fn check_iv(what: &str, i: usize, j: usize, iv: &crate::iv::Iv, dt: DType, got: f32) -> Result<(), String> {
    if !(iv.lo.is_finite() && iv.hi.is_finite() && iv.mid.is_finite()) {
        return Ok(());
    }
    let v = iv.violation(dt, got as f64);
    if v > 0.0 {
        let (lo, hi) = iv.stored(dt);
        return Err(format!("{what}[{i},{j}] ({dt}): got {got:e}, expected {:e}, allowed [{lo:e}, {hi:e}]", iv.mid));
    }
    Ok(())
}

fn run_forward<K: NormKernel>(k: &K, c: &FuzzCase) -> Result<Outcome, String> {
    let (m, n, d) = (c.m, c.n, c.desc);
    let mut rng = Rng::new(c.data_seed);
    let xs = matrix(&mut rng, &c.rows, m, n, c.mats[MAT_X].dtype, false);
    let rs = matrix(&mut rng, &c.rows[c.rows.len() / 2..], m, n, c.mats[MAT_R].dtype, false);
    let wdt = c.vecs[V_W].dtype;
    let offset = d.weight.map_or(0.0, |w| w.offset);
    let ws: Vec<f32> = (0..n).map(|_| round_to(wdt, (if offset == 0.0 { 1.0 } else { 0.0 } + 0.5 * rng.normal()) as f32)).collect();
    let bs: Vec<f32> = (0..n).map(|_| round_to(c.vecs[V_B].dtype, (0.5 * rng.normal()) as f32)).collect();

    let mat = |i: usize, data: Option<&[f32]>, out: bool| {
        let s = &c.mats[i];
        if out {
            buf_of_bits(s.dtype, s.len, poison_bits(s.dtype))
        } else {
            mat_buf(s, data, gap_bits(s.dtype))
        }
    };
    let h_x = mat(MAT_X, Some(&xs), false);
    let h_y = (!c.in_place).then(|| mat(MAT_Y, None, true));
    let h_r = c.give_mat[MAT_R].then(|| mat(MAT_R, Some(&rs), false));
    let h_ro = (c.give_mat[MAT_RO] && !c.residual_in_place).then(|| mat(MAT_RO, None, true));
    let h_w = c.give_vec[V_W].then(|| vec_buf(&c.vecs[V_W], Some(&ws), gap_bits(wdt)));
    let h_b = c.give_vec[V_B].then(|| vec_buf(&c.vecs[V_B], Some(&bs), gap_bits(c.vecs[V_B].dtype)));
    let stat = |k: usize| c.give_vec[k].then(|| buf_of_bits(c.vecs[k].dtype, c.vecs[k].len, poison_bits(c.vecs[k].dtype)));
    let (h_mean, h_rstd) = (stat(V_MEAN), stat(V_RSTD));

    let mut b_x = up(k, &h_x)?;
    let mut b_y = h_y.as_ref().map(|h| up(k, h)).transpose()?;
    let mut b_r = h_r.as_ref().map(|h| up(k, h)).transpose()?;
    let mut b_ro = h_ro.as_ref().map(|h| up(k, h)).transpose()?;
    let b_w = h_w.as_ref().map(|h| up(k, h)).transpose()?;
    let b_b = h_b.as_ref().map(|h| up(k, h)).transpose()?;
    let mut b_mean = h_mean.as_ref().map(|h| up(k, h)).transpose()?;
    let mut b_rstd = h_rstd.as_ref().map(|h| up(k, h)).transpose()?;

    let (lx, ly, lr, lro) = (c.mats[MAT_X].layout, c.mats[MAT_Y].layout, c.mats[MAT_R].layout, c.mats[MAT_RO].layout);
    let r = {
        let io = match b_y.as_mut() {
            Some(y) => InOut::separate(MatRef::with_layout(&b_x, lx), MatMut::with_layout(y, ly)),
            None => InOut::in_place(MatMut::with_layout(&mut b_x, lx)),
        };
        let mut a = Forward::new(io);
        if let Some(r) = b_r.as_mut() {
            a.residual = Some(match b_ro.as_mut() {
                Some(ro) => InOut::separate(MatRef::with_layout(&*r, lr), MatMut::with_layout(ro, lro)),
                None if c.residual_in_place => InOut::in_place(MatMut::with_layout(r, lr)),
                // residual given without residual_out: pass it in place over a wrong layout? No:
                // the safe API cannot express a missing residual_out; in place it is.
                None => InOut::in_place(MatMut::with_layout(r, lr)),
            });
        }
        let vs = |k: usize| c.vecs[k].span;
        a.weight = b_w.as_ref().map(|b| VecRef::with_span(b, vs(V_W).offset, vs(V_W).len));
        a.bias = b_b.as_ref().map(|b| VecRef::with_span(b, vs(V_B).offset, vs(V_B).len));
        a.mean = b_mean.as_mut().map(|b| VecMut::with_span(b, vs(V_MEAN).offset, vs(V_MEAN).len));
        a.rstd = b_rstd.as_mut().map(|b| VecMut::with_span(b, vs(V_RSTD).offset, vs(V_RSTD).len));
        k.forward(&d, a)
    };
    let verdict = judge(c, r)?;
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;

    // Outputs: untouched on error; outside their views untouched on success.
    let ok = verdict.is_none();
    let y_after = match &b_y {
        Some(b) => dl(k, b)?,
        None => dl(k, &b_x)?,
    };
    let y_before = h_y.as_ref().unwrap_or(&h_x);
    let ly_mask = covered(&ly, y_before.len());
    untouched("y", y_before, &y_after, ok.then_some(&ly_mask[..]))?;
    let ro_after = match (&b_ro, &b_r) {
        (Some(b), _) => Some((dl(k, b)?, h_ro.as_ref().expect("ro"))),
        (None, Some(b)) => Some((dl(k, b)?, h_r.as_ref().expect("r"))),
        _ => None,
    };
    if let Some((after, before)) = &ro_after {
        untouched("residual_out", before, after, ok.then_some(&covered(&lro, before.len())[..]))?;
    }
    let mut stats = [None, None];
    for (si, (b, h, kk)) in [(&b_mean, &h_mean, V_MEAN), (&b_rstd, &h_rstd, V_RSTD)].into_iter().enumerate() {
        if let (Some(b), Some(h)) = (b, h) {
            let after = dl(k, b)?;
            untouched(VEC_NAMES[kk], h, &after, ok.then_some(&covered_span(&c.vecs[kk].span, h.len())[..]))?;
            stats[si] = Some(after.to_f32_vec());
        }
    }
    if b_y.is_some() {
        untouched("x (input)", &h_x, &dl(k, &b_x)?, None)?;
    }
    if let (Some(b), Some(h), true) = (&b_w, &h_w, true) {
        untouched("weight (input)", h, &dl(k, b)?, None)?;
    }
    if let (Some(b), Some(h)) = (&b_b, &h_b) {
        untouched("bias (input)", h, &dl(k, b)?, None)?;
    }
    if let (Some(b), Some(h), Some(_)) = (&b_r, &h_r, &b_ro) {
        untouched("residual (input)", h, &dl(k, b)?, None)?;
    }
    if let Some(o) = verdict {
        return Ok(o);
    }

    // Values against the oracle.
    let consts = FwdConsts {
        desc: &d,
        residual: c.mats[MAT_R].dtype,
        compute: c.mats[MAT_X].dtype,
        weight: c.give_vec[V_W].then_some(&ws[..]),
        bias: c.give_vec[V_B].then_some(&bs[..]),
    };
    let yv = y_after.to_f32_vec();
    let rov = ro_after.as_ref().map(|(a, _)| a.to_f32_vec());
    let ydt = if c.in_place { c.mats[MAT_X].dtype } else { c.mats[MAT_Y].dtype };
    for i in 0..m {
        let xr = &xs[i * n..(i + 1) * n];
        let rr = d.residual.then(|| &rs[i * n..(i + 1) * n]);
        let o = oracle::forward_row(&consts, xr, rr);
        let yrow: Vec<f32> = (0..n).map(|j| yv[ly.offset + i * ly.stride + j]).collect();
        if o.h.iter().any(|v| v.is_nan() || v.is_infinite()) {
            if yrow.iter().all(|v| v.is_finite()) {
                return Err(format!("row {i} has a non-finite input but every y of the row is finite"));
            }
            continue;
        }
        if let Some(rov) = &rov {
            for (j, &want) in o.h.iter().enumerate() {
                let got = rov[lro.offset + i * lro.stride + j];
                if got.to_bits() != want.to_bits() && !(got == 0.0 && want == 0.0) {
                    return Err(format!("residual_out[{i},{j}]: got {got:e}, expected exactly {want:e}"));
                }
            }
        }
        if !row_in_contract(&d, &o.h) {
            continue;
        }
        for (j, iv) in o.y.iter().enumerate() {
            check_iv("y", i, j, iv, ydt, yrow[j])?;
        }
        if let Some(v) = &stats[1] {
            check_iv("rstd", i, 0, &o.rstd, DType::F32, v[c.vecs[V_RSTD].span.offset + i])?;
        }
        if let (Some(v), Some(mu)) = (&stats[0], &o.mean) {
            check_iv("mean", i, 0, mu, DType::F32, v[c.vecs[V_MEAN].span.offset + i])?;
        }
    }
    Ok(Outcome::Ok)
}

fn run_backward<K: NormKernel>(k: &K, c: &FuzzCase) -> Result<Outcome, String> {
    let (m, n, d) = (c.m, c.n, c.desc);
    let mut rng = Rng::new(c.data_seed);
    let xdt = c.mats[MAT_X].dtype;
    let gdt = c.mats[MAT_Y].dtype;
    let xs = matrix(&mut rng, &c.rows, m, n, xdt, false);
    let grows: Vec<RowData> =
        c.rows.iter().rev().map(|&r| if matches!(r, RowData::Huge | RowData::Denormal) { RowData::Normal } else { r }).collect();
    let dys = matrix(&mut rng, &grows, m, n, gdt, true);
    let drs = matrix(&mut rng, &[RowData::Normal], m, n, gdt, true);
    let wdt = c.vecs[V_W].dtype;
    let offset = d.weight.map_or(0.0, |w| w.offset);
    let ws: Vec<f32> = (0..n).map(|_| round_to(wdt, (if offset == 0.0 { 1.0 } else { 0.0 } + 0.5 * rng.normal()) as f32)).collect();
    let mut means = Vec::with_capacity(m);
    let mut rstds = Vec::with_capacity(m);
    for i in 0..m {
        let row = &xs[i * n..(i + 1) * n];
        let (mu, r) = if n > 0 && d.eps.is_finite() && d.eps > 0.0 { oracle::exact_stats(&d, row) } else { (0.0, 1.0) };
        let hostile = !c.exact_stats && rng.below(2) == 0;
        means.push(mu);
        rstds.push(if hostile { [0.0, f32::INFINITY, f32::NAN, -1.0, 1e30][rng.below(5) as usize] } else { r });
    }

    let h_x = mat_buf(&c.mats[MAT_X], Some(&xs), gap_bits(xdt));
    let h_dy = mat_buf(&c.mats[MAT_Y], Some(&dys), gap_bits(gdt));
    let h_dx = (!c.in_place).then(|| buf_of_bits(c.mats[2].dtype, c.mats[2].len, poison_bits(c.mats[2].dtype)));
    let h_dr = c.give_mat[MAT_RO].then(|| mat_buf(&c.mats[MAT_RO], Some(&drs), gap_bits(c.mats[MAT_RO].dtype)));
    let h_w = c.give_vec[V_W].then(|| vec_buf(&c.vecs[V_W], Some(&ws), gap_bits(wdt)));
    let h_mean = c.give_vec[V_MEAN].then(|| vec_buf(&c.vecs[V_MEAN], Some(&means), gap_bits(c.vecs[V_MEAN].dtype)));
    let h_rstd = vec_buf(&c.vecs[V_RSTD], Some(&rstds), gap_bits(c.vecs[V_RSTD].dtype));
    let out = |k: usize| c.give_vec[k].then(|| buf_of_bits(c.vecs[k].dtype, c.vecs[k].len, poison_bits(c.vecs[k].dtype)));
    let (h_dw, h_db) = (out(V_DW), out(V_DB));

    let b_x = up(k, &h_x)?;
    let mut b_dy = up(k, &h_dy)?;
    let mut b_dx = h_dx.as_ref().map(|h| up(k, h)).transpose()?;
    let b_dr = h_dr.as_ref().map(|h| up(k, h)).transpose()?;
    let b_w = h_w.as_ref().map(|h| up(k, h)).transpose()?;
    let b_mean = h_mean.as_ref().map(|h| up(k, h)).transpose()?;
    let b_rstd = up(k, &h_rstd)?;
    let mut b_dw = h_dw.as_ref().map(|h| up(k, h)).transpose()?;
    let mut b_db = h_db.as_ref().map(|h| up(k, h)).transpose()?;

    let (lx, ldy, ldx, ldr) = (c.mats[MAT_X].layout, c.mats[MAT_Y].layout, c.mats[2].layout, c.mats[MAT_RO].layout);
    let vs = |k: usize| c.vecs[k].span;
    let r = {
        let io = match b_dx.as_mut() {
            Some(dx) => InOut::separate(MatRef::with_layout(&b_dy, ldy), MatMut::with_layout(dx, ldx)),
            None => InOut::in_place(MatMut::with_layout(&mut b_dy, ldy)),
        };
        let mut a = Backward::new(MatRef::with_layout(&b_x, lx), io, VecRef::with_span(&b_rstd, vs(V_RSTD).offset, vs(V_RSTD).len));
        a.d_residual_out = b_dr.as_ref().map(|b| MatRef::with_layout(b, ldr));
        a.weight = b_w.as_ref().map(|b| VecRef::with_span(b, vs(V_W).offset, vs(V_W).len));
        a.mean = b_mean.as_ref().map(|b| VecRef::with_span(b, vs(V_MEAN).offset, vs(V_MEAN).len));
        a.dw = b_dw.as_mut().map(|b| VecMut::with_span(b, vs(V_DW).offset, vs(V_DW).len));
        a.db = b_db.as_mut().map(|b| VecMut::with_span(b, vs(V_DB).offset, vs(V_DB).len));
        k.backward(&d, a)
    };
    let verdict = judge(c, r)?;
    k.synchronize().map_err(|e| format!("synchronize failed: {e}"))?;
    let ok = verdict.is_none();
    let (dx_after, dx_before) = match &b_dx {
        Some(b) => (dl(k, b)?, h_dx.as_ref().expect("dx")),
        None => (dl(k, &b_dy)?, &h_dy),
    };
    untouched("dx", dx_before, &dx_after, ok.then_some(&covered(&ldx, dx_before.len())[..]))?;
    let mut sums = [None, None];
    for (si, (b, h, kk)) in [(&b_dw, &h_dw, V_DW), (&b_db, &h_db, V_DB)].into_iter().enumerate() {
        if let (Some(b), Some(h)) = (b, h) {
            let after = dl(k, b)?;
            untouched(VEC_NAMES[kk], h, &after, ok.then_some(&covered_span(&c.vecs[kk].span, h.len())[..]))?;
            sums[si] = Some(after.to_f32_vec());
        }
    }
    untouched("x (input)", &h_x, &dl(k, &b_x)?, None)?;
    untouched("rstd (input)", &h_rstd, &dl(k, &b_rstd)?, None)?;
    if b_dx.is_some() {
        untouched("dy (input)", &h_dy, &dl(k, &b_dy)?, None)?;
    }
    if let Some(o) = verdict {
        return Ok(o);
    }

    let consts = BwdConsts { desc: &d, weight: c.give_vec[V_W].then_some(&ws[..]) };
    let dxv = dx_after.to_f32_vec();
    let mut dw = ColSums::new(n);
    let mut db = ColSums::new(n);
    let mut sums_ok = true;
    for i in 0..m {
        let xr = &xs[i * n..(i + 1) * n];
        let dyr = &dys[i * n..(i + 1) * n];
        let drr = c.give_mat[MAT_RO].then(|| &drs[i * n..(i + 1) * n]);
        let row: Vec<f32> = (0..n).map(|j| dxv[ldx.offset + i * ldx.stride + j]).collect();
        let nonfinite = xr.iter().chain(dyr).chain(drr.unwrap_or(&[])).any(|v| !v.is_finite()) || !rstds[i].is_finite();
        if nonfinite {
            sums_ok = false;
            if row.iter().all(|v| v.is_finite()) && !xr.iter().all(|v| v.is_finite()) {
                return Err(format!("row {i} has a non-finite x but every dx of the row is finite"));
            }
            continue;
        }
        if !(row_in_contract(&d, xr) && rstds[i] > 0.0 && rstds[i] < 1e20) {
            sums_ok = false;
            continue;
        }
        let mean = (d.kind == NormKind::Layer).then_some(means[i]);
        let o = oracle::backward_row(&consts, xr, dyr, drr, mean, rstds[i], Some(&mut dw), Some(&mut db));
        for (j, iv) in o.iter().enumerate() {
            check_iv("dx", i, j, iv, gdt, row[j])?;
        }
    }
    if sums_ok {
        for (si, cs) in [(0, &dw), (1, &db)] {
            if let Some(v) = &sums[si] {
                let span = c.vecs[[V_DW, V_DB][si]].span;
                for (j, iv) in cs.finish().iter().enumerate() {
                    check_iv(["dw", "db"][si], 0, j, iv, c.vecs[V_DW].dtype, v[span.offset + j])?;
                }
            }
        }
    }
    Ok(Outcome::Ok)
}

/// The bytes of a case made from `seed` (the property test's generator: random bytes, decoded by
/// the same [`FuzzCase::decode`] the libFuzzer target uses).
pub fn bytes_from_seed(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    (0..160).map(|_| r.next_u64() as u8).collect()
}

/// Decodes `bytes` and runs the case on `k` inside `catch_unwind`: `Err` with a report (the case
/// printed in full) on a panic or a failed property.
pub fn fuzz_one<K: NormKernel>(k: &K, bytes: &[u8]) -> Result<Outcome, String> {
    let c = FuzzCase::decode(bytes);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(k, &c))) {
        Ok(Ok(o)) => Ok(o),
        Ok(Err(e)) => Err(format!("{e}\n    case: {c}")),
        Err(p) => {
            let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default();
            Err(format!("PANIC: {msg}\n    case: {c}"))
        }
    }
}
