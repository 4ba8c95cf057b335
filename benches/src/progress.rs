//! Progress on stderr: one redrawn line with a bar and an ETA on a terminal, plain lines
//! otherwise (logs, CI).

use crate::grid::Case;
use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Debug)]
pub struct Progress {
    total: usize,
    /// Cases finished before this backend (a report may hold several backends).
    offset: usize,
    start: Instant,
    tty: bool,
    quiet: bool,
}

impl Progress {
    /// `total` cases over every backend of the run.
    pub fn new(total: usize) -> Self {
        Progress { total, offset: 0, start: Instant::now(), tty: std::io::stderr().is_terminal(), quiet: false }
    }

    /// No output at all (tests).
    pub fn quiet() -> Self {
        Progress { quiet: true, ..Progress::new(0) }
    }

    /// Moves on to the next backend, whose cases follow the `done` cases already run.
    pub fn advance(&mut self, done: usize) {
        self.offset += done;
    }

    fn eta(&self, done: usize) -> String {
        if done == 0 {
            return "ETA --".into();
        }
        let per_case = self.start.elapsed().as_secs_f64() / done as f64;
        let left = per_case * self.total.saturating_sub(done) as f64;
        format!("ETA {}", fmt_duration(left))
    }

    /// A case starts (redraws the bar on a terminal).
    pub fn start(&mut self, i: usize, case: &Case) {
        self.start_label(i, &case.label());
    }

    /// A case named `label` starts (the candle peer's cases are not [`Case`]s).
    pub fn start_label(&mut self, i: usize, label: &str) {
        if self.quiet || !self.tty {
            return;
        }
        let done = self.offset + i;
        let width = 24;
        let filled = (done * width).checked_div(self.total).unwrap_or(0).min(width);
        let bar: String = "#".repeat(filled) + &"-".repeat(width - filled);
        eprint!("\r\x1b[2K[{bar}] {}/{} {label}  {}", done + 1, self.total, self.eta(done));
        let _ = std::io::stderr().flush();
    }

    /// A case ended with `outcome` (a line of its own).
    pub fn done(&mut self, i: usize, case: &Case, outcome: &str) {
        self.done_label(i, &case.label(), outcome);
    }

    /// A case named `label` ended with `outcome`.
    pub fn done_label(&mut self, i: usize, label: &str, outcome: &str) {
        if self.quiet {
            return;
        }
        let done = self.offset + i + 1;
        let clear = if self.tty { "\r\x1b[2K" } else { "" };
        eprintln!("{clear}[{done}/{}] {label}: {outcome}  ({})", self.total, self.eta(done));
    }

    /// A line of its own (phase changes, warnings).
    pub fn note(&mut self, msg: &str) {
        if self.quiet {
            return;
        }
        let clear = if self.tty { "\r\x1b[2K" } else { "" };
        eprintln!("{clear}{msg}");
    }

    pub fn finish(&mut self) {
        if !self.quiet && self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}

/// `1m05s`, `42s`.
pub fn fmt_duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}
