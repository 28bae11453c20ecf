//! The run-level medians the steps report prints under its tables (launches, exposed
//! communication, floor): computed once by the pipeline so that every renderer shows the
//! same numbers and none computes them.

use serde::{Deserialize, Serialize};

/// Medians over the steps with GPU work; each part is absent where no step has it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunMedians {
    /// The launch attribution's medians over the steps that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<LaunchMedians>,
    /// Exposed communication over the steps that communicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_comm: Option<ExposedCommMedians>,
    /// The floor's medians over the priced steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<FloorMedians>,
}

/// Medians of each step's `attribution.launch`, each taken on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaunchMedians {
    /// Steps with a launch attribution.
    pub steps: usize,
    /// Measured: host time inside launch calls.
    pub host_ns: f64,
    /// Derived: launches × per-launch cost.
    pub driver_floor_ns: f64,
    /// Derived: host time above the driver floor.
    pub framework_ns: f64,
    /// Host launch time / gap over the steps with a gap; absent when none has one.
    pub host_to_gap_ratio: Option<f64>,
}

/// Medians of `exposed_comm_ns` and of its share of the step's busy time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExposedCommMedians {
    /// Steps with a collective.
    pub steps: usize,
    /// Measured: collective time no other op of the step hides.
    pub ns: f64,
    /// Measured: its share of the step's busy time, over the steps with busy time.
    pub share_of_busy: Option<f64>,
}

/// The floor's medians over the priced steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FloorMedians {
    /// Priced steps measured at or above their floor (the MBU and floor/busy medians are
    /// over these).
    pub steps: usize,
    /// Derived: floor / wall; absent when every priced step is below its floor.
    pub mbu: Option<f64>,
    /// Derived: floor / busy, over the same steps as `mbu`.
    pub floor_over_busy: Option<f64>,
    /// Measured: gap / wall over every priced step.
    pub idle_share: Option<f64>,
    /// Priced steps measured below their floor (no MBU for them: the byte model is wrong).
    pub below_floor_steps: usize,
    /// What would make those steps plausible (the first step that says).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plausible_with: Vec<String>,
}
