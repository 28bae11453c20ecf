//! Plain-text primitives every layer may use (a leaf module): one-line error text, pretty
//! JSON, thousands separators and cutting a string to a length. The report layer re-exports
//! them; modules below it (baseline, dataset, operating_point) use them from here so that
//! they never reach up into `report`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// An error message as one line: libraries (regex, the argument parser) format theirs over
/// several lines with caret art under the offending text; keep the words, drop the art,
/// join with a space.
pub fn one_line(msg: &str) -> String {
    if !msg.contains('\n') && !msg.contains('\r') {
        return msg.to_owned();
    }
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == '~' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Pretty JSON with a trailing newline.
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("plain data always serializes");
    s.push('\n');
    s
}

/// [`to_json`] of `whole`, a struct whose last field, `key`, holds `items`: the other
/// fields are written as [`to_json`] writes them, the items in contiguous chunks on up to
/// `threads` threads joined in order, byte for byte what [`to_json`] writes (a
/// 10,000-step report is 48 MB of JSON, a tenth of the run on one thread). `None` when
/// `whole` is not a struct with `key` as its last field (the caller then uses
/// [`to_json`]).
pub fn to_json_last<H: serde::Serialize, T: serde::Serialize + Sync>(
    whole: &H,
    key: &str,
    items: &[T],
    threads: usize,
) -> Option<String> {
    let mut head = Vec::new();
    let (mut skipped, mut after) = (false, false);
    let mut ser = serde_json::Serializer::pretty(&mut head);
    let top = skip::Top {
        inner: &mut ser,
        key,
        skipped: &mut skipped,
        after: &mut after,
    };
    whole.serialize(top).ok()?;
    // The other fields, then `}` on a line of its own (none: `{}`, not this shape).
    let prefix = head.strip_suffix(b"\n}")?;
    if !skipped || after {
        return None;
    }
    let prefix = std::str::from_utf8(prefix).ok()?;
    let prefix = format!("{prefix},\n  \"{key}\": ");
    if items.is_empty() {
        return Some(format!("{prefix}[]\n}}\n"));
    }
    let mut out = Vec::with_capacity(prefix.len());
    out.extend_from_slice(prefix.as_bytes());
    out.push(b'[');
    let write = |c: &[T], first: bool, buf: &mut Vec<u8>| {
        for (i, item) in c.iter().enumerate() {
            // The separator and indent serde_json's pretty printer writes before an
            // element at depth 2.
            buf.extend_from_slice(if first && i == 0 {
                b"\n    "
            } else {
                b",\n    "
            });
            let mut ser = serde_json::Serializer::with_formatter(&mut *buf, Nested::at(2));
            item.serialize(&mut ser)
                .expect("plain data always serializes");
        }
    };
    if threads <= 1 {
        write(items, true, &mut out);
    } else {
        // Chunks of at least 64 items, several per thread, taken in order by the workers
        // and by this thread, which also appends every finished chunk in order as soon as
        // it can: the chunks held at once stay few, so the output costs what the serial
        // one does in memory.
        let chunk = items.len().div_ceil(threads * 8).max(64);
        let parts: Vec<&[T]> = items.chunks(chunk).collect();
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<Vec<u8>>>> = parts.iter().map(|_| Mutex::new(None)).collect();
        let slot = |k: usize| slots[k].lock().unwrap_or_else(|e| e.into_inner());
        let one = |k: usize| {
            let mut buf = Vec::new();
            write(parts[k], k == 0, &mut buf);
            *slot(k) = Some(buf);
        };
        let mut drained = 0;
        let mut drain = |out: &mut Vec<u8>| {
            while drained < parts.len() {
                let Some(b) = slot(drained).take() else { break };
                out.extend_from_slice(&b);
                drained += 1;
            }
        };
        std::thread::scope(|s| {
            for _ in 1..threads.min(parts.len()) {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= parts.len() {
                        break;
                    }
                    one(k);
                });
            }
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= parts.len() {
                    break;
                }
                one(k);
                drain(&mut out);
            }
        });
        drain(&mut out);
    }
    out.extend_from_slice(b"\n  ]\n}\n");
    Some(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// A serializer that writes a struct without one of its fields, and says whether it met
/// that field and any field after it.
mod skip {
    use serde::ser::{Error, Impossible, SerializeStruct, Serializer};
    use serde::Serialize;

    pub(super) struct Top<'a, S> {
        pub(super) inner: S,
        pub(super) key: &'a str,
        pub(super) skipped: &'a mut bool,
        pub(super) after: &'a mut bool,
    }

    pub(super) struct Fields<'a, C> {
        inner: C,
        key: &'a str,
        skipped: &'a mut bool,
        after: &'a mut bool,
    }

    impl<C: SerializeStruct> SerializeStruct for Fields<'_, C> {
        type Ok = C::Ok;
        type Error = C::Error;

        fn serialize_field<V: ?Sized + Serialize>(
            &mut self,
            key: &'static str,
            value: &V,
        ) -> Result<(), C::Error> {
            if key == self.key {
                *self.skipped = true;
                return Ok(());
            }
            *self.after |= *self.skipped;
            self.inner.serialize_field(key, value)
        }

        fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
            self.inner.skip_field(key)
        }

        fn end(self) -> Result<C::Ok, C::Error> {
            self.inner.end()
        }
    }

    /// Anything but a struct: not the shape `to_json_last` splits.
    macro_rules! refuse {
        ($($f:ident($($t:ty),*)),* $(,)?) => {
            $(fn $f(self, $(_: $t),*) -> Result<S::Ok, S::Error> {
                Err(S::Error::custom("not a struct"))
            })*
        };
    }

    impl<'a, S: Serializer> Serializer for Top<'a, S> {
        type Ok = S::Ok;
        type Error = S::Error;
        type SerializeSeq = Impossible<S::Ok, S::Error>;
        type SerializeTuple = Impossible<S::Ok, S::Error>;
        type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
        type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
        type SerializeMap = Impossible<S::Ok, S::Error>;
        type SerializeStruct = Fields<'a, S::SerializeStruct>;
        type SerializeStructVariant = Impossible<S::Ok, S::Error>;

        refuse!(
            serialize_bool(bool),
            serialize_i8(i8),
            serialize_i16(i16),
            serialize_i32(i32),
            serialize_i64(i64),
            serialize_u8(u8),
            serialize_u16(u16),
            serialize_u32(u32),
            serialize_u64(u64),
            serialize_f32(f32),
            serialize_f64(f64),
            serialize_char(char),
            serialize_str(&str),
            serialize_bytes(&[u8]),
            serialize_none(),
            serialize_unit(),
            serialize_unit_struct(&'static str),
            serialize_unit_variant(&'static str, u32, &'static str),
        );

        fn serialize_some<V: ?Sized + Serialize>(self, _: &V) -> Result<S::Ok, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_newtype_struct<V: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: &V,
        ) -> Result<S::Ok, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_newtype_variant<V: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &V,
        ) -> Result<S::Ok, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
            Err(S::Error::custom("not a struct"))
        }

        fn serialize_struct(
            self,
            name: &'static str,
            len: usize,
        ) -> Result<Self::SerializeStruct, S::Error> {
            Ok(Fields {
                inner: self.inner.serialize_struct(name, len)?,
                key: self.key,
                skipped: self.skipped,
                after: self.after,
            })
        }

        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, S::Error> {
            Err(S::Error::custom("not a struct"))
        }
    }
}

