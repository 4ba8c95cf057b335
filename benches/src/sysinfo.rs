//! What a report says about the host: date, CPU, OS, tool versions. Best effort: a field that
//! cannot be read is left empty rather than failing the run.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    format_utc(secs)
}

/// Formats seconds since the Unix epoch as an ISO 8601 UTC timestamp.
pub fn format_utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 to a (year, month, day) of the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The host CPU model from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_default()
}

/// Logical cores available to this process.
pub fn cores() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

/// The OS kernel, e.g. `Linux 6.1.0`.
pub fn os() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{} {}", std::env::consts::OS, release.trim()).trim().to_string()
}

/// Physical memory in bytes, from `/proc/meminfo`.
pub fn memory_bytes() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The 1-minute load average from `/proc/loadavg` (other work on the machine skews timings).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The first line printed by `cmd args`, or empty.
pub fn command_line(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_default()
}

/// rustc and git versions, and this tool's, for the report.
pub fn versions() -> Vec<(String, String)> {
    let mut v = vec![("normkit-bench".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    let rustc = command_line("rustc", &["--version"]);
    if !rustc.is_empty() {
        v.push(("rustc".into(), rustc.trim_start_matches("rustc ").to_string()));
    }
    // The commit the binary was built from (benches/build.rs); a build outside a git checkout
    // falls back to the folder it runs in.
    let built = env!("NORMKIT_BUILD_GIT");
    if !built.is_empty() {
        v.push(("git".into(), built.to_string()));
    } else {
        let git = command_line("git", &["rev-parse", "--short=12", "HEAD"]);
        if !git.is_empty() {
            let dirty = !command_line("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
            v.push(("git".into(), if dirty { format!("{git} (with local changes, of the folder it ran in)") } else { git }));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_utc_dates() {
        assert_eq!(super::format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::format_utc(1_795_304_993), "2026-11-21T23:49:53Z");
    }
}
