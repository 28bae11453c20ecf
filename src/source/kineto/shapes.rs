//! Operator input shapes (`args["Input Dims"]`, written when the profiler ran with
//! `record_shapes`): the array as compact JSON text (so equal shapes intern to one id
//! whatever the writer's indentation) and the first dimension of the first input, the
//! token count M of a linear layer's `[M, K]` activation (docs/kineto-format.md §11).

/// `raw` without the whitespace between its tokens (strings are copied unchanged).
pub(crate) fn compact(raw: &[u8], out: &mut String) {
    out.clear();
    let mut in_str = false;
    let mut escaped = false;
    for &b in raw {
        if in_str {
            escaped = !escaped && b == b'\\';
            if b == b'"' && !escaped {
                in_str = false;
            }
        } else if b == b'"' {
            in_str = true;
        } else if b.is_ascii_whitespace() {
            continue;
        }
        out.push(char::from(b));
    }
    // A shape array is ASCII; anything else is carried over as the lossy text.
    if !raw.is_ascii() {
        out.clear();
        out.push_str(&String::from_utf8_lossy(raw));
    }
}

/// The largest first dimension read: a tensor dimension beyond 2^31 − 1 elements is not
/// from a model that runs (real traces hold flattened index tensors of 4M), and 10^15
/// must never become a token count that is priced.
pub(crate) const MAX_FIRST_DIM: i64 = i32::MAX as i64;

/// The first integer of the first inner array of a compact `[[a, …], …]`: -1 when the
/// first input has no dimensions (a scalar, `[]`), the text is not such an array, or the
/// dimension is not a whole number in 0..=[`MAX_FIRST_DIM`] (`1.5`, `1e15`, `-3`).
pub fn first_dim(compact: &str) -> i64 {
    let Some(rest) = compact.strip_prefix("[[") else {
        return -1;
    };
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    // The number must end the dimension: `1.5` or `1e15` is not a count of tokens.
    if !matches!(rest[end..].chars().next(), Some(',' | ']')) {
        return -1;
    }
    match rest[..end].parse::<i64>() {
        // 0 is a real (empty) dimension; batch evidence needs more than 0 anyway.
        Ok(v) if (0..=MAX_FIRST_DIM).contains(&v) => v,
        _ => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_printed_dims_compact_to_one_text() {
        let mut s = String::new();
        compact(b"[\n  [\n    512\n  ],\n  [],\n  [4096, 8]\n]", &mut s);
        assert_eq!(s, "[[512],[],[4096,8]]");
        compact(br#"["a b", [1]]"#, &mut s);
        assert_eq!(s, r#"["a b",[1]]"#);
    }

    #[test]
    fn first_dimension_of_the_first_input() {
        assert_eq!(first_dim("[[32,4096],[4096,4096],[4096]]"), 32);
        assert_eq!(first_dim("[[2,128,4096]]"), 2);
        assert_eq!(first_dim("[[],[1]]"), -1);
        assert_eq!(first_dim("[]"), -1);
        assert_eq!(first_dim("[[x]]"), -1);
        assert_eq!(first_dim("[[1.5,4096]]"), -1);
        assert_eq!(first_dim("[[1e15,4096]]"), -1);
        assert_eq!(first_dim("[[1000000000000000,4096]]"), -1);
        assert_eq!(first_dim("[[-3,4096]]"), -1);
        assert_eq!(first_dim("[[2147483648]]"), -1);
        assert_eq!(first_dim("[[4194304],[],[888]]"), 4_194_304);
    }
}
