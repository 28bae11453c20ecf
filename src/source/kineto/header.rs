//! The trace object's keys other than `traceEvents` (docs/kineto-format.md §1, §9): time base, schema,
//! versions and `deviceProperties`. These values are small, so serde_json parses them.

use serde_json::Value;

use super::number::int_text;
use crate::wire::trace::{Distributed, ProcessGroup};

/// One `deviceProperties` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceProps {
    pub id: Option<i64>,
    pub name: Option<String>,
    pub sm_count: Option<i64>,
    pub total_memory_bytes: Option<i64>,
}

/// What one file's header says.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// `baseTimeNanoseconds` (current Kineto); absent in the old absolute-µs layout.
    pub base_time_ns: Option<i64>,
    /// The raw text of a `baseTimeNanoseconds` that is not an integer (`9e18`, `"x"`).
    pub base_time_unreadable: Option<String>,
    pub schema_version: Option<String>,
    /// `(key, value)` of the version fields, in file order.
    pub versions: Vec<(String, String)>,
    pub devices: Vec<DeviceProps>,
    /// `distributedInfo`, where the file has one.
    pub distributed: Option<Distributed>,
    pub saw_trace_events: bool,
}

/// Version keys Kineto and the engines write (docs/kineto-format.md §1).
const VERSION_KEYS: [&str; 7] = [
    "vllm_version",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "roctracer_version",
    "hip_runtime_version",
    "hip_driver_version",
];

impl Header {
    /// Take one top-level member (its raw JSON text).
    pub fn take(&mut self, key: &[u8], raw: &[u8]) {
        match key {
            b"baseTimeNanoseconds" => {
                self.base_time_ns = int_text(raw);
                if self.base_time_ns.is_none() {
                    self.base_time_unreadable = Some(String::from_utf8_lossy(raw).into_owned());
                }
            }
            b"schemaVersion" => self.schema_version = Some(scalar_text(raw)),
            b"deviceProperties" => {
                if let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(raw) {
                    self.devices = items.iter().map(device_props).collect();
                }
            }
            b"distributedInfo" => {
                if let Ok(v) = serde_json::from_slice::<Value>(raw) {
                    self.distributed = v.is_object().then(|| distributed(&v));
                }
            }
            _ => {
                let k = String::from_utf8_lossy(key);
                if VERSION_KEYS.contains(&k.as_ref()) {
                    self.versions.push((k.into_owned(), scalar_text(raw)));
                }
            }
        }
    }

    /// `tool_version` for [`crate::wire::trace::TraceMeta`]: the versions the trace records
    /// (Kineto writes no PyTorch version), e.g. `cupti 28, cuda_runtime 12090, …`.
    pub fn tool_version(&self) -> Option<String> {
        if self.versions.is_empty() {
            return None;
        }
        Some(
            self.versions
                .iter()
                .map(|(k, v)| format!("{} {v}", k.trim_end_matches("_version")))
                .collect::<Vec<_>>()
                .join(", "),
        )
    }
}

/// Version keys of serving engines among [`VERSION_KEYS`], with the engine they name.
const ENGINE_VERSION_KEYS: [(&str, &str); 1] = [("vllm", "vllm_version")];

/// The engine and its version in a trace's `tool_version` text (`vllm 0.6.3`), where
/// the trace recorded one: the gate compares it between the sides (an engine upgrade
/// changes step times without any kernel of the pull request changing).
pub fn engine_version_in(tool_version: &str) -> Option<String> {
    tool_version.split(", ").find_map(|item| {
        let (name, v) = item.split_once(' ')?;
        ENGINE_VERSION_KEYS
            .iter()
            .any(|(e, _)| *e == name)
            .then(|| format!("{name} {v}"))
    })
}

fn scalar_text(raw: &[u8]) -> String {
    match serde_json::from_slice::<Value>(raw) {
        Ok(Value::String(s)) => s,
        Ok(Value::Array(a)) => a
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("."),
        _ => String::from_utf8_lossy(raw).into_owned(),
    }
}

fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// `distributedInfo` (docs/kineto-format.md §9): what PyTorch's profiler records of
/// `torch.distributed` — backend, rank, world size, nccl version and the process groups.
fn distributed(v: &Value) -> Distributed {
    let rank = v.get("rank").and_then(as_i64);
    let groups = match v.get("pg_config") {
        Some(Value::Array(items)) => items.iter().map(process_group).collect(),
        _ => Vec::new(),
    };
    Distributed {
        backend: text(v, "backend"),
        rank,
        world_size: v.get("world_size").and_then(as_i64),
        nccl_version: text(v, "nccl_version"),
        pg_count: v.get("pg_count").and_then(as_i64),
        process_groups: groups,
        ranks: rank.into_iter().collect(),
    }
}

fn process_group(v: &Value) -> ProcessGroup {
    ProcessGroup {
        name: text(v, "pg_name").unwrap_or_default(),
        desc: text(v, "pg_desc"),
        backend_config: text(v, "backend_config"),
        size: v.get("pg_size").and_then(as_i64),
        ranks: rank_list(v.get("ranks")),
    }
}

/// `ranks`: a JSON array of integers (PyTorch), or the same written as a string
/// (`"[0, 1]"` or `"0,1"`, as Kineto's own writer does).
fn rank_list(v: Option<&Value>) -> Vec<i64> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(as_i64).collect(),
        Some(Value::String(s)) => s
            .split(|c: char| !(c.is_ascii_digit() || c == '-'))
            .filter_map(|t| t.parse().ok())
            .collect(),
        _ => Vec::new(),
    }
}

fn device_props(v: &Value) -> DeviceProps {
    DeviceProps {
        id: v.get("id").and_then(as_i64),
        name: v
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        sm_count: v.get("numSms").and_then(as_i64),
        total_memory_bytes: v.get("totalGlobalMem").and_then(as_i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_ranks_as_array_or_text() {
        let v: Value = serde_json::from_str(r#"[0, 1, 2]"#).unwrap();
        assert_eq!(rank_list(Some(&v)), vec![0, 1, 2]);
        let v: Value = serde_json::from_str(r#""[4, 5]""#).unwrap();
        assert_eq!(rank_list(Some(&v)), vec![4, 5]);
        let v: Value = serde_json::from_str(r#""6,7""#).unwrap();
        assert_eq!(rank_list(Some(&v)), vec![6, 7]);
        assert!(rank_list(None).is_empty());
    }

    #[test]
    fn header_fields() {
        let mut h = Header::default();
        h.take(b"baseTimeNanoseconds", b"1775078550000000000");
        h.take(b"schemaVersion", b"1");
        h.take(b"cupti_version", b"28");
        h.take(b"vllm_version", br#""0.33.0""#);
        h.take(
            b"deviceProperties",
            br#"[{"id": 0, "name": "", "totalGlobalMem": 206141652992, "numSms": 304}]"#,
        );
        h.take(
            b"distributedInfo",
            br#"{"backend": "nccl", "rank": 3, "world_size": 8}"#,
        );
        assert_eq!(h.base_time_ns, Some(1_775_078_550_000_000_000));
        assert_eq!(h.schema_version.as_deref(), Some("1"));
        assert_eq!(h.tool_version().as_deref(), Some("cupti 28, vllm 0.33.0"));
        assert_eq!(
            engine_version_in(&h.tool_version().unwrap()).as_deref(),
            Some("vllm 0.33.0")
        );
        assert!(ENGINE_VERSION_KEYS
            .iter()
            .all(|(_, k)| VERSION_KEYS.contains(k)));
        let d = h.distributed.as_ref().unwrap();
        assert_eq!(
            (d.rank, d.world_size, d.ranks.clone()),
            (Some(3), Some(8), vec![3])
        );
        assert_eq!(d.backend.as_deref(), Some("nccl"));
        assert!(d.process_groups.is_empty());
        assert_eq!(
            h.devices,
            vec![DeviceProps {
                id: Some(0),
                name: None,
                sm_count: Some(304),
                total_memory_bytes: Some(206_141_652_992)
            }]
        );
    }
}
