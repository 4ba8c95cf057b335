//! Launch configuration per target, as data.
//!
//! **Nothing here has been measured**: no AMD GPU was available when these kernels were written.
//! Each threshold says what it is derived from (register file, LDS, the compile-time capacity of
//! the kernels, the VGPR counts clang-22 reports); replace the reasoning with measurements when
//! the kernels first run on MI300X / MI355X.

use normkit_core::DType;

/// Chunks (16 bytes of x each) per thread on the forward row path; `FWD_CHUNKS` in
/// kernels-hip/normkit.hip.
pub const FWD_CHUNKS: usize = 4;
/// Elements per thread on the backward row path; `BWD_ELEMS` in kernels-hip/normkit.hip.
pub const BWD_ELEMS: usize = 8;
/// The kernels' workgroup-size range (`amdgpu_flat_work_group_size(64, 1024)`).
pub const MIN_THREADS: u32 = 64;
pub const MAX_THREADS: u32 = 1024;

/// Elements per chunk: 16 bytes of x (8 for f16/bf16, 4 for f32).
pub const fn chunk_width(x: DType) -> usize {
    16 / x.size_bytes()
}

/// VGPR budget per kernel family (allocated VGPRs, AGPRs included), checked for every kernel of
/// every code object by tests/isa.rs. The budget is the occupancy each kernel is designed for:
/// a CDNA3 SIMD has 512 VGPRs per lane, so waves per SIMD = 512 / VGPRs (at most 8).
/// - row kernels run workgroups of up to 1024 threads = 16 waves = 4 per SIMD: <= 128 is a hard
///   limit (above it a 1024-thread workgroup cannot launch); the backward row path is kept at 96
///   (5 waves per SIMD) because its persistent grid is sized from that occupancy.
/// - split-row statistics / sums kernels are lean streaming reductions: 64 (8 waves per SIMD).
/// - split-row apply kernels: 96 (5 waves per SIMD).
/// - finalize: 32.
/// Values seen with clang-22 -O3 on gfx942 when this was written: fwd_row 71-111, fwd_split_stats
/// 44-63, fwd_split_apply 60-89, bwd_row 89-92, bwd_split_sums 44-54, bwd_split_apply 69-81,
/// finalize 16.
pub const VGPR_BUDGET: &[(&str, u32)] = &[
    ("nk_fwd_row_", 128),
    ("nk_fwd_split_stats_", 64),
    ("nk_fwd_split_apply_", 96),
    ("nk_bwd_row_", 96),
    ("nk_bwd_split_sums_", 64),
    ("nk_bwd_split_apply_", 96),
    ("nk_bwd_finalize_", 32),
];

/// The budget of a kernel, by name prefix.
pub fn vgpr_budget(kernel: &str) -> Option<u32> {
    VGPR_BUDGET.iter().find(|(p, _)| kernel.starts_with(p)).map(|&(_, b)| b)
}

/// How one target is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub arch: &'static str,
    /// Wavefront size the code object is built for; the device must report the same.
    pub wavefront: u32,
    /// LDS per workgroup, bytes. The kernels use at most 128 bytes (cross-wave partial sums), so
    /// LDS never limits occupancy; recorded for the split decision's documentation.
    pub lds_bytes: u32,
    /// Largest workgroup of the row paths. The forward row path holds rows of up to
    /// `fwd_row_threads * FWD_CHUNKS * chunk_width` elements (32768 f16/bf16, 16384 f32 at 1024);
    /// longer rows take the split-row path. 1024 is the kernels' compile-time maximum; there are
    /// no thread-block clusters on CDNA, so a longer row cannot stay on one CU's registers.
    pub fwd_row_threads: u32,
    /// Same for the backward row path (8192 elements at 1024 threads).
    pub bwd_row_threads: u32,
    /// Workgroup size of the split-row kernels; a segment is `split_threads * chunks * width`
    /// elements (forward 8192 f16/bf16 or 4096 f32, backward 2048). 256 = 4 waves: one per SIMD.
    pub split_threads: u32,
    /// Resident waves per CU the persistent backward grid aims for: 4 SIMDs x 5 waves, the
    /// occupancy the bwd VGPR budget (96) allows.
    pub bwd_waves_per_cu: u32,
    /// Workgroup size of the finalize kernel (4 columns per thread).
    pub finalize_threads: u32,
}

