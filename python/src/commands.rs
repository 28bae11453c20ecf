//! The tables each command's JSON document is cut into for Python (the command itself runs
//! in the library's command layer, `stepgate::embed`, which parses its flags).

use crate::table::Spec;

const STEPS_TABLES: &[Spec] = &[
    Spec {
        name: "steps",
        parent: "/steps",
        child: None,
        keep: &[],
    },
    Spec {
        name: "kernels",
        parent: "/steps",
        child: Some("top_kernels"),
        keep: &[("index", "step"), ("series", "series"), ("kind", "kind")],
    },
    Spec {
        name: "classes",
        parent: "/groups",
        child: Some("classes"),
        keep: &[("group", "group")],
    },
];

const ANALYZE_TABLES: &[Spec] = &[
    Spec {
        name: "devices",
        parent: "/devices",
        child: None,
        keep: &[],
    },
    Spec {
        name: "kernels",
        parent: "/devices",
        child: Some("kernels_by_name"),
        keep: &[("device", "device")],
    },
];

const GATE_TABLES: &[Spec] = &[
    Spec {
        name: "rows",
        parent: "/groups",
        child: Some("metrics"),
        keep: &[("label", "group")],
    },
    Spec {
        name: "kernels",
        parent: "/groups",
        child: Some("kernels"),
        keep: &[("label", "group")],
    },
    Spec {
        name: "waterfall",
        parent: "/groups",
        child: Some("waterfall"),
        keep: &[("label", "group")],
    },
];

const DOCTOR_TABLES: &[Spec] = &[Spec {
    name: "findings",
    parent: "/findings",
    child: None,
    keep: &[],
}];

/// The tables of `command`'s document (none for a command whose document is one object).
pub fn tables_of(command: &str) -> &'static [Spec] {
    match command {
        "steps" => STEPS_TABLES,
        "analyze" => ANALYZE_TABLES,
        "gate" | "diff" => GATE_TABLES,
        "doctor" => DOCTOR_TABLES,
        _ => &[],
    }
}