/// serde_json's `PrettyFormatter` (two spaces) starting at a given depth: its
/// `current_indent` is private, and an element of a nested array is written at depth 2.
struct Nested {
    depth: usize,
    has_value: bool,
}

impl Nested {
    fn at(depth: usize) -> Nested {
        Nested {
            depth,
            has_value: false,
        }
    }

    fn indent<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

// Arrays and objects open, close and start an item the same way; only the bracket differs.
impl Nested {
    fn open<W: ?Sized + std::io::Write>(&mut self, w: &mut W, b: &[u8]) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b)
    }

    fn close<W: ?Sized + std::io::Write>(&mut self, w: &mut W, b: &[u8]) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(b)
    }

    fn item<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }
}

impl serde_json::ser::Formatter for Nested {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// An integer with thousands separators.
pub fn fmt_int(v: i64) -> String {
    group_thousands(&v.to_string())
}

/// Insert `,` every three digits in the integer part of a decimal string.
pub fn group_thousands(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let (int, frac) = match rest.find('.') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let mut out = String::with_capacity(s.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}{frac}")
}

/// Cut a display name to `max` characters with an ellipsis.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::ser::SerializeStruct;
    use serde_json::{json, Value};

    /// A struct of three fields, `items` last or first (written by hand: serialized
    /// types are derived in `wire` only).
    struct Doc<'a> {
        items: &'a [Value],
        last: bool,
    }

    impl serde::Serialize for Doc<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut st = s.serialize_struct("Doc", 3)?;
            if !self.last {
                st.serialize_field("items", self.items)?;
            }
            st.serialize_field("head", &7)?;
            st.skip_field("skipped")?;
            st.serialize_field("list", &[1, 2])?;
            if self.last {
                st.serialize_field("items", self.items)?;
            }
            st.end()
        }
    }

    /// Every item count (0, 1, below, at and beyond a chunk) and thread count gives the
    /// bytes serde_json's pretty printer writes for the whole document.
    #[test]
    fn parallel_tail_is_byte_identical_to_the_serial_json() {
        let item = |id: usize| {
            json!({
                "id": id,
                "name": format!("k\u{e9}\"rnel\n{id}"),
                "empty": [],
                "nested": [[], [1.5, -0.0, 1e300], [id as f64]],
                "none": null,
                "obj": {"a": [1, 2], "b": []},
                "empty_obj": {},
            })
        };
        for n in [0, 1, 2, 63, 64, 65, 129, 1000] {
            let items: Vec<Value> = (0..n).map(item).collect();
            let doc = Doc {
                items: &items,
                last: true,
            };
            let want = to_json(&doc);
            for threads in [1, 2, 3, 8] {
                let got = to_json_last(&doc, "items", &items, threads);
                assert_eq!(got.as_deref(), Some(want.as_str()), "{n} items, {threads}");
            }
        }
        // Not the last field, not a field, not a struct: the caller's fallback.
        let items = [item(0)];
        let first = Doc {
            items: &items,
            last: false,
        };
        assert_eq!(to_json_last(&first, "items", &items, 2), None);
        assert_eq!(to_json_last(&first, "nope", &items, 2), None);
        assert_eq!(
            to_json_last(&json!({"items": []}), "items", &items, 2),
            None
        );
    }
}
