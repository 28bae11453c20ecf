//! The next action for one item that holds most of the busy time, by what the item is, as
//! one table: a kernel (far from its roof: the vendor's kernel profiler with its name), a
//! copy (nothing to profile: avoid or overlap it), an opaque CUDA-graph replay (a graph is
//! not a kernel: recapture with node-level tracing) and a collective (message size,
//! overlap, the other ranks; never a kernel profiler). Kernel classes have their own rule
//! table (`class_rules`), the idle time between kernels its patterns (`verdict`'s gap
//! rules); the step's shape and the run verdict both read this one for a single item, so
//! a step and the run say the same thing of it.

use crate::categories::COMMUNICATION;
use crate::wire::attribution::Shape;

use super::notes::KernelProfiler;

/// What one item of the busy time is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Kernel,
    /// A copy or memset (`[memcpy …]`, `[memset]`): GPU time that is no kernel.
    Copy,
    /// A CUDA graph traced as one opaque replay (`[cuda graph N]`, nsys
    /// `--cuda-graph-trace=graph`): its kernels are not in the capture.
    Graph,
    /// An NCCL/RCCL collective or a custom all-reduce (category `communication`): its time
    /// is the link and the wait for the other ranks, not its instructions.
    Collective,
}

/// The nsys flag that traces each kernel of a CUDA graph (the default, `graph`, traces a
/// replay as one range).
pub(crate) const NODE_TRACE_FLAG: &str = "nsys profile --cuda-graph-trace=node";

/// What an item of `name` in `category` is.
pub(crate) fn item_of(name: &str, category: &str) -> Item {
    if super::is_copy(category) {
        Item::Copy
    } else if crate::categories::families::KernelFamily::CudaGraphReplay.matches(name) {
        Item::Graph
    } else if category == COMMUNICATION {
        Item::Collective
    } else {
        Item::Kernel
    }
}

/// One row of the table: the step shape an item of this type gives when it dominates,
/// and its action.
pub struct ItemRule {
    pub item: Item,
    pub shape: Shape,
    /// The action for `name` at `share` of busy time (over `steps` steps when a run's).
    pub action: fn(&str, f64, Option<usize>, KernelProfiler) -> String,
    /// What the action leaves out on purpose (the run verdict's `held back`), if anything.
    pub held_back: fn(&str, KernelProfiler) -> Option<String>,
}

/// Every item type's rule.
pub(crate) const ITEM_RULES: &[ItemRule] = &[
    ItemRule {
        item: Item::Kernel,
        shape: Shape::OneKernelDominant,
        action: kernel,
        held_back: |_, _| None,
    },
    ItemRule {
        item: Item::Copy,
        shape: Shape::OneCopyDominant,
        action: super::copy_action,
        held_back: |name, p| Some(format!("{} for {name} (a copy, not a kernel)", p.name)),
    },
    ItemRule {
        item: Item::Graph,
        shape: Shape::OneGraphDominant,
        action: graph,
        held_back: |name, p| {
            Some(format!(
                "{} for {name} (a graph replay, not a kernel)",
                p.name
            ))
        },
    },
    ItemRule {
        item: Item::Collective,
        shape: Shape::OneCollectiveDominant,
        action: collective,
        held_back: |name, p| Some(format!("{} for {name} (a collective)", p.name)),
    },
];

/// The rule of an item type.
pub fn rule(item: Item) -> &'static ItemRule {
    ITEM_RULES
        .iter()
        .find(|r| r.item == item)
        .unwrap_or(&ITEM_RULES[0])
}

fn over(steps: Option<usize>) -> String {
    steps
        .map(|n| format!(" over {n} steps (measured)"))
        .unwrap_or_default()
}

fn kernel(name: &str, share: f64, steps: Option<usize>, p: KernelProfiler) -> String {
    format!(
        "{name} is {:.0}% of busy time{}: take it to {}",
        share * 100.0,
        over(steps),
        p.name
    )
}

fn graph(name: &str, share: f64, steps: Option<usize>, _: KernelProfiler) -> String {
    format!(
        "{name} is {:.0}% of busy time{}: an opaque CUDA-graph replay, not a kernel (no kernel profiler sees inside it) — recapture with `{NODE_TRACE_FLAG}` to see the graph's kernels, then read this again",
        share * 100.0,
        over(steps)
    )
}

fn collective(name: &str, share: f64, steps: Option<usize>, _: KernelProfiler) -> String {
    format!(
        "{name} is {:.0}% of busy time{}: a collective, whose time is its message size over the link plus the wait for the other ranks (a kernel profiler cannot tell the two apart) — check the message size, whether it overlaps compute, and compare the ranks' captures for a straggler (the rank that arrives last waits least)",
        share * 100.0,
        over(steps)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::{NSIGHT_COMPUTE, ROCPROF_COMPUTE};

    #[test]
    fn every_item_type_has_one_rule_and_only_a_kernel_goes_to_a_profiler() {
        for item in [Item::Kernel, Item::Copy, Item::Graph, Item::Collective] {
            assert_eq!(ITEM_RULES.iter().filter(|r| r.item == item).count(), 1);
            let a = (rule(item).action)("x", 0.84, Some(3), ROCPROF_COMPUTE);
            assert!(a.starts_with("x is 84% of busy time over 3 steps"), "{a}");
            // Only a kernel goes to a kernel profiler; a copy's action names the profiler
            // to say it has nothing to find.
            assert_eq!(
                a.contains("take it to rocprof-compute"),
                item == Item::Kernel,
                "{a}"
            );
            if matches!(item, Item::Graph | Item::Collective) {
                assert!(!a.contains("rocprof-compute"), "{a}");
            }
        }
        assert_eq!(
            item_of("[cuda graph 1]", "other"),
            Item::Graph,
            "nsys names a graph-level replay so"
        );
        assert_eq!(
            item_of(
                "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
                "communication"
            ),
            Item::Collective
        );
        assert_eq!(item_of("[memcpy HtoD]", "memory"), Item::Copy);
        assert_eq!(item_of("gemm", "gemm"), Item::Kernel);
        let g = (rule(Item::Graph).action)("[cuda graph 1]", 1.0, None, NSIGHT_COMPUTE);
        assert!(g.contains("--cuda-graph-trace=node"), "{g}");
    }
}
