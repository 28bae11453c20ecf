//! PyTorch's own step forms: `ProfilerStep#N`, `emit_nvtx`-wrapped decodes, and training
//! iterations (data loading, forward, backward with DDP all-reduces, optimizer step).

use super::{comp_kind, eager_kernels, meta};
use crate::synth::steps::host::{Host, SpanKind};
use crate::synth::workload::decode_kernels;
use crate::wire::synth::CompositionTruth;

/// `ProfilerStep#N`, back to back: each one ends where the next begins (the host moves on
/// without a gap because `profiler.step()` closes one and opens the next).
pub(super) fn profiler_step(h: &mut Host) {
    for n in 3..9 {
        let name = format!("ProfilerStep#{n}");
        h.begin(meta(Some(&name), "marker", "unknown"));
        h.open(SpanKind::Marker, &name);
        h.memcpy(1, 4_096);
        eager_kernels(h, 60, 12_000);
        h.copy_and_sync();
        h.idle(40_000);
        // close without the usual slack so the next one starts where this one ends.
        if let Some(i) = h.stack.pop() {
            h.spans[i].end = h.h;
        }
        h.end();
    }
}

pub(super) fn emit_nvtx(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(120)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let mut op_id = 40;
    for i in 0..6u64 {
        h.idle(200_000);
        let (new, cached) = if i == 0 { (3, 0) } else { (0, 3) };
        let base = format!("execute_new_{new}_cached_{cached}");
        let name = format!("{base}, op_id = {op_id}");
        op_id += 1;
        let mut m = meta(Some(&name), "marker", comp_kind(new, cached));
        m.composition = Some(CompositionTruth {
            context_requests: new,
            context_tokens: None,
            generation_requests: cached,
        });
        h.begin(m);
        h.open(SpanKind::Marker, &name);
        for k in 0..4 {
            let aten = format!(
                "aten::mm, seq = {}, op_id = {op_id}, sizes = [[3, 4096], [4096, 4096]]",
                100 + i * 4 + k
            );
            op_id += 1;
            h.open(SpanKind::NvtxOnly, &aten);
            h.kernel(graph[k as usize].0, 20_000);
            h.close();
        }
        if i > 0 {
            h.graph(&graph);
        } else {
            eager_kernels(h, 40, 30_000);
        }
        h.close();
        h.tail();
        h.copy_and_sync();
        h.end();
    }
}

/// PyTorch's own once-per-iteration names (`torch/utils/data/dataloader.py`,
/// `torch/optim/optimizer.py`).
const DATALOADER: &str = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
const ZERO_GRAD: &str = "Optimizer.zero_grad#SGD.zero_grad";
const OPTIMIZER_STEP: &str = "Optimizer.step#SGD.step";
/// The stream DDP's all-reduces run on, beside the compute stream.
const COMM_STREAM: i64 = 21;

/// A record_function as the capture writes it: under `emit_nvtx` (the only way it reaches
/// nsys) with its `, op_id = N` suffix, a new N each time.
fn record_function(h: &mut Host, nsys: bool, op_id: &mut u64, name: &str) {
    let full = if nsys {
        *op_id += 1;
        format!("{name}, op_id = {op_id}")
    } else {
        name.to_owned()
    };
    h.open(SpanKind::Marker, &full);
}

/// Backward on the autograd thread: `kernels` gradient kernels on the compute stream, and
/// after every fourth a bucket's all-reduce on the comm stream, which runs while the next
/// gradient kernels do.
fn backward(h: &mut Host, kernels: usize) {
    h.on_thread(h.pid + 1, "pt_autograd_0");
    for (k, spec) in decode_kernels(kernels).iter().enumerate() {
        h.kernel(
            &format!("{}_backward", spec.name),
            25_000 + 1_000 * (k % 3) as i64,
        );
        if k % 4 == 3 {
            h.on_stream(COMM_STREAM);
            h.kernel(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                60_000,
            );
            h.on_stream(crate::synth::steps::STREAM);
        }
    }
    h.on_thread(h.pid, "python3");
}

/// The optimizer update: SGD's foreach kernels inside `Optimizer.step#SGD.step`.
fn optimizer_step(h: &mut Host, nsys: bool, op_id: &mut u64) {
    record_function(h, nsys, op_id, OPTIMIZER_STEP);
    for _ in 0..3 {
        h.kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)", 9_000);
    }
    h.close();
}

pub(super) fn pytorch_train(h: &mut Host, nsys: bool) {
    let mut op_id = 1000;
    let step_name = format!("[cycle from {DATALOADER}]");
    // The capture starts inside an iteration: the rest of its backward and its optimizer
    // step come before the first `__next__` (outside steps).
    backward(h, 4);
    optimizer_step(h, nsys, &mut op_id);
    h.copy_and_sync();
    for _ in 0..6 {
        h.idle(60_000);
        h.begin(meta(Some(&step_name), "recurring", "unknown"));
        record_function(h, nsys, &mut op_id, DATALOADER);
        h.idle(150_000);
        h.close();
        h.memcpy(1, 1 << 20);
        // set_to_none: zero_grad launches nothing.
        record_function(h, nsys, &mut op_id, ZERO_GRAD);
        h.close();
        for spec in decode_kernels(10) {
            if nsys {
                op_id += 1;
                let aten = format!(
                    "aten::mm, seq = {op_id}, op_id = {op_id}, sizes = [[64, 4096], [4096, 4096]]"
                );
                h.open(SpanKind::NvtxOnly, &aten);
            }
            h.kernel(&spec.name, 30_000);
            if nsys {
                h.close();
            }
        }
        backward(h, 12);
        optimizer_step(h, nsys, &mut op_id);
        // loss.item(): the loss comes back and the host waits for every stream.
        h.copy_and_sync();
        h.end();
    }
    // The loop's last `__next__` raises StopIteration: an opener whose cycle never
    // completes, then a metrics copy after the loop (outside steps).
    h.idle(60_000);
    record_function(h, nsys, &mut op_id, DATALOADER);
    h.close();
    h.copy_and_sync();
}

pub(super) fn pytorch_train_unstable(h: &mut Host) {
    for i in 0..6 {
        h.idle(90_000);
        h.begin(meta(None, "sync", "unknown"));
        if i == 0 {
            h.open(SpanKind::Marker, ZERO_GRAD);
            h.close();
        }
        let order = if i % 2 == 0 {
            ["fetch", "decode"]
        } else {
            ["decode", "fetch"]
        };
        for n in order {
            h.open(SpanKind::Marker, n);
            h.idle(20_000);
            h.close();
        }
        h.memcpy(1, 2_048);
        eager_kernels(h, 40, 20_000);
        h.copy_and_sync();
        h.end();
    }
}
