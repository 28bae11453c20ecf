//! Fuzzed and read-only files, and `.nsys-rep` files exported through nsys once.

use super::*;

#[test]
fn fuzzed_files_never_panic() {
    let dir = tempdir();
    let src = std::fs::read(fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite")).unwrap();
    let p = dir.path().join("f.sqlite");
    // Truncated copies: every one is caught (by the header's page count or by SQLite).
    for len in [
        0,
        16,
        99,
        100,
        1024,
        4096,
        8192,
        src.len() / 4,
        src.len() / 2,
        src.len() - 4096,
        src.len() - 1,
    ] {
        std::fs::write(&p, &src[..len]).unwrap();
        let m = assert_input_error(&p, &format!("truncated to {len}"));
        assert!(
            m.contains("SQLite") || m.contains("truncated"),
            "{len}: {m}"
        );
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for _ in 0..4 {
        let junk: Vec<u8> = (0..rng.random_range(1..20_000))
            .map(|_| rng.random())
            .collect();
        std::fs::write(&p, &junk).unwrap();
        assert_input_error(&p, "random bytes");
    }
    // Flipped bytes: loads or fails with exit 2, never panics.
    let mut failed = 0;
    for round in 0..24 {
        let mut b = src.clone();
        // Half the rounds keep the header intact to reach SQLite's page parsing.
        let lo = if round % 2 == 0 { 100 } else { 0 };
        for _ in 0..64 {
            let i = rng.random_range(lo..b.len());
            b[i] ^= 1 << rng.random_range(0..8);
        }
        std::fs::write(&p, &b).unwrap();
        if let Err(e) = nsys::load(&p) {
            assert_eq!(e.exit_code(), 2, "{e}");
            failed += 1;
        }
    }
    assert!(
        failed > 0,
        "64 flipped bits per file broke none of 24 files"
    );
}

#[test]
fn read_only_report_is_read_and_left_unchanged() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let p = dir.path().join("ro.sqlite");
    std::fs::copy(fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite"), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    let t = nsys::load(&p).unwrap();
    assert_eq!(t.ops.height(), 5 + 15);
    assert_eq!(std::fs::read(&p).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no journal or side file left behind");
}

fn fake_report(dir: &Path, name: &str) -> PathBuf {
    let rep = dir.join(name);
    let src = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    std::fs::write(
        &rep,
        format!("NVIDIA Tegra Profiler Report 1.\n{}\n", src.display()),
    )
    .unwrap();
    rep
}

fn fake_path() -> Option<std::ffi::OsString> {
    Some(
        root()
            .join("tests")
            .join("fake_nsys_export")
            .into_os_string(),
    )
}

fn calls_logged(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn nsys_rep_is_exported_once_with_nsys_on_path() {
    let dir = tempdir();
    let d = dir.path();
    let rep = fake_report(d, "run.nsys-rep");
    assert_eq!(nsys::sniff(&rep).unwrap(), nsys::FileKind::Report);
    let opts = ExportOptions {
        path_env: fake_path(),
        dir_writable: None,
    };
    let out = export::ensure_sqlite(&rep, &opts).unwrap();
    assert_eq!(out, d.join("run.sqlite"));
    assert_eq!(calls_logged(d), 1);
    // Reused while newer than the report.
    assert_eq!(export::ensure_sqlite(&rep, &opts).unwrap(), out);
    assert_eq!(calls_logged(d), 1);
    // The loader goes through the same path and needs no nsys now.
    let t = nsys::load(&rep).unwrap();
    assert_eq!(t.ops.height(), 5 + 15);
    assert_eq!(t.meta.path, rep.display().to_string());
    // A report newer than its export is exported again.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&rep)
        .unwrap()
        .set_modified(later)
        .unwrap();
    export::ensure_sqlite(&rep, &opts).unwrap();
    assert_eq!(calls_logged(d), 2);
}

#[test]
fn nsys_rep_in_unwritable_dir_exports_to_temp() {
    let dir = tempdir();
    let rep = fake_report(dir.path(), "ro_dir.qdrep");
    let opts = ExportOptions {
        path_env: fake_path(),
        dir_writable: Some(false),
    };
    let out = export::ensure_sqlite(&rep, &opts).unwrap();
    assert_eq!(out, export::temp_export(&rep));
    assert!(out.starts_with(std::env::temp_dir()));
    assert!(!dir.path().join("ro_dir.sqlite").exists());
    assert_eq!(nsys::sniff(&out).unwrap(), nsys::FileKind::Sqlite);
    std::fs::remove_file(out).unwrap();
}

#[test]
fn nsys_rep_without_nsys_is_an_environment_error() {
    let dir = tempdir();
    let rep = fake_report(dir.path(), "nonsys.nsys-rep");
    let empty = tempdir();
    let opts = ExportOptions {
        path_env: Some(empty.path().as_os_str().to_owned()),
        dir_writable: None,
    };
    let e = export::ensure_sqlite(&rep, &opts).unwrap_err();
    assert_eq!(e.exit_code(), 4);
    let m = e.to_string();
    assert!(m.contains("nsys export --type sqlite -o"), "{m}");
    assert!(m.contains("nonsys.nsys-rep"), "{m}");
    // A damaged report: nsys fails, the user is told (exit 2).
    std::fs::write(&rep, "NVIDIA Tegra Profiler Report 1.\n/nonexistent\n").unwrap();
    let opts = ExportOptions {
        path_env: fake_path(),
        dir_writable: None,
    };
    let e = export::ensure_sqlite(&rep, &opts).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("report is damaged"), "{e}");
}
