//! Unit tests of writing a dataset: labels, run ids and the SHA-256 they use.

use super::*;

#[test]
fn labels_parse_and_refuse() {
    let l = parse_labels(&["branch=main".into(), "git.sha=abc=d".into()]).unwrap();
    assert_eq!(l["branch"], "main");
    assert_eq!(l["git.sha"], "abc=d");
    assert!(parse_labels(&["nokey".into()]).is_err());
    assert!(parse_labels(&["a b=c".into()]).is_err());
    assert!(parse_labels(&["a=1".into(), "a=2".into()]).is_err());
}

#[test]
fn run_id_depends_on_report_and_labels_only() {
    let mut l = Labels::new();
    let a = run_id("00ff", &l);
    assert_eq!(a.len(), 16);
    assert_eq!(a, run_id("00ff", &l));
    l.insert("branch".into(), "main".into());
    assert_ne!(a, run_id("00ff", &l));
    assert_ne!(run_id("00ff", &l), run_id("00fe", &l));
}

#[test]
fn sha256_of_a_known_string() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    std::fs::write(&p, b"abc").unwrap();
    // FIPS 180-2 test vector for "abc".
    assert_eq!(
        report_sha256(&p).unwrap(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
