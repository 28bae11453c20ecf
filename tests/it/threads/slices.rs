//! Reading in slices and byte ranges: generated reports at any slice size, damaged gzip, and Kineto traces cut at every range.

use super::*;

/// The whole trace must be the same: every column of ops, calls and ranges in the same
/// row order, the same name ids, devices, counters and warnings.
fn assert_same(one: &Trace, many: &Trace, what: &str) {
    assert!(one.ops.equals_missing(&many.ops), "{what}: ops");
    assert!(one.calls.equals_missing(&many.calls), "{what}: calls");
    assert!(one.ranges.equals_missing(&many.ranges), "{what}: ranges");
    assert!(one.shapes.equals_missing(&many.shapes), "{what}: shapes");
    assert_eq!(one.strings, many.strings, "{what}: names");
    assert_eq!(
        format!("{:?}", one.devices),
        format!("{:?}", many.devices),
        "{what}: devices"
    );
    assert_eq!(
        format!("{:?}", one.gpu_metrics),
        format!("{:?}", many.gpu_metrics),
        "{what}: GPU metrics"
    );
    assert_eq!(
        format!("{:?}", one.meta),
        format!("{:?}", many.meta),
        "{what}: meta"
    );
}

/// Generated reports of random sizes, each loaded serially and at 2, 3 and 8 threads with
/// a random slice size: the same trace every time, and over the cases the slice edges
/// fall inside graph replays and inside steps' NVTX ranges.
#[test]
fn generated_reports_load_the_same_with_any_slices() {
    let dir = tempfile::tempdir().unwrap();
    let (mut graph_edges, mut range_edges, mut nvtx_split) = (0, 0, 0);
    for seed in 0..36u64 {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(0x7412_0000 + seed);
        let scn = scenario(&mut rng);
        let path = dir.path().join(format!("case{seed}.sqlite"));
        build(&scn, &path).unwrap();
        // Slices of at most half the smaller table's rows, so both big tables split.
        let conn = Connection::open(&path).unwrap();
        let rows = |t: &str| {
            conn.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .unwrap_or(0i64)
        };
        let (kernels, nvtx) = (rows("CUPTI_ACTIVITY_KIND_KERNEL"), rows("NVTX_EVENTS"));
        let top = if nvtx > 0 { kernels.min(nvtx) } else { kernels } / 2;
        let serial = LoadOptions {
            threads: 1,
            min_slice_rows: None,
            gpu_metrics: true,
            ..LoadOptions::all()
        };
        let one = nsys::load_with(&path, &serial).unwrap();
        for threads in [2usize, 3, 8] {
            let min_rows = rng.random_range(1..=top.max(1));
            let opts = LoadOptions {
                threads,
                min_slice_rows: Some(min_rows),
                ..serial.clone()
            };
            let many = nsys::load_with(&path, &opts).unwrap();
            let what = format!("seed {seed}, {threads} threads, slices of {min_rows} rows");
            assert_same(&one, &many, &what);
            let (g, r, n) = edges(&path, min_rows, threads as i64);
            graph_edges += g;
            range_edges += r;
            nvtx_split += usize::from(n > 1);
        }
    }
    // The cases really cut where order matters (a kernel on every slice edge is a given:
    // the edges are kernel rowids).
    // (3384, 1427 and 102 of 108 loads with these seeds; the floors leave room for the
    // generator to change.)
    assert!(graph_edges >= 50, "graph replays split: {graph_edges}");
    assert!(
        range_edges >= 50,
        "NVTX ranges across kernel slices: {range_edges}"
    );
    assert!(
        nvtx_split >= 72,
        "NVTX tables in several slices: {nvtx_split}"
    );
}

/// A gzipped trace cut short or damaged mid-stream fails the same way whether it is
/// inflated on the parsing thread (1) or on its own (2, 8): the decoder's error reaches
/// the parser in order, after the same bytes, and is worded the same.
#[test]
fn damaged_gzip_fails_the_same_at_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(common::fixture(
        "kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz",
    ))
    .unwrap();
    let cut = dir.path().join("cut.json.gz");
    std::fs::write(&cut, &good[..good.len() * 2 / 3]).unwrap();
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    for b in &mut bad[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let flipped = dir.path().join("flipped.json.gz");
    std::fs::write(&flipped, &bad).unwrap();
    for f in [&cut, &flipped] {
        let one = run_at("analyze", f, 1);
        assert_eq!(one.0, 2, "{}: {}", f.display(), one.2);
        assert!(one.1.is_empty());
        assert!(
            one.2.contains("corrupt gzip data") || one.2.contains("JSON"),
            "{}",
            one.2
        );
        for n in [2, 8] {
            assert_eq!(
                run_at("analyze", f, n),
                one,
                "{} at {n} threads",
                f.display()
            );
        }
    }
}

