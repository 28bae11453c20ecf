//! Steps: projection of host ranges onto the GPU, checked against hand-computed values
//! on small traces built row by row, and against the generator's own ground truth.

use stepgate::categories::Categorizer;
use stepgate::timing::stepname::StepKind;
use stepgate::timing::steps::{find_steps, StepOptions, StepSource};
use stepgate::trace::*;

struct B {
    i: Interner,
    ops: OpsBuilder,
    calls: CallsBuilder,
    ranges: RangesBuilder,
}

impl B {
    fn new() -> Self {
        B {
            i: Interner::default(),
            ops: OpsBuilder::default(),
            calls: CallsBuilder::default(),
            ranges: RangesBuilder::default(),
        }
    }
    fn range(&mut self, pid: i64, tid: i64, s: i64, e: i64, name: &str) {
        let n = self.i.intern(name);
        self.ranges.push(RangeRow {
            pid,
            tid,
            start_ns: s,
            end_ns: e,
            name_id: n,
            domain_id: 0,
            kind: RangeKind::HostPushPop,
        });
    }
    fn call(&mut self, pid: i64, tid: i64, s: i64, e: i64, name: &str, corr: i64) {
        let n = self.i.intern(name);
        self.calls.push(CallRow {
            pid,
            tid,
            start_ns: s,
            end_ns: e,
            name_id: n,
            correlation_id: corr,
            api: CallApi::Runtime,
            is_launch: is_launch_call(name),
        });
    }
    #[allow(clippy::too_many_arguments)]
    fn op(
        &mut self,
        pid: i64,
        dev: i64,
        stream: i64,
        s: i64,
        e: i64,
        name: &str,
        kind: OpKind,
        corr: i64,
    ) {
        let n = self.i.intern(name);
        self.ops.push(OpRow {
            device: dev,
            stream,
            pid,
            start_ns: s,
            end_ns: e,
            name_id: n,
            short_id: n,
            kind,
            correlation_id: corr,
            graph_node_id: -1,
            graph_id: -1,
            bytes: 0,
        });
    }
    fn trace(self) -> Trace {
        Trace {
            ops: self.ops.finish().unwrap(),
            calls: self.calls.finish().unwrap(),
            ranges: self.ranges.finish().unwrap(),
            devices: vec![],
            strings: self.i.into_strings(),
            meta: TraceMeta::new(SourceFormat::Nsys, "hand-built"),
        }
    }
}

const DECODE: &str =
    "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk65536sqsq32sqsk65536)";

fn hand_trace() -> Trace {
    let mut b = B::new();
    // Step A, eager: two launches and a copy.
    b.range(1, 11, 100, 1000, DECODE);
    b.call(1, 11, 110, 120, "cudaLaunchKernel_v7000", 1);
    b.call(1, 11, 130, 140, "cudaLaunchKernel_v7000", 2);
    b.call(1, 11, 150, 400, "cudaMemcpyAsync_v3020", 3);
    b.op(1, 0, 7, 500, 600, "k1", OpKind::Kernel, 1);
    b.op(1, 0, 7, 650, 700, "k2", OpKind::Kernel, 2);
    b.op(1, 0, 7, 700, 750, "[memcpy DtoH]", OpKind::Memcpy, 3);
    // Another process reuses correlation id 1: must not land in step A.
    b.op(2, 1, 7, 520, 580, "foreign", OpKind::Kernel, 1);
    // Step B, node-mode graph: three kernels share the launch's correlation id, two
    // overlap on different streams.
    b.range(1, 11, 2000, 3000, DECODE);
    b.call(1, 11, 2010, 2030, "cudaGraphLaunch_v10000", 10);
    b.op(1, 0, 7, 2100, 2200, "g1", OpKind::Kernel, 10);
    b.op(1, 0, 8, 2150, 2250, "g2", OpKind::Kernel, 10);
    b.op(1, 0, 7, 2300, 2400, "g1", OpKind::Kernel, 10);
    // Step C: a range that launched nothing.
    b.range(1, 11, 4000, 4100, DECODE);
    // A kernel with no launching call anywhere.
    b.op(1, 0, 9, 5000, 5100, "orphan", OpKind::Kernel, -1);
    b.trace()
}

