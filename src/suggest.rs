//! "Did you mean …" for a misspelled name: the closest known name by optimal string
//! alignment distance (Levenshtein plus adjacent transpositions), case-insensitive, within
//! a bound that grows with the name's length, so a typo gets one suggestion and a name
//! from nowhere gets none.

/// The largest distance still taken for a typo of a name of `len` characters: one edit
/// per three characters, at least one (`h10` → `h100`, `lama-3-8b` → `llama-3-8b`), so
/// short unrelated names (`v100` against `h100` is 1 edit, but `xyz` against `h20` is 3)
/// are not offered as the same name.
fn bound(len: usize) -> usize {
    len.div_ceil(3).max(1)
}

/// Optimal string alignment distance between two strings, on lower-cased characters.
/// O(|a|·|b|) time and three rows of memory: names are short.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    // prev2 = row i-2, prev = row i-1, cur = row i; cell j = distance(a[..i], b[..j]).
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The known name closest to `input`, if one is within the typo bound; ties go to the
/// first in `known` (tables list the common parts first).
pub(crate) fn closest<'a>(
    input: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let input = input.trim();
    let limit = bound(input.chars().count());
    let mut best: Option<(usize, &'a str)> = None;
    for k in known {
        let d = distance(input, k);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// `" (did you mean `x`?)"` for the closest known name, or `""`: ready to splice into an
/// "unknown …" error message after the name.
pub(crate) fn did_you_mean<'a>(input: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(input, known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_by_hand() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        // One transposition is one edit (plain Levenshtein says 2).
        assert_eq!(distance("h100-sxm", "h100-smx"), 1);
        assert_eq!(distance("ab", "ba"), 1);
        // OSA, not full Damerau: "ca" → "abc" is 3 (no edits inside a transposed pair).
        assert_eq!(distance("ca", "abc"), 3);
        // Case does not count.
        assert_eq!(distance("MI300X", "mi300x"), 0);
        assert_eq!(distance("llama-3-8b", "lama-3-8b"), 1);
        // Non-ASCII counts characters, not bytes.
        assert_eq!(distance("µs", "us"), 1);
    }

    #[test]
    fn distance_is_symmetric() {
        let words = [
            "h100-sxm",
            "h100sxm",
            "a100-80gb",
            "qwen3-8b",
            "mi300x",
            "",
            "µ",
        ];
        for a in words {
            for b in words {
                assert_eq!(distance(a, b), distance(b, a), "{a} {b}");
            }
        }
    }

    #[test]
    fn closest_within_the_bound() {
        let gpus = [
            "h100-sxm",
            "h100-pcie",
            "h200",
            "h20",
            "mi300x",
            "a100-80gb",
        ];
        assert_eq!(closest("h100sxm", gpus), Some("h100-sxm"));
        assert_eq!(closest("H100-SMX", gpus), Some("h100-sxm"));
        assert_eq!(closest("mi300", gpus), Some("mi300x"));
        assert_eq!(closest("h2OO", gpus), Some("h200"));
        // Unrelated names get no suggestion.
        assert_eq!(closest("tpu-v5e", gpus), None);
        assert_eq!(closest("xyz", gpus), None);
        assert_eq!(closest("", gpus), None);
    }

    #[test]
    fn ties_go_to_the_first_listed() {
        // The nearer name wins whatever the order: "h2" is 1 edit from h20, 2 from h200.
        assert_eq!(closest("h2", ["h200", "h20"]), Some("h20"));
        // Equal distance: table order decides.
        assert_eq!(closest("ab", ["ax", "ay"]), Some("ax"));
        assert_eq!(closest("ab", ["ay", "ax"]), Some("ay"));
    }

    #[test]
    fn message_fragment() {
        assert_eq!(
            did_you_mean("qwen3-8", ["llama-3-8b", "qwen3-8b"]),
            " (did you mean `qwen3-8b`?)"
        );
        assert_eq!(did_you_mean("nothing-like-it", ["qwen3-8b"]), "");
    }
}
