//! A serde `Serializer` that flattens one step into the `steps` table's column builders as
//! it is serialized: scalars become cells under their `_`-joined field path
//! (`composition.requests` → `composition_requests`), arrays become JSON text, and no JSON
//! tree of the step is ever built (a tree per step costs more than the table itself).

use std::fmt::{self, Display};

use serde::ser::{self, Serialize};

/// One serialized value, as the flattener hands it over.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scalar<'a> {
    Null,
    Int(i64),
    /// An unsigned integer beyond `i64::MAX` (JSON would call it a number, not an i64).
    Big(u64),
    /// Finite (non-finite floats arrive as `Null`, as JSON has them).
    Float(f64),
    Bool(bool),
    Str(&'a str),
}

/// Where the flattener writes: one cell per scalar under the current field path
/// (`dataset::columns::StepColumns` is the one sink; this trait keeps the flattener from
/// depending on the table it fills).
pub(crate) trait Sink {
    /// Go one field down; returns what [`Sink::leave`] needs to come back.
    fn enter(&mut self, name: &str) -> usize;
    fn leave(&mut self, len: usize);
    /// The buffer arrays are written into (taken while one is open).
    fn take_text(&mut self) -> Vec<u8>;
    fn give_text(&mut self, buf: Vec<u8>);
    /// A cell for the current field path.
    fn cell(&mut self, v: Scalar<'_>);
}

/// What the flattener can fail with: a value serde cannot serialize (a map key that is
/// not text or a number).
#[derive(Debug)]
pub struct FlatError(pub String);

impl Display for FlatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FlatError {}

impl ser::Error for FlatError {
    fn custom<T: Display>(msg: T) -> Self {
        FlatError(msg.to_string())
    }
}

type R = Result<(), FlatError>;

/// Serializes one value at the columns' current field path.
pub(crate) struct Flat<'a> {
    pub cols: &'a mut dyn Sink,
}

impl Flat<'_> {
    fn cell(self, v: Scalar<'_>) -> R {
        self.cols.cell(v);
        Ok(())
    }

    /// Serialize `v` one level down, under `name`.
    fn field<T: Serialize + ?Sized>(cols: &mut dyn Sink, name: &str, v: &T) -> R {
        let len = cols.enter(name);
        let r = v.serialize(Flat { cols: &mut *cols });
        cols.leave(len);
        r
    }
}

/// An array being written as JSON text, element by element (what `steps --format json`
/// prints for it).
pub struct Text<'a> {
    cols: &'a mut dyn Sink,
    buf: Vec<u8>,
    first: bool,
}

impl<'a> Text<'a> {
    fn new(cols: &'a mut dyn Sink) -> Self {
        let mut buf = cols.take_text();
        buf.clear();
        buf.push(b'[');
        Text {
            cols,
            buf,
            first: true,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        serde_json::to_writer(&mut self.buf, v).map_err(|e| FlatError(e.to_string()))
    }

    /// Close the array, store its text, and hand the columns back.
    fn finish(mut self) -> Result<&'a mut dyn Sink, FlatError> {
        self.buf.push(b']');
        // serde_json writes UTF-8 only.
        let text = std::str::from_utf8(&self.buf).unwrap_or("[]");
        self.cols.cell(Scalar::Str(text));
        self.cols.give_text(self.buf);
        Ok(self.cols)
    }

    fn end(self) -> R {
        self.finish().map(drop)
    }
}

/// A struct or map whose fields go one level down; `outer` is the path length to return to
/// for a variant (`{"Variant": …}`), which is one level itself.
pub(crate) struct Fields<'a> {
    cols: &'a mut dyn Sink,
    key: Option<String>,
    outer: Option<usize>,
}

impl ser::SerializeStruct for Fields<'_> {
    type Ok = ();
    type Error = FlatError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> R {
        Flat::field(self.cols, key, v)
    }
    fn end(self) -> R {
        if let Some(len) = self.outer {
            self.cols.leave(len);
        }
        Ok(())
    }
}

impl ser::SerializeStructVariant for Fields<'_> {
    type Ok = ();
    type Error = FlatError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> R {
        Flat::field(self.cols, key, v)
    }
    fn end(self) -> R {
        ser::SerializeStruct::end(self)
    }
}

impl ser::SerializeMap for Fields<'_> {
    type Ok = ();
    type Error = FlatError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
        self.key = Some(key.serialize(KeyText)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        let key = self.key.take().unwrap_or_default();
        Flat::field(self.cols, &key, v)
    }
    fn end(self) -> R {
        ser::SerializeStruct::end(self)
    }
}

macro_rules! text_seq {
    ($($t:ident, $m:ident);*) => {$(
        impl ser::$t for Text<'_> {
            type Ok = ();
            type Error = FlatError;
            fn $m<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
                self.element(v)
            }
            fn end(self) -> R {
                Text::end(self)
            }
        }
    )*};
}

text_seq!(SerializeSeq, serialize_element; SerializeTuple, serialize_element;
    SerializeTupleStruct, serialize_field);

