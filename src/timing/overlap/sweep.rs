//! The per-device sweep order and each op's exclusive (non-overlapped) time in it.

use std::collections::HashMap;

/// Exclusive time of each interval, given intervals already in sweep order.
///
/// Each interval gets `max(0, end - max(start, running_end))`, where `running_end` is
/// the latest end among the intervals before it; zero-length or inverted intervals
/// get 0.
pub fn exclusive_in_order(start_ns: &[i64], end_ns: &[i64]) -> Vec<i64> {
    let mut out = Vec::with_capacity(start_ns.len());
    let mut running = i64::MIN;
    for (&s, &e) in start_ns.iter().zip(end_ns) {
        let from = s.max(running);
        out.push((e - from).max(0));
        running = running.max(e);
    }
    out
}

/// Rank of every interned name in string order, so ties sort by name identically
/// whatever order a source interned names in (nsys and Kineto intern differently).
pub fn name_ranks(strings: &[String]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..strings.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| strings[a as usize].cmp(&strings[b as usize]));
    let mut rank = vec![0u32; strings.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    rank
}

/// Op row indices in sweep order (device, start, end, name rank), one slice per device
/// in ascending device order. Devices are few, so rows are bucketed by device first;
/// within a device they arrive as a few start-ordered runs (one per source table), which
/// the stable sort merges in near-linear time. A polars multi-column sort of the frame
/// cost ~700 MB of row encodings and gathered columns on a 4M-op report; this costs one
/// u32 per op.
pub(super) fn sweep_order(
    device: &[i32],
    start: &[i64],
    end: &[i64],
    name: &[u32],
    ranks: &[u32],
) -> (Vec<u32>, Vec<(i64, std::ops::Range<usize>)>) {
    let mut counts: std::collections::BTreeMap<i32, usize> = std::collections::BTreeMap::new();
    for &d in device {
        *counts.entry(d).or_default() += 1;
    }
    let mut at: HashMap<i32, usize> = HashMap::with_capacity(counts.len());
    let mut buckets = Vec::with_capacity(counts.len());
    let mut off = 0;
    for (&d, &n) in &counts {
        at.insert(d, off);
        buckets.push((i64::from(d), off..off + n));
        off += n;
    }
    let mut order = vec![0u32; device.len()];
    for (i, d) in device.iter().enumerate() {
        let slot = at.get_mut(d).expect("every device was counted");
        order[*slot] = i as u32;
        *slot += 1;
    }
    for (_, r) in &buckets {
        order[r.clone()].sort_by_key(|&i| {
            let i = i as usize;
            (start[i], end[i], ranks[name[i] as usize])
        });
    }
    (order, buckets)
}

/// Every op in sweep order (per device, then start, end and name) with its exclusive
/// time at the same position: what a per-op view (the Perfetto export) shows, from the
/// one sweep `analyze` runs.
pub fn exclusive_per_op(
    device: &[i32],
    start: &[i64],
    end: &[i64],
    name: &[u32],
    ranks: &[u32],
) -> (Vec<u32>, Vec<i64>) {
    let (order, buckets) = sweep_order(device, start, end, name, ranks);
    let mut excl = Vec::with_capacity(order.len());
    for (_, r) in buckets {
        let s: Vec<i64> = order[r.clone()]
            .iter()
            .map(|&i| start[i as usize])
            .collect();
        let e: Vec<i64> = order[r].iter().map(|&i| end[i as usize]).collect();
        excl.extend(exclusive_in_order(&s, &e));
    }
    (order, excl)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn sweep_credits_only_new_time() {
        // [0,10) [5,15) [20,30) [22,25): union 25, exclusive 10,5,10,0.
        let s = [0, 5, 20, 22];
        let e = [10, 15, 30, 25];
        assert_eq!(exclusive_in_order(&s, &e), vec![10, 5, 10, 0]);
        // A zero-length and an inverted interval get nothing.
        assert_eq!(exclusive_in_order(&[0, 3, 4], &[5, 3, 2]), vec![5, 0, 0]);
    }

    /// Ops on two devices, interleaved and out of order: (device, start, end, name).
    pub(in crate::timing::overlap) fn ops() -> (Vec<i32>, Vec<i64>, Vec<i64>, Vec<u32>) {
        let rows: &[(i32, i64, i64, u32)] = &[
            (1, 50, 57, 0),
            (0, 10, 20, 0),
            (0, 0, 5, 1),
            (1, 0, 4, 1),
            (0, 12, 13, 0),
            (0, 30, 33, 0),
            (0, 40, 49, 0),
            (1, 60, 61, 0),
            (0, 2, 9, 1),
        ];
        (
            rows.iter().map(|r| r.0).collect(),
            rows.iter().map(|r| r.1).collect(),
            rows.iter().map(|r| r.2).collect(),
            rows.iter().map(|r| r.3).collect(),
        )
    }

    #[test]
    fn sweep_order_groups_devices_then_sorts_by_start() {
        let (d, s, e, n) = ops();
        let (order, buckets) = sweep_order(&d, &s, &e, &n, &[0, 1]);
        assert_eq!(order, vec![2, 8, 1, 4, 5, 6, 3, 0, 7]);
        assert_eq!(buckets, vec![(0, 0..6), (1, 6..9)]);
    }

    #[test]
    fn exclusive_per_op_restarts_the_sweep_at_each_device() {
        let (d, s, e, n) = ops();
        let (order, excl) = exclusive_per_op(&d, &s, &e, &n, &[0, 1]);
        assert_eq!(order, vec![2, 8, 1, 4, 5, 6, 3, 0, 7]);
        // Device 0: [0,5) [2,9) [10,20) [12,13) [30,33) [40,49); device 1: [0,4) [50,57)
        // [60,61), its running end starting over.
        assert_eq!(excl, vec![5, 4, 10, 0, 3, 9, 4, 7, 1]);
    }

    #[test]
    fn ranks_follow_string_order() {
        let strings = vec!["b".to_owned(), "a".to_owned(), "c".to_owned()];
        assert_eq!(name_ranks(&strings), vec![1, 0, 2]);
    }
}
