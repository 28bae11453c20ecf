//! `stepgate.history(DATASET)`: every table of a run-history dataset (`stepgate export`'s
//! Parquet layout) for the committed runs only, read through the dataset's own store and
//! checks (a run whose `runs` object is not written is not part of the dataset yet).

use std::path::Path;

use polars::prelude::DataFrame;
use stepgate::dataset::read::{decode, read_runs};
use stepgate::dataset::schema::TABLES;
use stepgate::dataset::store::{Store, StoreConfig};
use stepgate::exit::{Error, Result};

use crate::table::{Named, Table};

/// The dataset's tables (in [`TABLES`] order) and the warnings about runs left out.
pub fn read(dataset: &Path, store: &StoreConfig) -> Result<(Named, Vec<String>)> {
    let store = Store::open(dataset, store)?;
    let mut warnings = Vec::new();
    if !store.exists()? {
        return Err(Error::baseline(format!(
            "{}: no dataset there; write one with `stepgate export REPORT -o {}`",
            store.name(),
            dataset.display()
        )));
    }
    let runs = read_runs(&store, &mut warnings)?;
    let mut out = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        let keys: Vec<String> = runs
            .iter()
            .map(|r| {
                if table == "runs" {
                    r.runs_file.to_string_lossy().into_owned()
                } else {
                    r.table_file(table)
                }
            })
            .collect();
        let mut frame: Option<DataFrame> = None;
        for (key, bytes) in keys.iter().zip(store.get_many(&keys)?) {
            let name = store.name_of(key);
            // A committed run without one of its table files: the export wrote no row there
            // (a run without kernels has no step_kernels object).
            let Some(bytes) = bytes else { continue };
            let df = decode(&name, bytes, &[])?;
            match &mut frame {
                None => frame = Some(df),
                Some(f) => {
                    f.vstack_mut(&df).map_err(|e| {
                        Error::baseline(format!(
                            "{name}: its {table} table does not stack with the other runs' ({e}); \
                             run `stepgate dataset vacuum` or re-export the run"
                        ))
                    })?;
                }
            }
        }
        let t = match frame {
            Some(f) => Table::from_frame(f).map_err(Error::internal)?,
            None => Table::from_rows(&[], &[]),
        };
        out.push((table.to_owned(), t));
    }
    Ok((out, warnings))
}
