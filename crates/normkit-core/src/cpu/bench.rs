//! [`BenchBackend`] for the CPU: machine description, a parallel memcpy ceiling, wall-clock timing.

use std::time::Instant;

use rayon::prelude::*;

use super::CpuBackend;
use crate::{BenchBackend, DeviceInfo, Result};

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `model name` from /proc/cpuinfo, or `"cpu"` when it cannot be read.
pub(super) fn cpu_model() -> String {
    read("/proc/cpuinfo")
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "cpu".into())
}

/// `cpu MHz` of the first processor in /proc/cpuinfo.
fn cpu_mhz() -> Option<f64> {
    read("/proc/cpuinfo")
        .lines()
        .find_map(|l| l.strip_prefix("cpu MHz").and_then(|r| r.split_once(':')).and_then(|(_, v)| v.trim().parse().ok()))
}

/// `MemTotal` from /proc/meminfo in bytes, 0 when unknown.
fn ram_bytes() -> u64 {
    read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Parses a sysfs cache size such as `"32768K"` or `"16M"`.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|v| v * mult)
}

/// Size of the highest-level cache of cpu0 (sysfs), 0 when unknown.
fn llc_bytes() -> u64 {
    (0..8)
        .filter_map(|i| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let level = read(&format!("{dir}/level")).trim().parse::<u32>().ok()?;
            Some((level, parse_size(&read(&format!("{dir}/size")))?))
        })
        .max_by_key(|&(level, _)| level)
        .map_or(0, |(_, size)| size)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

impl BenchBackend for CpuBackend {
    fn device_info(&self) -> DeviceInfo {
        let threads = rayon::current_num_threads();
        DeviceInfo {
            backend: "cpu".into(),
            name: cpu_model(),
            compute_units: std::thread::available_parallelism().map_or(1, |n| n.get()) as u32,
            driver: String::new(),
            clocks: match cpu_mhz() {
                Some(mhz) => format!("{mhz:.0} MHz (cpu0, /proc/cpuinfo); {threads} rayon threads"),
                None => format!("{threads} rayon threads"),
            },
            memory_bytes: ram_bytes(),
            cache_bytes: llc_bytes(),
        }
    }

    /// A memcpy of `bytes` bytes split evenly over the rayon threads; GB/s counts read + write,
    /// median of 5 runs after one warm-up (which also faults the pages in).
    fn copy_gbps(&self, bytes: usize) -> Result<f64> {
        let bytes = bytes.max(1);
        // Fallible: `bytes` comes from the caller (ResourceLimit rather than an abort).
        let limit = crate::host::host_alloc_limit() / 2;
        let mut src: Vec<u8> = crate::host::try_zeroed_vec(bytes, limit)?;
        src.fill(1);
        let mut dst: Vec<u8> = crate::host::try_zeroed_vec(bytes, limit)?;
        let chunk = bytes.div_ceil(rayon::current_num_threads().max(1)).max(4096);
        let mut copy = || {
            let t = Instant::now();
            dst.par_chunks_mut(chunk).zip(src.par_chunks(chunk)).for_each(|(d, s)| d.copy_from_slice(s));
            t.elapsed().as_secs_f64()
        };
        copy();
        let secs = median((0..5).map(|_| copy()).collect());
        Ok(2.0 * bytes as f64 / secs.max(1e-12) / 1e9)
    }

    fn time_calls(&self, calls: usize, reps: usize, f: &mut dyn FnMut(usize) -> Result<()>) -> Result<Vec<f64>> {
        let calls = calls.max(1);
        let mut out = Vec::new();
        out.try_reserve_exact(reps).map_err(|_| crate::NormError::ResourceLimit {
            resource: "host memory (timing results)",
            requested: (reps as u64).saturating_mul(8),
            available: crate::host::host_alloc_limit(),
        })?;
        for _ in 0..reps {
            let t = Instant::now();
            for i in 0..calls {
                f(i)?;
            }
            out.push(t.elapsed().as_secs_f64() / calls as f64);
        }
        Ok(out)
    }
}
