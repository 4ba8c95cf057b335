//! Row-parallel helpers for the big cases of `Grid::full()` (generating and checking 268M
//! elements on one thread would take minutes). Plain `std::thread::scope`; results come back in
//! row order so everything stays deterministic.

use std::ops::Range;

/// Splits `0..rows` into contiguous chunks and runs `f` on each, in parallel when the work
/// (`rows × cols`) is large. Returns the results in row order.
pub fn map_chunks<T: Send>(rows: usize, cols: usize, f: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    let parts = workers(rows, cols);
    if parts <= 1 {
        return vec![f(0..rows)];
    }
    let per = rows.div_ceil(parts);
    let ranges: Vec<Range<usize>> = (0..parts).map(|p| (p * per).min(rows)..((p + 1) * per).min(rows)).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = ranges.into_iter().map(|r| s.spawn(|| f(r))).collect();
        handles.into_iter().map(|h| h.join().expect("a checker thread panicked")).collect()
    })
}

/// How many workers `rows × cols` elements of work deserve: one per 2¹⁸ elements, at most one per
/// core and one per row.
pub fn workers(rows: usize, cols: usize) -> usize {
    const MIN_ELEMS_PER_THREAD: usize = 1 << 18;
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let work = rows.saturating_mul(cols.max(1));
    (work / MIN_ELEMS_PER_THREAD).clamp(1, threads).min(rows.max(1))
}
