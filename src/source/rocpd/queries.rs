//! The one place that embeds `queries/rocpd/*.sql`: the fixed queries rocpd readers run
//! (nsys' fitted queries are in `source::nsys::queries`), each file saying what it reads.
//! Left inline on purpose: the one query built from a table and column name (a column's
//! minimum, for the time origin) and the `count(*)` that opens the read transaction.

/// RPD (schema 2): GPU ops with their launching call, its process and copy size.
pub(super) const RPD_OPS: &str = include_str!("../../../queries/rocpd/rpd_ops.sql");
/// RPD (schema 2): HIP calls and ROCTx ranges.
pub(super) const RPD_APIS: &str = include_str!("../../../queries/rocpd/rpd_apis.sql");
/// rocprofv3 (schema 3): kernel dispatches with device, process, name, link and geometry.
pub(super) const V3_DISPATCHES: &str = include_str!("../../../queries/rocpd/v3_dispatches.sql");
/// rocprofv3: memory copies, on the GPU that receives (or sends) them.
pub(super) const V3_COPIES: &str = include_str!("../../../queries/rocpd/v3_copies.sql");
/// rocprofv3: host regions (HIP calls and ROCTx ranges).
pub(super) const V3_REGIONS: &str = include_str!("../../../queries/rocpd/v3_regions.sql");
/// rocprofv3: the GPUs, one per `type_index`.
pub(super) const V3_GPUS: &str = include_str!("../../../queries/rocpd/v3_gpus.sql");
/// rocprofv3: process command lines.
pub(super) const V3_PROCESSES: &str = include_str!("../../../queries/rocpd/v3_processes.sql");
/// The schema version a rocpd database records.
pub(super) const SCHEMA_VERSION: &str = include_str!("../../../queries/rocpd/schema_version.sql");
/// Whether a table or view of a name exists.
pub(super) const TABLE_EXISTS: &str = include_str!("../../../queries/rocpd/table_exists.sql");
