//! The stages after loading on `--threads` threads: items cut into contiguous chunks, one
//! scoped thread per chunk, results joined in item order, so every output is the serial
//! one at every thread count (nothing depends on which thread finishes first).

use std::ops::Range;

use crate::exit::{Error, Result};

/// Test hook: the fewest items a chunk holds, replacing every stage's floor, so tests cut
/// small reports into many chunks and check the output does not depend on the cut.
#[doc(hidden)]
pub const MIN_CHUNK_VAR: &str = "STEPGATE_TEST_MIN_CHUNK";

/// A stage's floor on chunk length, unless the test hook replaces it.
pub(crate) fn min_chunk(min: usize) -> usize {
    static HOOK: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    HOOK.get_or_init(|| {
        std::env::var(MIN_CHUNK_VAR)
            .ok()
            .and_then(|v| v.parse().ok())
    })
    .unwrap_or(min)
}

/// `0..n` cut into at most `parts` contiguous ranges of near-equal length, in order
/// (none for `n == 0`). Chunks of fewer than `min` items are not worth a thread: fewer,
/// longer ranges then.
pub fn ranges(n: usize, parts: usize, min: usize) -> Vec<Range<usize>> {
    let parts = parts.min(n / min.max(1)).max(1).min(n);
    (0..parts)
        .map(|k| (n * k / parts)..(n * (k + 1) / parts))
        .collect()
}

/// The joined result of a scoped thread, a panic made an internal error (the serial run
/// would have panicked: the panic hook's one-line report is the same either way).
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> Result<T> {
    h.join()
        .map_err(|_| Error::internal("a worker thread of the step stages panicked"))
}

/// `f(range)` for each of `ranges` on its own thread (the first on the calling thread),
/// the results in range order. One range runs on the calling thread alone.
pub(crate) fn map_ranges<R: Send>(
    ranges: &[Range<usize>],
    f: impl Fn(Range<usize>) -> R + Sync,
) -> Result<Vec<R>> {
    match ranges {
        [] => Ok(Vec::new()),
        [one] => Ok(vec![f(one.clone())]),
        [first, rest @ ..] => std::thread::scope(|s| {
            let f = &f;
            let handles: Vec<_> = rest
                .iter()
                .map(|r| {
                    let r = r.clone();
                    s.spawn(move || f(r))
                })
                .collect();
            let mut out = Vec::with_capacity(ranges.len());
            out.push(f(first.clone()));
            for h in handles {
                out.push(joined(h)?);
            }
            Ok(out)
        }),
    }
}

/// `f` over `items` in contiguous chunks of at least `min` items on up to `threads`
/// threads, each chunk's results in item order, concatenated in chunk order: the same
/// vector a serial `f(0..n)` makes when `f` maps each item on its own.
pub(crate) fn map_chunks<R: Send>(
    n: usize,
    threads: usize,
    min: usize,
    f: impl Fn(Range<usize>) -> Vec<R> + Sync,
) -> Result<Vec<R>> {
    let parts = map_ranges(&ranges(n, threads, min_chunk(min)), f)?;
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        out.extend(p);
    }
    Ok(out)
}

/// `f` over owned `items` in contiguous chunks of at least `min` items on up to
/// `threads` threads, the results concatenated in chunk order: the vector a serial
/// `f(items)` makes when `f` maps each item on its own (each chunk frees its items as
/// it goes, as the serial loop would).
pub(crate) fn map_vec<T: Send, R: Send>(
    mut items: Vec<T>,
    threads: usize,
    min: usize,
    f: impl Fn(Vec<T>) -> Vec<R> + Sync,
) -> Result<Vec<R>> {
    let rs = ranges(items.len(), threads, min_chunk(min));
    if rs.len() <= 1 {
        return Ok(f(items));
    }
    // Cut from the back, so each cut moves only the items after it.
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(rs.len());
    for r in rs.iter().rev() {
        chunks.push(items.split_off(r.start));
    }
    chunks.reverse();
    std::thread::scope(|s| {
        let f = &f;
        let mut it = chunks.into_iter();
        let first = it.next();
        let handles: Vec<_> = it.map(|c| s.spawn(move || f(c))).collect();
        let mut out = first.map(f).unwrap_or_default();
        for h in handles {
            out.extend(joined(h)?);
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_tile_the_items_in_order() {
        for n in [0usize, 1, 2, 7, 100, 1001] {
            for parts in [1usize, 2, 3, 8, 2000] {
                for min in [1usize, 16] {
                    let rs = ranges(n, parts, min);
                    let flat: Vec<usize> = rs.iter().cloned().flatten().collect();
                    assert_eq!(flat, (0..n).collect::<Vec<_>>(), "{n} {parts} {min}");
                    assert!(rs.len() <= parts.max(1));
                    if rs.len() > 1 {
                        assert!(rs.iter().all(|r| r.len() >= min), "{rs:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn chunked_maps_are_the_serial_map() {
        let items: Vec<u64> = (0..1000).map(|i| i * 7919 % 1013).collect();
        let serial: Vec<u64> = items.iter().map(|x| x * x).collect();
        for threads in [1, 2, 3, 8] {
            let got = map_chunks(items.len(), threads, 1, |r| {
                items[r].iter().map(|x| x * x).collect()
            })
            .unwrap();
            assert_eq!(got, serial, "{threads} threads");
            let got = map_vec(items.clone(), threads, 1, |c| {
                c.iter().map(|x| x * x).collect()
            })
            .unwrap();
            assert_eq!(got, serial, "{threads} threads, owned");
        }
    }
}
