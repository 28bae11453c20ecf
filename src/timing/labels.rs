//! Display labels for kernel names: the short name a report shows, and labels that tell
//! distinct demangled C++ names apart when they share a short name (template arguments
//! that differ, namespaces and casts stripped). Used by `analyze`, the step tables,
//! `compare` and the gate reports.

use std::collections::HashMap;

/// A readable display name: the source's short name when it has one, else the demangled
/// name cut before its argument list and template arguments.
pub(crate) fn display_name(short: &str, full: &str) -> String {
    if !short.is_empty() {
        return short.to_owned();
    }
    let mut s = full;
    if let Some(rest) = s.strip_prefix("void ") {
        s = rest;
    }
    let cut = s.find(['(', '<']).unwrap_or(s.len());
    let head = s[..cut].trim();
    if head.is_empty() {
        full.to_owned()
    } else {
        head.to_owned()
    }
}

/// Labels that tell distinct demangled names apart when they share a display name.
///
/// Two names that share a short name get the short name followed by the template
/// arguments that differ between them (namespaces, casts and lambda bodies stripped), e.g.
/// `vectorized_elementwise_kernel<FillFunctor<long>>`; names still equal after that get a
/// stable `#2`, `#3` suffix in full-name order. A name no other name shares its short name
/// with keeps its short name. Distinct full names never get the same label.
#[derive(Debug, Default, Clone)]
pub(crate) struct NameLabels {
    by_full: HashMap<String, String>,
}

impl NameLabels {
    /// Labels for every distinct `(full, short)` pair given (duplicates are fine).
    pub fn new<'a>(names: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut by_short: HashMap<&str, Vec<&str>> = HashMap::new();
        for (full, short) in names {
            let v = by_short.entry(short).or_default();
            if !v.contains(&full) {
                v.push(full);
            }
        }
        let mut by_full = HashMap::new();
        for (short, mut fulls) in by_short {
            if fulls.len() < 2 {
                continue;
            }
            fulls.sort_unstable();
            let args: Vec<Vec<String>> = fulls.iter().map(|f| template_args(f, short)).collect();
            let width = args.iter().map(Vec::len).max().unwrap_or(0);
            // Greedily add the argument position that separates the most names, until no
            // position separates more: the shortest label set that tells them apart.
            let distinct = |pos: &[usize]| {
                let mut keys: Vec<Vec<&str>> = args
                    .iter()
                    .map(|a| {
                        pos.iter()
                            .map(|&i| a.get(i).map_or("", String::as_str))
                            .collect()
                    })
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                keys.len()
            };
            let mut differs: Vec<usize> = Vec::new();
            let mut best = 1;
            loop {
                let pick = (0..width)
                    .filter(|i| !differs.contains(i))
                    .map(|i| {
                        let mut p = differs.clone();
                        p.push(i);
                        (distinct(&p), i)
                    })
                    .max_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
                match pick {
                    Some((n, i)) if n > best => {
                        best = n;
                        differs.push(i);
                    }
                    _ => break,
                }
            }
            differs.sort_unstable();
            let mut labels: Vec<String> = args
                .iter()
                .map(|a| {
                    let parts: Vec<&str> = differs
                        .iter()
                        .map(|&i| a.get(i).map_or("", String::as_str))
                        .collect();
                    if parts.iter().all(|p| p.is_empty()) {
                        return short.to_owned();
                    }
                    let mut inner = parts.join(", ");
                    // Keep labels table-sized (60 characters, ` #NN` included); the suffix
                    // pass below still separates any that the cut made equal.
                    let room = 56usize.saturating_sub(short.chars().count() + 2).max(12);
                    if inner.chars().count() > room {
                        inner = inner.chars().take(room - 1).collect::<String>() + "…";
                    }
                    format!("{short}<{inner}>")
                })
                .collect();
            // Still equal: a stable ordinal in full-name order (fulls are sorted).
            let mut seen: HashMap<String, usize> = HashMap::new();
            for l in &mut labels {
                let n = seen.entry(l.clone()).or_insert(0);
                *n += 1;
                if *n > 1 {
                    l.push_str(&format!(" #{n}"));
                }
            }
            for (f, l) in fulls.into_iter().zip(labels) {
                by_full.insert(f.to_owned(), l);
            }
        }
        NameLabels { by_full }
    }

    /// The label of `full`, or `short` when no other name shares it.
    pub fn get<'a>(&'a self, full: &str, short: &'a str) -> &'a str {
        self.by_full.get(full).map_or(short, String::as_str)
    }

    /// The labels by full name (only the names that needed telling apart), for the
    /// document a renderer reads.
    pub(crate) fn into_map(self) -> std::collections::BTreeMap<String, String> {
        self.by_full.into_iter().collect()
    }

    /// Whether any name needed telling apart.
    pub fn is_empty(&self) -> bool {
        self.by_full.is_empty()
    }
}

