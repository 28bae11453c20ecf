//! Rank slots for device and process ids: while reading, every device and CPU pid is
//! stored as `slot << 32 | raw`, so ids from different ranks never mix; at the end the
//! slot is stripped, or turned into a rank prefix where two ranks share a raw id.

/// Renumbering strides, used only when ranks collide: `rank * 1000 + device`,
/// `rank * 10_000_000 + pid` (Linux pids stay below 2^22).
pub(crate) const DEVICE_STRIDE: i64 = 1000;
pub(crate) const PID_STRIDE: i64 = 10_000_000;
const RAW_MASK: i64 = 0xffff_ffff;
/// The largest raw id kept: the trace stores ids in 32 signed bits (`trace::IdStore`).
const MAX_RAW: i64 = i32::MAX as i64;

/// Tag a raw id with its slot; negative ids (-1 = unknown) stay as they are. A raw id
/// of 2^31 or more has no room in the trace's 32-bit id columns (nor, from 2^32, beside
/// the slot): it becomes -1, unknown; callers check [`fits`] first to count such ids.
#[inline]
pub(crate) fn enc(slot: u32, raw: i64) -> i64 {
    if (0..=MAX_RAW).contains(&raw) {
        (i64::from(slot) << 32) | raw
    } else if raw < 0 {
        raw
    } else {
        -1
    }
}

/// Whether a raw id survives [`enc`] unchanged (negative = unknown, or below 2^31).
#[inline]
pub fn fits(raw: i64) -> bool {
    raw <= MAX_RAW
}

/// `(slot, raw)` of a tagged id.
#[inline]
pub fn dec(v: i64) -> (u32, i64) {
    if v < 0 {
        (0, v)
    } else {
        ((v >> 32) as u32, v & RAW_MASK)
    }
}

/// Whether one raw id occurs under two slots.
pub(crate) fn collides(mut ids: Vec<i64>) -> bool {
    ids.sort_unstable();
    ids.dedup();
    let mut raws: Vec<i64> = ids
        .into_iter()
        .filter(|v| *v >= 0)
        .map(|v| dec(v).1)
        .collect();
    let n = raws.len();
    raws.sort_unstable();
    raws.dedup();
    raws.len() != n
}

/// Strip the slot; with `ranks` (ids clash), prefix the slot's rank number instead.
pub(crate) fn renumber(v: i64, ranks: Option<&[i64]>, stride: i64) -> i64 {
    let (slot, raw) = dec(v);
    match ranks {
        Some(r) if v >= 0 => r[slot as usize].max(0) * stride + raw,
        _ => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_encoding_round_trips() {
        assert_eq!(dec(enc(3, 6583)), (3, 6583));
        assert_eq!(dec(enc(0, 9)), (0, 9));
        assert_eq!(enc(2, -1), -1);
        // 2^32 and 2^33 would decode as slots 1 and 2: they become unknown instead.
        assert_eq!(enc(0, 1 << 32), -1);
        assert_eq!(enc(5, 1 << 33), -1);
        assert!(fits(MAX_RAW) && !fits(MAX_RAW + 1));
        assert_eq!(enc(1, MAX_RAW + 1), -1);
        assert_eq!(dec(enc(1, MAX_RAW)), (1, MAX_RAW));
        assert!(!collides(vec![enc(0, 0), enc(1, 1), enc(0, 0)]));
        assert!(collides(vec![enc(0, 0), enc(1, 0)]));
        assert_eq!(renumber(enc(2, 5), Some(&[-1, 0, 2]), 1000), 2005);
        assert_eq!(renumber(enc(2, 5), None, 1000), 5);
    }
}