impl LaunchConfig {
    /// MI300X / MI300A / MI325X: 304 CUs (MI300X), 64 KiB LDS per workgroup, 512 VGPRs per SIMD
    /// lane, 5.3 TB/s HBM3. Thresholds derived from the register file and the kernels' capacity;
    /// not measured.
    pub const fn for_gfx942() -> Self {
        LaunchConfig {
            arch: "gfx942",
            wavefront: 64,
            lds_bytes: 64 * 1024,
            fwd_row_threads: 1024,
            bwd_row_threads: 1024,
            split_threads: 256,
            bwd_waves_per_cu: 20,
            finalize_threads: 256,
        }
    }

    /// MI350X / MI355X: 256 CUs, 160 KiB LDS, the same 512-VGPR SIMDs as gfx942, 8 TB/s HBM3E.
    /// Same thresholds as gfx942 until measured: the limits they come from (VGPRs, wave64,
    /// 1024-thread workgroups) are unchanged; only the bandwidth per CU is higher, which may favour
    /// more waves per CU (smaller row workgroups) once it can be measured.
    pub const fn for_gfx950() -> Self {
        LaunchConfig { arch: "gfx950", lds_bytes: 160 * 1024, ..Self::for_gfx942() }
    }

    /// MI200 (gfx90a): 110 CUs, 64 KiB LDS; same derivation, not measured.
    pub const fn for_gfx90a() -> Self {
        LaunchConfig { arch: "gfx90a", ..Self::for_gfx942() }
    }

    pub fn for_arch(arch: &str) -> Option<Self> {
        match arch {
            "gfx942" => Some(Self::for_gfx942()),
            "gfx950" => Some(Self::for_gfx950()),
            "gfx90a" => Some(Self::for_gfx90a()),
            _ => None,
        }
    }

    /// The forward path for hidden size `n` and input dtype `x`: chosen from `n` and the dtype
    /// only, never from `M` (batch invariance).
    pub fn fwd_path(&self, n: usize, x: DType) -> Path {
        let per_thread = FWD_CHUNKS * chunk_width(x);
        path(n, per_thread, self.fwd_row_threads, self.split_threads)
    }

    /// The backward path for hidden size `n` (8 elements per thread whatever the dtype).
    pub fn bwd_path(&self, n: usize, _x: DType) -> Path {
        path(n, BWD_ELEMS, self.bwd_row_threads, self.split_threads)
    }

    /// Persistent backward workgroups per CU for workgroups of `threads`.
    pub fn bwd_blocks_per_cu(&self, threads: u32) -> u32 {
        (self.bwd_waves_per_cu / (threads / self.wavefront).max(1)).max(1)
    }
}

/// Row path (one workgroup holds a row) or split-row path (a row is cut into `nseg` segments of
/// `seg_len` elements, reduced by separate workgroups, combined in a fixed order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Row { threads: u32 },
    Split { threads: u32, seg_len: usize, nseg: usize },
}

fn path(n: usize, per_thread: usize, row_threads: u32, split_threads: u32) -> Path {
    let threads_needed = n.div_ceil(per_thread);
    if threads_needed <= row_threads as usize {
        let t = threads_needed.div_ceil(MIN_THREADS as usize) * MIN_THREADS as usize;
        Path::Row { threads: (t as u32).clamp(MIN_THREADS, MAX_THREADS) }
    } else {
        let seg_len = split_threads as usize * per_thread;
        Path::Split { threads: split_threads, seg_len, nseg: n.div_ceil(seg_len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let c = LaunchConfig::for_gfx942();
        assert_eq!(c.fwd_path(4096, DType::BF16), Path::Row { threads: 128 });
        assert_eq!(c.fwd_path(1, DType::BF16), Path::Row { threads: 64 });
        assert_eq!(c.fwd_path(32768, DType::BF16), Path::Row { threads: 1024 });
        assert_eq!(c.fwd_path(32769, DType::BF16), Path::Split { threads: 256, seg_len: 8192, nseg: 5 });
        assert_eq!(c.fwd_path(16384, DType::F32), Path::Row { threads: 1024 });
        assert_eq!(c.bwd_path(8192, DType::BF16), Path::Row { threads: 1024 });
        assert_eq!(c.bwd_path(65536, DType::BF16), Path::Split { threads: 256, seg_len: 2048, nseg: 32 });
        assert_eq!(c.bwd_blocks_per_cu(1024), 1);
        assert_eq!(c.bwd_blocks_per_cu(64), 20);
    }

    #[test]
    fn every_kernel_has_a_budget() {
        for k in crate::kernels::KERNELS {
            assert!(vgpr_budget(k).is_some(), "{k} has no VGPR budget");
        }
    }
}