/// The top-level template arguments of `full` after its short name, simplified for a
/// label; the parameter list when it has no template arguments.
fn template_args(full: &str, short: &str) -> Vec<String> {
    let from = full.find(short).map_or(0, |i| i + short.len());
    let rest = &full[from..];
    let Some(open) = rest.find(['<', '(']) else {
        return Vec::new();
    };
    let close_ch = if rest.as_bytes()[open] == b'<' {
        '>'
    } else {
        ')'
    };
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut start = open + 1;
    for (i, ch) in rest.char_indices().skip_while(|(i, _)| *i <= open) {
        match ch {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' if depth > 0 => depth -= 1,
            c if c == close_ch && depth == 0 => {
                args.push(simplify_arg(&rest[start..i]));
                return args;
            }
            ',' if depth == 0 => {
                args.push(simplify_arg(&rest[start..i]));
                start = i + ch.len_utf8();
            }
            _ => {}
        }
    }
    args.push(simplify_arg(&rest[start..]));
    args
}

/// One template argument made short: no `void`, no casts like `(int)`, no function
/// signature or lambda body after a callable's name, no namespace qualifiers.
fn simplify_arg(arg: &str) -> String {
    let mut s = arg.trim().trim_start_matches("void ").to_owned();
    for cast in [
        "(int)",
        "(unsigned long)",
        "(unsigned int)",
        "(long)",
        "(bool)",
        "(char)",
    ] {
        s = s.replace(cast, "");
    }
    // `f<…>(params)::[lambda …]` → `f<…>`: the signature is noise next to the name.
    let mut depth = 0i32;
    for (i, ch) in s.char_indices() {
        match ch {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 && i > 0 => {
                s.truncate(i);
                break;
            }
            _ => {}
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        out.push_str(token);
        token.clear();
    };
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            // A qualifier: drop the identifier (or `<unnamed>`) before `::`.
            token.clear();
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            token.push(c);
        } else if c == '<' && token.is_empty() && s.contains("<unnamed>::") {
            // `<unnamed>` is a qualifier when followed by `::`; collect it as a token.
            token.push(c);
        } else if c == '>' && token == "<unnamed" {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_short_names_are_told_apart() {
        let a = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, std::array<char *, (unsigned long)1>>(int, T2, T3)";
        let b = "void at::native::vectorized_elementwise_kernel<(int)2, at::native::FillFunctor<long>, std::array<char *, (unsigned long)1>>(int, T2, T3)";
        let c = "void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed>::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase &, T2)::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)";
        let d = "void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed>::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase &, T2)::[lambda(float) (instance 2)], std::array<char *, (unsigned long)2>>(int, T2, T3)";
        let s = "vectorized_elementwise_kernel";
        let l = NameLabels::new([(a, s), (b, s), (c, s), (d, s), ("gemm_x", "gemm"), (a, s)]);
        // The functor argument alone separates a, b and the pow pair: only it is shown.
        assert_eq!(
            l.get(a, s),
            "vectorized_elementwise_kernel<FillFunctor<float>>"
        );
        assert_eq!(
            l.get(b, s),
            "vectorized_elementwise_kernel<FillFunctor<long>>"
        );
        // c and d differ only inside the lambda: same simplified label, then an ordinal in
        // full-name order ("instance 1" < "instance 2").
        let lc = l.get(c, s);
        // Cut to 60 characters so a terminal table shows all of it.
        assert_eq!(
            lc,
            "vectorized_elementwise_kernel<pow_tensor_scalar_kernel…>"
        );
        assert_eq!(lc.chars().count() + " #2".len(), 59);
        assert_eq!(l.get(d, s), format!("{lc} #2"));
        // A name alone under its short name keeps it.
        assert_eq!(l.get("gemm_x", "gemm"), "gemm");
        assert_eq!(l.get("unseen", "short"), "short");
    }

    #[test]
    fn display_names() {
        assert_eq!(display_name("", "void flash::fwd<128>(int)"), "flash::fwd");
        assert_eq!(display_name("gemm", "void cutlass::Kernel<...>"), "gemm");
        assert_eq!(display_name("", "[memcpy HtoD]"), "[memcpy HtoD]");
    }
}