/// A tuple variant: `{"Variant": [..]}`, the array one level down.
pub(crate) struct VariantText<'a> {
    text: Text<'a>,
    outer: usize,
}

impl ser::SerializeTupleVariant for VariantText<'_> {
    type Ok = ();
    type Error = FlatError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.text.element(v)
    }
    fn end(self) -> R {
        self.text.finish()?.leave(self.outer);
        Ok(())
    }
}

impl<'a> ser::Serializer for Flat<'a> {
    type Ok = ();
    type Error = FlatError;
    type SerializeSeq = Text<'a>;
    type SerializeTuple = Text<'a>;
    type SerializeTupleStruct = Text<'a>;
    type SerializeTupleVariant = VariantText<'a>;
    type SerializeMap = Fields<'a>;
    type SerializeStruct = Fields<'a>;
    type SerializeStructVariant = Fields<'a>;

    fn serialize_bool(self, v: bool) -> R {
        self.cell(Scalar::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> R {
        self.cell(Scalar::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> R {
        self.cell(Scalar::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> R {
        self.cell(Scalar::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> R {
        self.cell(Scalar::Int(v))
    }
    fn serialize_u8(self, v: u8) -> R {
        self.cell(Scalar::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> R {
        self.cell(Scalar::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> R {
        self.cell(Scalar::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> R {
        self.cell(match i64::try_from(v) {
            Ok(i) => Scalar::Int(i),
            Err(_) => Scalar::Big(v),
        })
    }
    fn serialize_f32(self, v: f32) -> R {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> R {
        // JSON has no NaN or infinity: serde_json writes null, and so does the table.
        self.cell(if v.is_finite() {
            Scalar::Float(v)
        } else {
            Scalar::Null
        })
    }
    fn serialize_char(self, v: char) -> R {
        let mut b = [0u8; 4];
        self.cell(Scalar::Str(v.encode_utf8(&mut b)))
    }
    fn serialize_str(self, v: &str) -> R {
        self.cell(Scalar::Str(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        // serde_json writes bytes as an array of numbers.
        let mut t = Text::new(self.cols);
        for b in v {
            t.element(b)?;
        }
        t.end()
    }
    fn serialize_none(self) -> R {
        self.cell(Scalar::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.cell(Scalar::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        self.cell(Scalar::Null)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R {
        self.cell(Scalar::Str(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> R {
        Flat::field(self.cols, variant, v)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Text<'a>, FlatError> {
        Ok(Text::new(self.cols))
    }
    fn serialize_tuple(self, _: usize) -> Result<Text<'a>, FlatError> {
        Ok(Text::new(self.cols))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Text<'a>, FlatError> {
        Ok(Text::new(self.cols))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<VariantText<'a>, FlatError> {
        let outer = self.cols.enter(variant);
        Ok(VariantText {
            text: Text::new(self.cols),
            outer,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Fields<'a>, FlatError> {
        Ok(Fields {
            cols: self.cols,
            key: None,
            outer: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields<'a>, FlatError> {
        self.serialize_map(None)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Fields<'a>, FlatError> {
        let outer = self.cols.enter(variant);
        Ok(Fields {
            cols: self.cols,
            key: None,
            outer: Some(outer),
        })
    }
}

/// A map key as text (serde_json accepts strings and numbers as keys, and so does this).
struct KeyText;

impl ser::Serializer for KeyText {
    type Ok = String;
    type Error = FlatError;
    type SerializeSeq = ser::Impossible<String, FlatError>;
    type SerializeTuple = ser::Impossible<String, FlatError>;
    type SerializeTupleStruct = ser::Impossible<String, FlatError>;
    type SerializeTupleVariant = ser::Impossible<String, FlatError>;
    type SerializeMap = ser::Impossible<String, FlatError>;
    type SerializeStruct = ser::Impossible<String, FlatError>;
    type SerializeStructVariant = ser::Impossible<String, FlatError>;

    fn serialize_str(self, v: &str) -> Result<String, FlatError> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, FlatError> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, FlatError> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, FlatError> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, FlatError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<String, FlatError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<String, FlatError> {
        self.serialize_i64(v.into())
    }
    fn serialize_u8(self, v: u8) -> Result<String, FlatError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<String, FlatError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<String, FlatError> {
        self.serialize_u64(v.into())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        v: &'static str,
    ) -> Result<String, FlatError> {
        Ok(v.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<String, FlatError> {
        v.serialize(self)
    }
    fn serialize_bool(self, _: bool) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_f32(self, _: f32) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_f64(self, _: f64) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_none(self) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_unit(self) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, FlatError> {
        Err(not_a_key())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, FlatError> {
        Err(not_a_key())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, FlatError> {
        Err(not_a_key())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, FlatError> {
        Err(not_a_key())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, FlatError> {
        Err(not_a_key())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, FlatError> {
        Err(not_a_key())
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, FlatError> {
        Err(not_a_key())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, FlatError> {
        Err(not_a_key())
    }
}

fn not_a_key() -> FlatError {
    FlatError("a map key that is not text or a number".into())
}
