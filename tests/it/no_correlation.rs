//! Correlation id 0 means "no launching call" in both readers (CUPTI numbers correlations
//! from 1): kernels and calls carrying it are not one id, so they do not all land in the
//! step that happens to hold a call of id 0. Checked on the generator's scenario against
//! the steps it says each format must yield (docs/steps.md: Kineto places ops without a
//! launching call by time window, nsys leaves them outside steps).

use serde_json::Value;
use stepgate::source;
use stepgate::synth::uncorrelated::{self, Format};

use crate::common::run;

fn steps_json(path: &std::path::Path) -> Value {
    let (code, out, err) = run(&["steps", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn id_zero_is_no_id_in_the_model() {
    let dir = tempfile::tempdir().unwrap();
    for (format, name) in [(Format::Nsys, "z.sqlite"), (Format::Kineto, "z.json")] {
        let path = dir.path().join(name);
        uncorrelated::write(&path, format, 3).unwrap();
        let t = source::load(&path).unwrap();
        let (o, c) = (t.ops_view().unwrap(), t.calls_view().unwrap());
        assert!(!o.correlation_id.contains(&0), "{format:?}");
        assert!(!c.correlation_id.contains(&0), "{format:?}");
        // 2 kernels and 1 call per step had id 0.
        assert_eq!(o.correlation_id.iter().filter(|&&k| k == -1).count(), 6);
        assert_eq!(c.correlation_id.iter().filter(|&&k| k == -1).count(), 3);
    }
}

#[test]
fn uncorrelated_kernels_do_not_pile_into_one_step() {
    let dir = tempfile::tempdir().unwrap();
    for (format, name) in [(Format::Nsys, "z.sqlite"), (Format::Kineto, "z.json")] {
        let path = dir.path().join(name);
        let truth = uncorrelated::write(&path, format, 3).unwrap();
        let r = steps_json(&path);
        let steps = r["steps"].as_array().unwrap();
        assert_eq!(steps.len(), truth.len(), "{format:?}");
        for (s, want) in steps.iter().zip(&truth) {
            assert_eq!(s["cpu_start_ns"], want.cpu_start_ns, "{format:?}");
            assert_eq!(s["cpu_end_ns"], want.cpu_end_ns, "{format:?}");
            let (kernels, busy) = match format {
                // Placed by the time-window fallback: each step gets the ones inside it.
                Format::Kineto => (
                    want.linked_kernels + want.uncorrelated_kernels,
                    want.linked_busy_ns + want.uncorrelated_busy_ns,
                ),
                // No launching call: outside steps.
                Format::Nsys => (want.linked_kernels, want.linked_busy_ns),
            };
            assert_eq!(s["kernels"], kernels, "{format:?}: {}", s["name"]);
            assert_eq!(s["busy_ns"], busy, "{format:?}: {}", s["name"]);
            assert_eq!(s["tail_kernels"], 0, "{format:?}");
        }
        let outside = &r["outside_steps"][0];
        let lost: i64 = ["before_ns", "between_ns", "after_ns"]
            .iter()
            .map(|k| outside[k].as_i64().unwrap())
            .sum();
        let uncorrelated: i64 = truth.iter().map(|s| s.uncorrelated_busy_ns).sum();
        match format {
            Format::Kineto => assert_eq!(lost, 0),
            Format::Nsys => assert_eq!(lost, uncorrelated),
        }
    }
}