#[test]
fn hand_built_steps_match_hand_computed_values() {
    let t = hand_trace();
    let r = find_steps(&t, &StepOptions::default(), &Categorizer::default()).unwrap();
    assert_eq!(r.method, "engine");
    assert_eq!(r.steps.len(), 3);
    assert_eq!(r.steps_without_gpu_work, 1);
    let a = &r.steps[0];
    assert_eq!(a.kind, StepKind::Decode);
    assert_eq!((a.gpu_start_ns, a.gpu_end_ns), (Some(500), Some(750)));
    assert_eq!(a.wall_ns, Some(250));
    assert_eq!(a.busy_ns, 200);
    assert_eq!(a.gap_ns, Some(50));
    assert_eq!(
        (a.kernels, a.ops, a.launches, a.launch_host_ns),
        (2, 3, 2, 20)
    );
    assert_eq!(a.cpu_ns, Some(900));
    assert_eq!(
        a.longest_host_call.as_ref().unwrap().name,
        "cudaMemcpyAsync_v3020"
    );
    assert_eq!(a.longest_host_call.as_ref().unwrap().dur_ns, 250);
    assert_eq!(a.period_ns, Some(2100 - 500));
    assert_eq!(a.idle_before_ns, None);
    let b = &r.steps[1];
    assert_eq!(b.wall_ns, Some(300));
    // [2100,2250) ∪ [2300,2400) = 150 + 100.
    assert_eq!(b.busy_ns, 250);
    assert_eq!((b.kernels, b.launches, b.launch_host_ns), (3, 1, 20));
    assert_eq!(b.idle_before_ns, Some(2100 - 750));
    assert_eq!(b.period_ns, None);
    // g1 twice: 100 + 100 exclusive; g2 only its 50 past g1's end.
    let g1 = b.top_kernels.iter().find(|k| k.name == "g1").unwrap();
    let g2 = b.top_kernels.iter().find(|k| k.name == "g2").unwrap();
    assert_eq!((g1.instances, g1.exclusive_ns, g1.total_ns), (2, 200, 200));
    assert_eq!((g2.instances, g2.exclusive_ns, g2.total_ns), (1, 50, 100));
    let c = &r.steps[2];
    assert_eq!((c.wall_ns, c.busy_ns, c.kernels), (None, 0, 0));
    // Summaries only count steps with GPU work.
    assert_eq!(r.summary.len(), 1);
    assert_eq!(r.summary[0].count, 2);
    assert_eq!(r.summary[0].wall_ns.unwrap().median, 275.0);
}

#[test]
fn graphs_and_gaps_modes() {
    let t = hand_trace();
    let opts = StepOptions {
        source: StepSource::Graphs,
        ..Default::default()
    };
    let r = find_steps(&t, &opts, &Categorizer::default()).unwrap();
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].busy_ns, 250);
    assert_eq!(r.steps[0].cpu_ns, Some(20));
    // Gaps of more than 1000 ns split device 0 into [500,750], [2100,2400], [5000,5100].
    let opts = StepOptions {
        source: StepSource::Gaps,
        gap_threshold_ns: 1000,
        ..Default::default()
    };
    let r = find_steps(&t, &opts, &Categorizer::default()).unwrap();
    let dev0: Vec<_> = r.steps.iter().filter(|s| s.device == Some(0)).collect();
    assert_eq!(dev0.len(), 3);
    assert_eq!(dev0[0].wall_ns, Some(250));
    assert_eq!(dev0[0].launches, 2);
    assert_eq!(dev0[1].launches, 1);
    assert_eq!(dev0[2].launches, 0);
}

#[test]
fn outer_range_is_the_step_and_keeps_the_inner_name() {
    let mut b = B::new();
    b.range(1, 11, 0, 1000, DECODE);
    b.range(1, 11, 10, 990, "step[DECODE bs=32]");
    b.call(1, 11, 20, 30, "cudaLaunchKernel_v7000", 1);
    b.call(1, 11, 5, 8, "cudaLaunchKernel_v7000", 2);
    b.op(1, 0, 7, 100, 200, "k", OpKind::Kernel, 1);
    b.op(1, 0, 7, 210, 260, "k0", OpKind::Kernel, 2);
    let t = b.trace();
    let r = find_steps(&t, &StepOptions::default(), &Categorizer::default()).unwrap();
    assert_eq!(r.steps.len(), 1);
    let s = &r.steps[0];
    assert_eq!(s.name, "step[DECODE bs=32]");
    // The outer range's launches count: both calls are inside [0, 1000].
    assert_eq!(s.launches, 2);
    assert_eq!(s.wall_ns, Some(160));
    let c = s.composition.as_ref().unwrap();
    assert_eq!(c.engine, "sglang");
    assert_eq!(c.sum_kv(), Some(65536));
}