/// A malformed event shortly before the place where a gzip stream breaks is the error
/// reported, at every thread count — also when a range's cut search runs into the break
/// (the range length is set so the second range's search starts 3 bytes before it): a
/// search that cannot finish means "no more cuts", and the range before reads on to the
/// bad event and then the break, in byte order, as one thread does.
#[test]
fn a_bad_event_before_a_gzip_break_comes_first() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let mut d = common::gunzip(&common::fixture(
        "kineto/vllm_b200_eager_prefill_rank0.json.gz",
    ));
    // `"ph": "X"` → `"ph"  "X"` in the event after 30% of the trace.
    let at = event_after(&d, 0.3);
    let key = at + d[at..].windows(6).position(|w| w == b"\"ph\": ").unwrap();
    d[key + 4] = b' ';
    let whole = dir.path().join("whole.json.gz");
    common::write_gzip(&whole, &d);
    let gz = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.json.gz");
    std::fs::write(&cut, &gz[..gz.len() * 6 / 10]).unwrap();
    // Where the readable bytes end: the truncated stream inflated as far as it goes.
    let mut readable = Vec::new();
    let mut dec = flate2::read::MultiGzDecoder::new(std::fs::File::open(&cut).unwrap());
    assert!(dec.read_to_end(&mut readable).is_err(), "truncated");
    let end = readable.len();
    assert!(
        end > key + 1000 && end < d.len(),
        "{key} < {end} < {}",
        d.len()
    );
    assert!(!String::from_utf8_lossy(&d[end - 3..end]).contains("},{"));
    let array = d
        .windows(14)
        .position(|w| w == b"\"traceEvents\":")
        .unwrap();
    let array = array + d[array..].iter().position(|&b| b == b'[').unwrap();
    // Range k's cut search starts at array + 1 + k * range: range 1's at end - 3.
    let range = end - 3 - array - 1;
    let run = |threads: usize| {
        let out = analyze_in_ranges(&cut, threads, range);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), err)
    };
    let one = run(1);
    assert_eq!(one.0, Some(2), "{}", one.1);
    assert!(one.1.contains("malformed trace event"), "{}", one.1);
    for n in [2, 3, 4, 8] {
        assert_eq!(run(n), one, "at {n} threads");
    }
}

/// The start of the first event after `frac` of `plain` (a `{` opening a line after a
/// `},`), found by the text's layout: Kineto writes one event per indented block.
fn event_after(plain: &[u8], frac: f64) -> usize {
    let from = (plain.len() as f64 * frac) as usize;
    let close = from + plain[from..].windows(2).position(|w| w == b"},").unwrap();
    close + plain[close..].iter().position(|&b| b == b'{').unwrap()
}

