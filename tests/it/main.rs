//! The one integration-test binary: each module tests one capability end to end.

// A panic in a test is a failed test (Cargo.toml denies unwrap outside tests).
#![allow(clippy::unwrap_used)]

mod action;
mod analyze;
mod architecture;
mod batch_inference;
mod capture;
mod capture_facts;
mod capture_hostile;
mod capture_readers;
mod cli;
mod common;
mod dataset;
mod decisions;
mod decisions_trend;
mod device_filter;
mod diagnosis;
mod doctor;
mod floor_capacity;
mod fuzz;
mod gate;
mod gate_comparable;
mod gate_power;
mod gate_words;
mod golden;
mod hostile_datasets;
mod hostile_numbers;
mod hostile_outputs;
mod hostile_pr;
mod hostile_reports;
mod html;
mod install;
mod kernel_families;
mod kineto;
mod kineto2021;
mod launch_probe;
mod no_correlation;
mod nsys_ingest;
mod object_store;
mod object_store_proxy;
mod operating_point;
mod perfetto;
mod policy_check;
mod real_nsys;
mod rocpd;
mod schema;
mod shapes;
mod steps;
mod steps_real;
mod steps_synth;
mod steps_train;
mod threads;
mod verdict_rules;
mod waterfall;
