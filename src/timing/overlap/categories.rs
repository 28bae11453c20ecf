//! Kernel categories summed: per-name rows into per-category totals, for a device and
//! for a single step.

use crate::wire::steps::CategoryStat;

/// Category totals from per-name rows `(category, instances, total_ns, exclusive_ns)`,
/// ranked by exclusive time. Used for a device and for a single step.
pub fn category_totals<'a>(
    rows: impl IntoIterator<Item = (&'a str, u64, i64, i64)>,
) -> Vec<CategoryStat> {
    let mut by: Vec<CategoryStat> = Vec::new();
    for (category, instances, total_ns, exclusive_ns) in rows {
        match by.iter_mut().find(|c| c.category == category) {
            Some(c) => {
                c.instances += instances;
                c.total_ns += total_ns;
                c.exclusive_ns += exclusive_ns;
            }
            None => by.push(CategoryStat {
                category: category.to_owned(),
                instances,
                total_ns,
                exclusive_ns,
                share_of_busy: None,
            }),
        }
    }
    by.sort_by(|a, b| {
        b.exclusive_ns
            .cmp(&a.exclusive_ns)
            .then_with(|| a.category.cmp(&b.category))
    });
    by
}