/// A plain trace's events are read in byte ranges on every thread from 2 threads on, a
/// gzipped one's from 3 (ranges of 64 KiB or more here): every fixture, inflated, prints
/// the same at 2, 3 and 8 as at 1; and a damaged trace, plain or gzipped, fails with the
/// same error at every count — the first in byte order, whether a range's parse finds it
/// (a member without its colon) or its scan does (an event that is not an object, the end
/// of the data), in the first range or a later one.
#[test]
fn plain_kineto_traces_read_the_same_in_byte_ranges() {
    let dir = tempfile::tempdir().unwrap();
    for gz in fixtures("kineto") {
        let name = gz.file_name().unwrap().to_string_lossy().replace(".gz", "");
        let plain = dir.path().join(name);
        std::fs::write(&plain, common::gunzip(&gz)).unwrap();
        let one = run_at("analyze", &plain, 1);
        assert_eq!(one.0, 0, "{}: {}", plain.display(), one.2);
        for n in [2, 3, 8] {
            assert!(
                run_at("analyze", &plain, n) == one,
                "{} at {n} threads",
                plain.display()
            );
        }
    }
    let good = common::gunzip(&common::fixture(
        "kineto/vllm_b200_eager_prefill_rank0.json.gz",
    ));
    assert!(good.len() > 8 << 20, "several batches: {}", good.len());
    // A byte-order mark before the JSON: every range's file offset is shifted past it.
    let bom = dir.path().join("bom.json");
    std::fs::write(&bom, [&b"\xef\xbb\xbf"[..], &good].concat()).unwrap();
    let one = run_at("analyze", &bom, 1);
    assert_eq!(one.0, 0, "{}", one.2);
    for n in [2, 8] {
        assert!(run_at("analyze", &bom, n) == one, "BOM at {n} threads");
    }
    // The parser's failure: `"ph": "X"` becomes `"ph"  "X"` (the structure is intact;
    // `ph` is read first, whatever the event's kind).
    let no_colon = |d: &mut Vec<u8>, frac: f64| {
        let at = event_after(d, frac);
        let key = at + d[at..].windows(6).position(|w| w == b"\"ph\": ").unwrap();
        d[key + 4] = b' ';
    };
    // The scanner's: an event that opens with `[` (it still closes with `}`).
    let not_object = |d: &mut Vec<u8>, frac: f64| {
        let at = event_after(d, frac);
        d[at] = b'[';
    };
    type Damage = (&'static str, Vec<(f64, bool)>, Option<f64>, &'static str);
    // (name, damaged events (where, by the parser?), cut at, the error's words).
    let cases: [Damage; 7] = [
        ("parser", vec![(0.6, true)], None, "malformed trace event"),
        (
            "parser-in-two-ranges",
            vec![(0.2, true), (0.7, true)],
            None,
            "malformed trace event",
        ),
        (
            "parser-first",
            vec![(0.01, true)],
            None,
            "malformed trace event",
        ),
        (
            "parser-then-cut",
            vec![(0.6, true)],
            Some(0.9),
            "malformed trace event",
        ),
        (
            "scanner-then-parser",
            vec![(0.3, false), (0.6, true)],
            None,
            "malformed trace event",
        ),
        // Both in one batch: the scanner stops before sending it, the parser's error wins.
        (
            "parser-then-scanner",
            vec![(0.6, true), (0.61, false)],
            None,
            "malformed trace event",
        ),
        ("cut", vec![], Some(0.5), "ends early"),
    ];
    for (name, damage, cut, words) in cases {
        let mut d = good.clone();
        for (frac, parser) in damage {
            if parser {
                no_colon(&mut d, frac);
            } else {
                not_object(&mut d, frac);
            }
        }
        if let Some(c) = cut {
            d.truncate((d.len() as f64 * c) as usize);
        }
        // The error at one thread, and the same at every count in `threads`.
        let fails_the_same = |f: &Path, threads: &[usize]| {
            let one = run_at("analyze", f, 1);
            let what = f.display();
            assert_eq!(one.0, 2, "{what}: {}", one.2);
            assert!(
                one.1.is_empty() && one.2.contains(words),
                "{what}: {}",
                one.2
            );
            for &n in threads {
                assert_eq!(run_at("analyze", f, n), one, "{what} at {n} threads");
            }
        };
        let f = dir.path().join(format!("{name}.json"));
        std::fs::write(&f, &d).unwrap();
        fails_the_same(&f, &[2, 3, 4, 8]);
        // Gzipped: ranges over the inflated bytes from 3 threads (the tape's blocks are
        // the 64 KiB ranges here, so events straddle blocks).
        let gz = dir.path().join(format!("{name}.json.gz"));
        common::write_gzip(&gz, &d);
        fails_the_same(&gz, &[3, 4, 8]);
    }
    // The whole trace gzipped, with a byte-order mark inside the gzip stream.
    let gz = dir.path().join("bom.json.gz");
    common::write_gzip(&gz, &[&b"\xef\xbb\xbf"[..], &good].concat());
    let one = run_at("analyze", &gz, 1);
    assert_eq!(one.0, 0, "{}", one.2);
    for n in [3, 4, 8] {
        assert!(run_at("analyze", &gz, n) == one, "BOM gzip at {n} threads");
    }
}
