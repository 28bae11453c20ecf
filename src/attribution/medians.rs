//! The run-level medians the steps report prints (launches, exposed communication, the
//! floor): one pass over the attributed steps, so the renderers only format them.

use crate::stats::percentile;
use crate::wire::run_medians::{ExposedCommMedians, FloorMedians, LaunchMedians, RunMedians};
use crate::wire::steps::Step;

/// The medians over `steps`' steps with GPU work (a step without a wall has none).
pub fn run_medians(steps: &[Step]) -> RunMedians {
    let with_work: Vec<&Step> = steps.iter().filter(|s| s.wall_ns.is_some()).collect();
    RunMedians {
        launch: launch(&with_work),
        exposed_comm: exposed_comm(&with_work),
        floor: floor(steps),
    }
}

/// The median of `v` (linear interpolation, as every other spread), None when empty.
fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| percentile(&v, 0.5))
}

fn launch(steps: &[&Step]) -> Option<LaunchMedians> {
    let launch: Vec<_> = steps
        .iter()
        .filter_map(|s| s.attribution.as_ref().map(|a| &a.launch))
        .collect();
    let each = |f: &dyn Fn(&crate::wire::attribution::LaunchAttribution) -> Option<f64>| {
        median(launch.iter().filter_map(|l| f(l)).collect())
    };
    Some(LaunchMedians {
        steps: launch.len(),
        host_ns: each(&|l| Some(l.host_ns as f64))?,
        driver_floor_ns: each(&|l| Some(l.driver_floor_ns))?,
        framework_ns: each(&|l| Some(l.framework_ns))?,
        host_to_gap_ratio: each(&|l| l.host_to_gap_ratio),
    })
}

fn exposed_comm(steps: &[&Step]) -> Option<ExposedCommMedians> {
    let comm: Vec<&&Step> = steps
        .iter()
        .filter(|s| s.exposed_comm_ns.is_some())
        .collect();
    let ns = comm
        .iter()
        .filter_map(|s| s.exposed_comm_ns)
        .map(|x| x as f64);
    let share = comm
        .iter()
        .filter(|s| s.busy_ns > 0)
        .filter_map(|s| Some(s.exposed_comm_ns? as f64 / s.busy_ns as f64));
    Some(ExposedCommMedians {
        steps: comm.len(),
        ns: median(ns.collect())?,
        share_of_busy: median(share.collect()),
    })
}

