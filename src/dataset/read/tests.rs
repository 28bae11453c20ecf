//! Unit tests of reading a dataset back: older objects' missing columns, partitions, rows that are not runs, polars' messages.

use super::*;

fn row(id: &str, at: i64, file: &str) -> RunRow {
    RunRow {
        run_id: id.into(),
        exported_at_ns: at,
        gpu_name: None,
        model: None,
        engine: None,
        source_format: None,
        report_sha256: None,
        labels: BTreeMap::new(),
        runs_file: PathBuf::from(file),
        export_id: None,
    }
}

fn parquet(df: &mut DataFrame) -> Vec<u8> {
    let mut buf = Vec::new();
    ParquetWriter::new(&mut buf).finish(df).unwrap();
    buf
}

#[test]
fn a_column_an_older_object_lacks_reads_as_nulls() {
    // An object written before `exposed_comm_ns` existed.
    let mut old = df!("wall_ns" => [10i64, 20], "busy_ns" => [5i64, 6]).unwrap();
    let df = decode(
        "old.parquet",
        parquet(&mut old),
        &["wall_ns", "exposed_comm_ns"],
    )
    .unwrap();
    let x = df.column("exposed_comm_ns").unwrap();
    assert_eq!((x.dtype(), x.null_count()), (&DataType::Int64, 2));
    assert_eq!(ints(&df, "wall_ns").unwrap().get(1), Some(20));
    // A newer object's values are read as written.
    let mut new = df!("wall_ns" => [10i64], "exposed_comm_ns" => [Some(3i64)]).unwrap();
    let df = decode(
        "new.parquet",
        parquet(&mut new),
        &["wall_ns", "exposed_comm_ns"],
    )
    .unwrap();
    assert_eq!(ints(&df, "exposed_comm_ns").unwrap().get(0), Some(3));
    // Any other missing column is still a damaged object, named.
    let e = decode("old.parquet", parquet(&mut old), &["wall_ns", "launches"]).unwrap_err();
    assert!(e.message.contains("old.parquet"), "{}", e.message);
}

#[test]
fn table_files_are_in_the_same_partition() {
    assert_eq!(
        row("x", 0, "runs/gpu=a/model=b/run-x.parquet").table_file("steps"),
        "steps/gpu=a/model=b/run-x.parquet"
    );
    let mut r = row("x", 0, "runs/gpu=a/model=b/run-x.parquet");
    r.export_id = Some("beef".into());
    assert_eq!(
        r.table_file("kernels"),
        "kernels/gpu=a/model=b/run-x-beef.parquet"
    );
}

#[test]
fn rows_that_are_not_runs_are_named() {
    let f = Path::new("/d/runs/gpu=a/model=b/run-abc.parquet");
    let why = |v, id, at| refuse_row(f, v, id, at);
    assert_eq!(why(Some(1), Some("abc"), Some(5)), None);
    assert!(why(Some(2), Some("abc"), Some(5))
        .unwrap()
        .contains("newer stepgate"));
    assert!(why(None, Some("abc"), Some(5))
        .unwrap()
        .contains("no schema_version"));
    assert!(why(Some(0), Some("abc"), Some(5))
        .unwrap()
        .contains("schema_version 0"));
    assert!(why(Some(1), None, Some(5)).unwrap().contains("no run_id"));
    assert!(why(Some(1), Some(""), Some(5))
        .unwrap()
        .contains("no run_id"));
    assert!(why(Some(1), Some("abd"), Some(5))
        .unwrap()
        .contains("holds run \"abd\""));
    assert!(why(Some(1), Some("abc"), Some(-1))
        .unwrap()
        .contains("not a time"));
    assert!(why(Some(1), Some("abc"), None)
        .unwrap()
        .contains("no exported_at_ns"));
}

#[test]
fn a_run_in_two_partitions_counts_once_as_its_newest_export() {
    let mut w = Vec::new();
    let runs = vec![
        row("a", 1, "runs/gpu=x/model=m/run-a.parquet"),
        row("b", 2, "runs/gpu=x/model=m/run-b.parquet"),
        row("a", 3, "runs/gpu=y/model=m/run-a.parquet"),
    ];
    let store = Store::open(Path::new("/d"), &crate::store::StoreConfig::default()).unwrap();
    let kept = once_each(runs, &store, &mut w);
    let ids: Vec<(&str, i64)> = kept
        .iter()
        .map(|r| (r.run_id.as_str(), r.exported_at_ns))
        .collect();
    assert_eq!(ids, vec![("b", 2), ("a", 3)]);
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("gpu=x") && w[0].contains("gpu=y"), "{}", w[0]);
}

#[test]
fn polars_messages_become_one_short_line() {
    let long = format!(
        "unable to find column \"x\"; valid columns: [{}]\n\nResolved plan",
        "\"c\", ".repeat(200)
    );
    let r = reason(&long);
    assert_eq!(r, "unable to find column \"x\"");
    let r = reason(&"y".repeat(500));
    assert_eq!(r.chars().count(), 161);
}
