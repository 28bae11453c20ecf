//! What a command decided from its flags, as plain data built once: how to find steps,
//! which of them to keep, what a launch costs, the kernel categories and the floor inputs.

use std::path::PathBuf;

use regex::Regex;

use crate::categories::Categorizer;
use crate::roofline::options::{GpuOptions, ModelOptions};
use crate::source::LoadOptions;
use crate::timing::steps::{StepOptions, StepSource};
use crate::wire::attribution::LaunchCost;
use crate::wire::roofline::{FloorOptions, MoeRouting};
use crate::wire::steps::StepKind;

/// Kernel rows kept per step when a command has no `--top` of its own (the `steps --top`
/// default): baselines, exports and `analyze`. Attribution names the first of them.
pub(crate) const TOP_KERNELS: usize = 5;

/// Everything step finding, attribution and pricing need, decided once.
#[derive(Debug, Clone)]
pub struct StepsPlan {
    /// Step method (its regex compiled), idle-gap threshold, kernel rows kept per step.
    pub find: StepOptions,
    /// Only steps of this kind; None keeps every kind.
    pub kind: Option<StepKind>,
    /// The per-launch cost, already resolved (given, measured by launch-probe, or cited).
    pub launch_cost: LaunchCost,
    pub categories: Categorizer,
    pub floor: FloorPlan,
    /// Only the steps of this device (`analyze --device N`), kept before anything is
    /// summarised, grouped or priced; None keeps every device.
    pub device: Option<i64>,
}

impl StepsPlan {
    /// What the loader must read for this step method: host calls always, and only the
    /// NVTX ranges the method can use (Kineto keeps every annotation).
    pub(crate) fn load_options(&self) -> LoadOptions {
        let filter = self.range_filter();
        self.find.read(LoadOptions {
            calls: true,
            ranges: filter.is_some(),
            range_filter: filter,
            range_filter_domains: matches!(self.find.source, StepSource::Regex(_)),
            // DRAM-throughput samples, where the report has them: the per-class shape
            // then rests on a counter.
            gpu_metrics: true,
            ..LoadOptions::all()
        })
    }

    /// GPU ops only, on the plan's threads (`analyze` without steps).
    pub(crate) fn ops_only_options(&self) -> LoadOptions {
        self.find.read(LoadOptions::ops_only())
    }

    /// A second read of the Python frames of at least `min_ns`, on the plan's threads.
    pub(crate) fn python_frames_options(&self, min_ns: i64) -> LoadOptions {
        self.find.read(LoadOptions::python_frames(min_ns))
    }

    /// Whether the steps' batch may be read from the capture: a model is priced and no
    /// `--batch` gives it.
    pub(crate) fn infers_batch(&self) -> bool {
        self.floor.model.is_some() && self.floor.batch.is_none()
    }

    /// What a second read takes when unnamed decode steps need their batch: the ops with
    /// their launch grids, and the input shapes. Read only then, so a report whose step
    /// names state the batch (the common case) never pays for these columns.
    pub(crate) fn batch_evidence_options(&self) -> LoadOptions {
        self.find.read(LoadOptions {
            geometry: true,
            shapes: true,
            ..LoadOptions::ops_only()
        })
    }

    /// The range names the method can use, or None when it reads no ranges (a regex
    /// source's own compiled pattern, shared by a clone).
    fn range_filter(&self) -> Option<Regex> {
        self.find.source.ranges()
    }
}

/// The model and GPU to price steps against, as the flags gave them.
#[derive(Debug, Clone, Default)]
pub struct FloorPlan {
    /// The model (preset or config.json); None prices nothing.
    pub model: Option<ModelOptions>,
    /// GPU preset key; None: the GPU the report names.
    pub gpu: Option<String>,
    /// A measured HBM bandwidth replacing the datasheet's, bytes/s.
    pub hbm_bytes_per_s: Option<f64>,
    /// Tensor-parallel degree; None: what the capture says, else 1.
    pub tp: Option<u32>,
    pub moe_routing: MoeRouting,
    /// Requests per step, for steps whose names do not say.
    pub batch: Option<u64>,
    /// Context per request, where names lack ΣN_KV.
    pub context: Option<u64>,
}

impl FloorPlan {
    /// The model as a baseline or a run records it: the preset key or the config's path.
    pub(crate) fn model_label(&self) -> Option<String> {
        let m = self.model.as_ref()?;
        m.preset
            .clone()
            .or_else(|| m.config.as_ref().map(|p| p.display().to_string()))
    }

    /// What the flags say about the operating point (None: not given), for
    /// [`crate::operating_point::resolve`] to put over what the capture says.
    pub fn given(&self) -> crate::operating_point::Given {
        crate::operating_point::Given {
            tp: self.tp,
            gpu: self.gpu.clone(),
            batch: self.batch,
            context: self.context,
            model: self.model.is_some(),
        }
    }