/// Over every priced step (a step with a floor); MBU and floor/busy leave out the steps
/// measured below their floor, whose byte model is wrong.
fn floor(steps: &[Step]) -> Option<FloorMedians> {
    let priced: Vec<(&Step, &crate::wire::attribution::FloorAttribution)> = steps
        .iter()
        .filter_map(|s| Some((s, s.attribution.as_ref()?.floor.as_ref()?)))
        .collect();
    if priced.is_empty() {
        return None;
    }
    let above: Vec<_> = priced.iter().filter(|(_, f)| !f.below_floor).collect();
    let idle = priced
        .iter()
        .filter_map(|(s, _)| Some(s.gap_ns? as f64 / s.wall_ns?.max(1) as f64));
    let plausible_with = steps
        .iter()
        .filter_map(|s| s.attribution.as_ref())
        .filter(|a| a.floor.is_some())
        .find(|a| !a.plausible_with.is_empty())
        .map(|a| a.plausible_with.clone())
        .unwrap_or_default();
    Some(FloorMedians {
        steps: above.len(),
        mbu: median(above.iter().map(|(_, f)| f.mbu).collect()),
        floor_over_busy: median(above.iter().map(|(_, f)| f.floor_over_busy).collect()),
        idle_share: median(idle.collect()),
        below_floor_steps: priced.len() - above.len(),
        plausible_with,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::attribution::{Bound, FloorAttribution, Shape};
    use crate::wire::steps::tests::{attribution, step};

    /// A step of wall `wall`, busy `busy`, with a launch attribution and, with `mbu`, a floor
    /// of `mbu × wall` (floor/busy follows).
    fn priced(i: usize, wall: i64, busy: i64, host: i64, mbu: Option<f64>, below: bool) -> Step {
        let mut s = step(i, 1);
        s.wall_ns = Some(wall);
        s.busy_ns = busy;
        s.gap_ns = Some(wall - busy);
        let mut a = attribution(1, Shape::UnderUtilized);
        a.launch.host_ns = host;
        a.launch.driver_floor_ns = 2.0 * host as f64 / 10.0;
        a.launch.framework_ns = 8.0 * host as f64 / 10.0;
        a.launch.host_to_gap_ratio = (wall > busy).then(|| host as f64 / (wall - busy) as f64);
        a.floor = mbu.map(|m| FloorAttribution {
            floor_ns: m * wall as f64,
            bound: Bound::Memory,
            residual_ns: 0.0,
            gap_ns: 0.0,
            kernel_excess_ns: 0.0,
            mbu: m,
            floor_over_busy: m * wall as f64 / busy as f64,
            achieved_bytes_per_s: 0.0,
            total_bytes: 0.0,
            flops: 0.0,
            below_floor: below,
        });
        s.attribution = Some(a);
        s
    }

    #[test]
    fn medians_are_taken_over_the_steps_that_have_each_part() {
        let mut steps = vec![
            priced(0, 100, 50, 30, Some(0.2), false),
            priced(1, 200, 200, 10, Some(0.4), false),
            priced(2, 400, 100, 90, Some(0.1), false),
            // Below its floor: out of MBU and floor/busy, counted apart, in the idle share.
            priced(3, 1000, 500, 20, Some(2.0), true),
            // No GPU work: in no median.
            step(4, 0),
        ];
        steps[4].wall_ns = None;
        steps[0].exposed_comm_ns = Some(10);
        steps[2].exposed_comm_ns = Some(40);
        steps[3].attribution.as_mut().unwrap().plausible_with = vec!["--tp 2".to_owned()];
        let m = run_medians(&steps);

        let l = m.launch.unwrap();
        assert_eq!(l.steps, 4);
        // host 30, 10, 90, 20 → sorted 10, 20, 30, 90: median (20 + 30) / 2.
        assert_eq!(l.host_ns, 25.0);
        assert_eq!(l.driver_floor_ns, 5.0);
        assert_eq!(l.framework_ns, 20.0);
        // Ratios of the steps with a gap: 30/50, 90/300, 20/500 → 0.04, 0.3, 0.6.
        assert_eq!(l.host_to_gap_ratio, Some(0.3));

        let c = m.exposed_comm.unwrap();
        assert_eq!((c.steps, c.ns), (2, 25.0));
        // 10/50 and 40/100: 0.2 and 0.4.
        assert!((c.share_of_busy.unwrap() - 0.3).abs() < 1e-12);

        let f = m.floor.unwrap();
        assert_eq!((f.steps, f.below_floor_steps), (3, 1));
        assert_eq!(f.mbu, Some(0.2));
        // floor/busy: 0.2·100/50 = 0.4, 0.4·200/200 = 0.4, 0.1·400/100 = 0.4.
        assert!((f.floor_over_busy.unwrap() - 0.4).abs() < 1e-12);
        // idle over all four priced steps: 0.5, 0, 0.75, 0.5 → 0.5.
        assert_eq!(f.idle_share, Some(0.5));
        assert_eq!(f.plausible_with, vec!["--tp 2".to_owned()]);
    }

    #[test]
    fn a_run_without_attribution_has_no_medians() {
        let m = run_medians(&[step(0, 1)]);
        assert_eq!(m, RunMedians::default());
        let mut below = priced(0, 100, 50, 1, Some(3.0), true);
        below.exposed_comm_ns = None;
        let f = run_medians(&[below]).floor.unwrap();
        assert_eq!((f.steps, f.mbu, f.floor_over_busy), (0, None, None));
        assert_eq!(f.below_floor_steps, 1);
    }
}
