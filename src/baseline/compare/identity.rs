//! Who each side is, and whether the two may be compared: same GPU, same model.

use crate::exit::{Error, Result};
use crate::wire::baseline::{Baseline, BaselineMeta, Group};
use crate::wire::gate::SideInfo;

pub(super) fn side_info(b: &Baseline) -> SideInfo {
    let m = &b.meta;
    SideInfo {
        gpu_name: m.gpu_name.clone(),
        model: m.model.clone(),
        engine: m.engine.clone(),
        nsys_version: m.nsys_version.clone(),
        source_format: m.source_format.clone(),
        created_by: m.created_by.clone(),
        groups: b.samples.groups.len(),
        steps: b.samples.groups.iter().map(Group::steps).sum(),
    }
}

/// The identity checks: same GPU, same model, or say why not.
pub(super) fn check_identity(
    b: &BaselineMeta,
    c: &BaselineMeta,
    strict: bool,
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    match (&b.gpu_name, &c.gpu_name) {
        (Some(x), Some(y)) if x != y => {
            let msg = format!("GPU mismatch: baseline ran on {x:?}, candidate on {y:?}");
            if strict {
                return Err(Error::input(format!(
                    "{msg}; gate against a baseline recorded on the same GPU (keep one per GPU)"
                )));
            }
            warnings.push(msg);
        }
        (None, Some(_) | None) | (Some(_), None) => {
            let which = match (&b.gpu_name, &c.gpu_name) {
                (None, None) => "neither side names its GPU",
                (None, _) => "the baseline names no GPU",
                _ => "the candidate names no GPU",
            };
            warnings.push(format!(
                "{which}: cannot check that both ran on the same GPU (pass --gpu when recording)"
            ));
        }
        _ => {}
    }
    match (&b.model, &c.model) {
        (Some(x), Some(y)) if x != y => {
            let msg = format!("model mismatch: baseline priced for {x:?}, candidate for {y:?}");
            if strict {
                return Err(Error::input(format!(
                    "{msg}; gate against a baseline recorded for the same model"
                )));
            }
            warnings.push(msg);
        }
        (Some(_), None) | (None, Some(_)) => warnings.push(
            "a model was given on one side only: MBU is not compared (give --model to both)"
                .to_owned(),
        ),
        _ => {}
    }
    Ok(warnings)
}