    /// The GPU as a baseline or a run records it: the `--gpu` key, else the report's name.
    pub(crate) fn gpu_label(&self, report_gpu: Option<&str>) -> Option<String> {
        self.gpu.clone().or_else(|| report_gpu.map(str::to_owned))
    }
}

/// The model, GPU and parallelism `floor` and `capacity` price, checked once (the flags'
/// `into_parts`).
#[derive(Debug, Clone)]
pub struct ModelGpu {
    pub model: ModelOptions,
    pub gpu: GpuOptions,
    pub floor: FloorOptions,
}

impl ModelGpu {
    /// What a `floor` or `capacity` document says it was derived from.
    pub fn source(&self) -> crate::wire::meta::ModelSource {
        crate::wire::meta::ModelSource {
            model: match &self.model.config {
                Some(p) => p.display().to_string(),
                None => self.model.preset_key().to_owned(),
            },
            gpu: self.gpu.key.clone(),
        }
    }
}

/// `--export DATASET --label …`: where `baseline record` and `gate` also append the run.
#[derive(Debug, Clone)]
pub struct ExportPlan {
    pub dataset: PathBuf,
    /// `key=value` labels, checked when the plan was made.
    pub labels: crate::dataset::Labels,
    /// How a remote dataset is reached.
    pub store: crate::store::StoreConfig,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::steps::StepSource;

    fn plan(source: StepSource) -> StepsPlan {
        StepsPlan {
            find: StepOptions {
                source,
                ..StepOptions::default()
            },
            kind: None,
            launch_cost: LaunchCost::default(),
            categories: Categorizer::default(),
            floor: FloorPlan::default(),
            device: None,
        }
    }

    /// Every read of a run, the first and each second one, is on the plan's threads.
    #[test]
    fn every_read_takes_the_plans_thread_count() {
        let mut p = plan(StepSource::Auto);
        p.find.workers = 3;
        let reads = [
            p.load_options(),
            p.ops_only_options(),
            p.python_frames_options(1),
            p.batch_evidence_options(),
        ];
        assert!(reads.iter().all(|o| o.threads == 3));
        // Each keeps what it reads: the threads are all the plan adds.
        assert!(reads[0].calls && !reads[1].calls && reads[3].geometry && reads[3].shapes);
        assert_eq!(reads[2].python_frames_min_ns, Some(1));
    }

    #[test]
    fn the_range_filter_follows_the_method() {
        let f = |s| plan(s).load_options();
        for s in [
            StepSource::Graphs,
            StepSource::Gaps,
            StepSource::Sync,
            StepSource::Python,
        ] {
            let o = f(s);
            assert!(o.calls && !o.ranges && o.range_filter.is_none());
        }
        let marker = f(StepSource::Marker).range_filter.unwrap();
        assert!(marker.is_match("execute_context_0(0)_generation_32(32)"));
        assert!(marker.is_match("ProfilerStep#6"));
        assert!(!marker.is_match("scheduler.run_batch"));
        let sched = f(StepSource::Scheduler).range_filter.unwrap();
        assert!(sched.is_match("scheduler.run_batch") && sched.is_match("Forward, seq = 3"));
        assert!(!sched.is_match("Forwarded"));
        let auto = f(StepSource::Auto).range_filter.unwrap();
        assert!(auto.is_match("step[DECODE bs=32]") && auto.is_match("gpu_model_runner: forward"));
        let re = Regex::new("^FSDP::").unwrap();
        let user = f(StepSource::Regex(re)).range_filter.unwrap();
        assert_eq!(user.as_str(), "^FSDP::");
    }

    #[test]
    fn labels_name_the_preset_or_the_config_and_the_gpu_flag_first() {
        let mut p = FloorPlan::default();
        assert_eq!(p.model_label(), None);
        p.model = Some(ModelOptions {
            config: Some(PathBuf::from("cfg/config.json")),
            ..ModelOptions::default()
        });
        assert_eq!(p.model_label().as_deref(), Some("cfg/config.json"));
        p.model = Some(ModelOptions {
            preset: Some("qwen3-8b".into()),
            ..ModelOptions::default()
        });
        assert_eq!(p.model_label().as_deref(), Some("qwen3-8b"));
        assert_eq!(
            p.gpu_label(Some("NVIDIA H100")).as_deref(),
            Some("NVIDIA H100")
        );
        p.gpu = Some("h100-sxm".into());
        assert_eq!(
            p.gpu_label(Some("NVIDIA H100")).as_deref(),
            Some("h100-sxm")
        );
    }
}
