//! Per-(device, name) statistics of the swept ops: instances, total, mean, median, min,
//! max and exclusive time, in one pass over the sweep order plus a median by selection.

/// One (device, name) group's statistics.
pub(super) struct NameStat {
    pub device: i64,
    pub name: u32,
    /// Short name of the group's first op in sweep order.
    pub short: u32,
    pub instances: u64,
    /// Σ durations, wrapping as an i64 the way polars' sum does (hostile durations only).
    pub total_ns: i64,
    pub mean_ns: f64,
    pub median_ns: f64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub exclusive_ns: i64,
}

/// Per (device, name) statistics in one pass over the sweep order, plus a median by
/// selection on each group's durations.
///
/// The mean divides the exact (i128) sum, so it never wraps; while a group's Σ|dur| stays
/// below 2^52 ns (every real report) every value, partial sum and midpoint is an exact
/// f64, and mean and median are bit-identical to what polars' Kahan mean and interpolated
/// median gave for the same rows (the test below checks it). Beyond that (damaged reports
/// with durations of months) they are the correctly rounded mean and the f64 midpoint.
pub(super) fn name_stats(
    order: &[u32],
    buckets: &[(i64, std::ops::Range<usize>)],
    name: &[u32],
    short: &crate::trace::NameTable,
    start: &[i64],
    end: &[i64],
    exclusive: &[i64],
) -> Vec<NameStat> {
    let n_names = name.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
    let mut slot = vec![u32::MAX; n_names];
    let mut touched: Vec<u32> = Vec::new();
    let mut groups: Vec<NameStat> = Vec::new();
    let mut exact_sum: Vec<i128> = Vec::new();
    let mut group_of = vec![0u32; order.len()];
    for (d, r) in buckets {
        for k in r.clone() {
            let i = order[k] as usize;
            let nm = name[i];
            if slot[nm as usize] == u32::MAX {
                slot[nm as usize] = groups.len() as u32;
                touched.push(nm);
                groups.push(NameStat {
                    device: *d,
                    name: nm,
                    short: short.of(nm),
                    instances: 0,
                    total_ns: 0,
                    mean_ns: 0.0,
                    median_ns: 0.0,
                    min_ns: i64::MAX,
                    max_ns: i64::MIN,
                    exclusive_ns: 0,
                });
                exact_sum.push(0);
            }
            let g = slot[nm as usize];
            group_of[k] = g;
            let dur = end[i].wrapping_sub(start[i]);
            let st = &mut groups[g as usize];
            st.instances += 1;
            st.total_ns = st.total_ns.wrapping_add(dur);
            st.min_ns = st.min_ns.min(dur);
            st.max_ns = st.max_ns.max(dur);
            st.exclusive_ns = st.exclusive_ns.wrapping_add(exclusive[k]);
            exact_sum[g as usize] += i128::from(dur);
        }
        for nm in touched.drain(..) {
            slot[nm as usize] = u32::MAX;
        }
    }
    // Durations laid out group by group, for the medians.
    let mut at: Vec<usize> = Vec::with_capacity(groups.len());
    let mut off = 0;
    for g in &groups {
        at.push(off);
        off += g.instances as usize;
    }
    let mut durs = vec![0i64; order.len()];
    for (k, &g) in group_of.iter().enumerate() {
        let i = order[k] as usize;
        durs[at[g as usize]] = end[i].wrapping_sub(start[i]);
        at[g as usize] += 1;
    }
    drop(group_of);
    let mut lo = 0;
    for (g, &sum) in groups.iter_mut().zip(&exact_sum) {
        let n = g.instances as usize;
        let v = &mut durs[lo..lo + n];
        lo += n;
        g.mean_ns = sum as f64 / n as f64;
        let (_, &mut upper, _) = v.select_nth_unstable(n / 2);
        let median = if n % 2 == 1 {
            upper as f64
        } else {
            let lower = v[..n / 2].iter().copied().max().unwrap_or(upper);
            let (l, u) = (lower as f64, upper as f64);
            if l == u {
                l
            } else {
                0.5 * (u - l) + l
            }
        };
        g.median_ns = median;
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::super::sweep::{exclusive_in_order, sweep_order, tests::ops};
    use super::*;

    use polars::prelude::*;

    /// (device, name, instances, total, mean bits, median bits, min, max, exclusive).
    type Row = (i64, u32, u64, i64, u64, u64, i64, i64, i64);

    /// The same statistics through polars' group_by over the rows in sweep order: a
    /// second implementation, the reference every earlier report's numbers came from.
    fn polars_stats(
        order: &[u32],
        device: &[i32],
        name: &[u32],
        start: &[i64],
        end: &[i64],
        exclusive: &[i64],
    ) -> Vec<Row> {
        let dur: Vec<i64> = order
            .iter()
            .map(|&i| end[i as usize] - start[i as usize])
            .collect();
        let names: Vec<u32> = order.iter().map(|&i| name[i as usize]).collect();
        let df = df!(
            "device" => order.iter().map(|&i| i64::from(device[i as usize])).collect::<Vec<i64>>(),
            "name" => names,
            "dur" => dur,
            "excl" => exclusive.to_vec(),
        )
        .unwrap();
        let g = df
            .lazy()
            .group_by([col("device"), col("name")])
            .agg([
                len().cast(DataType::UInt64).alias("n"),
                col("dur").sum().alias("total"),
                col("dur").mean().alias("mean"),
                col("dur").median().alias("median"),
                col("dur").min().alias("min"),
                col("dur").max().alias("max"),
                col("excl").sum().alias("excl"),
            ])
            .collect()
            .unwrap();
        let i64s = |c: &str| -> Vec<i64> {
            g.column(c)
                .unwrap()
                .i64()
                .unwrap()
                .into_no_null_iter()
                .collect()
        };
        let f64s = |c: &str| -> Vec<u64> {
            g.column(c)
                .unwrap()
                .f64()
                .unwrap()
                .into_no_null_iter()
                .map(f64::to_bits)
                .collect()
        };
        let (dv, total, min, max, excl) = (
            i64s("device"),
            i64s("total"),
            i64s("min"),
            i64s("max"),
            i64s("excl"),
        );
        let (mean, median) = (f64s("mean"), f64s("median"));
        let nm: Vec<u32> = g
            .column("name")
            .unwrap()
            .u32()
            .unwrap()
            .into_no_null_iter()
            .collect();
        let n: Vec<u64> = g
            .column("n")
            .unwrap()
            .u64()
            .unwrap()
            .into_no_null_iter()
            .collect();
        let mut out: Vec<_> = (0..dv.len())
            .map(|i| {
                (
                    dv[i], nm[i], n[i], total[i], mean[i], median[i], min[i], max[i], excl[i],
                )
            })
            .collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn name_stats_match_by_hand_and_polars() {
        let (d, s, e, n) = ops();
        let (order, buckets) = sweep_order(&d, &s, &e, &n, &[0, 1]);
        let st: Vec<i64> = order.iter().map(|&i| s[i as usize]).collect();
        let en: Vec<i64> = order.iter().map(|&i| e[i as usize]).collect();
        let mut excl = Vec::new();
        for (_, r) in &buckets {
            excl.extend(exclusive_in_order(&st[r.clone()], &en[r.clone()]));
        }
        let short = [7u32, 8];
        let short: Vec<u32> = n.iter().map(|&x| short[x as usize]).collect();
        let short = crate::trace::NameTable::from_rows(&n, &short);
        let fast = name_stats(&order, &buckets, &n, &short, &s, &e, &excl);
        // Device 0, name 0: durations 10, 1, 3, 9 → total 23, mean 5.75, median
        // (3 + 9) / 2 = 6; exclusive 10 + 0 + 3 + 9 (the [12,13) op is inside [10,20)).
        let g = &fast[1];
        assert_eq!((g.device, g.name, g.short, g.instances), (0, 0, 7, 4));
        assert_eq!(
            (g.total_ns, g.min_ns, g.max_ns, g.exclusive_ns),
            (23, 1, 10, 22)
        );
        assert_eq!((g.mean_ns, g.median_ns), (5.75, 6.0));
        // Device 0, name 1: [0,5) and [2,9) → durations 5, 7, exclusive 5 + 4.
        let g = &fast[0];
        assert_eq!((g.device, g.name, g.instances, g.total_ns), (0, 1, 2, 12));
        assert_eq!((g.median_ns, g.exclusive_ns), (6.0, 9));
        // Device 1, name 0: durations 7, 1 (odd counts take the middle value elsewhere).
        assert_eq!(
            (fast[3].device, fast[3].instances, fast[3].median_ns),
            (1, 2, 4.0)
        );
        // polars' group_by on the same rows agrees on every field, to the bit.
        let mut ours: Vec<Row> = fast
            .iter()
            .map(|g| {
                (
                    g.device,
                    g.name,
                    g.instances,
                    g.total_ns,
                    g.mean_ns.to_bits(),
                    g.median_ns.to_bits(),
                    g.min_ns,
                    g.max_ns,
                    g.exclusive_ns,
                )
            })
            .collect();
        ours.sort_unstable();
        assert_eq!(ours, polars_stats(&order, &d, &n, &s, &e, &excl));
    }

    #[test]
    fn huge_durations_keep_an_exact_mean_where_the_total_wraps() {
        // Three ops of 2^62 ns: Σ = 3·2^62 wraps an i64 (total_ns keeps the wrapped value,
        // as polars' sum does), the mean is still 2^62 and the median the middle value.
        let big = 1i64 << 62;
        let (d, s, e, n) = (
            vec![0; 3],
            vec![0, 1, 2],
            vec![big, big + 1, big + 2],
            vec![0; 3],
        );
        let (order, buckets) = sweep_order(&d, &s, &e, &n, &[0]);
        let none = crate::trace::NameTable::default();
        let st = name_stats(&order, &buckets, &n, &none, &s, &e, &[0; 3]);
        assert_eq!(st.len(), 1);
        assert_eq!(st[0].total_ns, big.wrapping_mul(3));
        assert!(st[0].total_ns < 0);
        assert_eq!(st[0].mean_ns, 2f64.powi(62));
        assert_eq!(st[0].median_ns, 2f64.powi(62));
        assert_eq!((st[0].min_ns, st[0].max_ns), (big, big));
        // Two of them: the midpoint of equal values is the value.
        let st = name_stats(&order[..2], &[(0, 0..2)], &n, &none, &s, &e, &[0; 2]);
        assert_eq!(
            (st[0].mean_ns, st[0].median_ns),
            (2f64.powi(62), 2f64.powi(62))
        );
    }
}
