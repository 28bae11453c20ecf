//! How the builders store a row's fields: ids narrowed to the trace's 32 bits (or kept
//! at 64 while a reader still needs the room), enums as integers, and each column's
//! vector handed to polars without a copy.

use polars::prelude::*;

use super::{CallApi, OpKind, RangeKind};

/// How a row's field is stored in its column (enums and flags as small integers, ids
/// narrowed to 32 bits).
pub trait Store<R> {
    /// The stored value; `out_of_range` counts ids that do not fit.
    fn store(v: R, out_of_range: &mut u64) -> Self;
}

impl Store<i64> for i64 {
    #[inline]
    fn store(v: i64, _: &mut u64) -> i64 {
        v
    }
}

impl Store<u32> for u32 {
    #[inline]
    fn store(v: u32, _: &mut u64) -> u32 {
        v
    }
}

impl Store<OpKind> for u32 {
    #[inline]
    fn store(k: OpKind, _: &mut u64) -> u32 {
        k as u32
    }
}

impl Store<RangeKind> for u32 {
    #[inline]
    fn store(k: RangeKind, _: &mut u64) -> u32 {
        k as u32
    }
}

impl Store<CallApi> for u32 {
    #[inline]
    fn store(k: CallApi, _: &mut u64) -> u32 {
        k as u32
    }
}

impl Store<i64> for i32 {
    #[inline]
    fn store(v: i64, out_of_range: &mut u64) -> i32 {
        i32::try_from(v).unwrap_or_else(|_| {
            *out_of_range += 1;
            -1
        })
    }
}

/// The storage of a builder's id columns while it is filled: `i32` (the trace's own) or
/// `i64` (a reader that narrows at the end).
pub trait IdStore: Copy + Default + std::fmt::Debug + Store<i64> + private::Sealed {
    /// The trace's 32-bit column of these ids (narrowing i64 ids, out-of-range as -1).
    fn id_column(name: &str, v: Vec<Self>) -> Column;
    /// How many of these ids will not fit the 32-bit column.
    fn count_wide(v: &[Self]) -> u64;
}

mod private {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

impl IdStore for i32 {
    fn id_column(name: &str, v: Vec<i32>) -> Column {
        owned::<Int32Type>(name, v)
    }

    fn count_wide(_: &[i32]) -> u64 {
        0
    }
}

impl IdStore for i64 {
    fn id_column(name: &str, v: Vec<i64>) -> Column {
        let mut n = 0;
        let narrow: Vec<i32> = v.into_iter().map(|x| i32::store(x, &mut n)).collect();
        owned::<Int32Type>(name, narrow)
    }

    fn count_wide(v: &[i64]) -> u64 {
        v.iter().filter(|&&x| i32::try_from(x).is_err()).count() as u64
    }
}

/// A column's native type, and how its vector becomes a polars column.
pub(crate) trait Native: Sized {
    fn column(name: &str, v: Vec<Self>) -> Column;
}

impl Native for i64 {
    fn column(name: &str, v: Vec<i64>) -> Column {
        owned::<Int64Type>(name, v)
    }
}

impl Native for u32 {
    fn column(name: &str, v: Vec<u32>) -> Column {
        owned::<UInt32Type>(name, v)
    }
}

/// A column that takes over a builder's vector (`Column::new` from a `Vec` copies it: a
/// second 4M-row buffer per column, page faults and all, at the end of every load).
pub fn owned<T: PolarsNumericType>(name: &str, mut v: Vec<T::Native>) -> Column {
    // Return the growth slack (an in-place shrink for large blocks).
    v.shrink_to_fit();
    ChunkedArray::<T>::from_vec(name.into(), v).into_column()
}

/// A column's element type in a builder over id storage `I`: the marker [`Id`] is `I`,
/// any other type itself.
pub trait Elem<I> {
    type Out;
}

/// The marker of an id column in the builders' column lists.
#[derive(Debug)]
pub enum Id {}

impl<I> Elem<I> for Id {
    type Out = I;
}

macro_rules! elem_is_itself {
    ($($t:ty),+) => {
        $(impl<I> Elem<I> for $t {
            type Out = $t;
        })+
    };
}

elem_is_itself!(i64, u32);
