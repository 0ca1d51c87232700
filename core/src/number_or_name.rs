//! Deserialising the small enums users write in config and JSON files either as a
//! number or as a name (`"priority": 1` or `"priority": "high"`, `"L3"` or `3`).

use core::fmt;
use core::marker::PhantomData;
use serde::de::{self, Deserializer, Visitor};

/// An enum that can be read from a small number or from its name.
pub(crate) trait NumberOrName: Sized {
    /// What the error message says was expected.
    const EXPECTING: &'static str;
    /// From the number, if it names a value.
    fn from_number(n: u8) -> Option<Self>;
    /// From the name (the implementation decides about case and spelling).
    fn from_name(name: &str) -> Option<Self>;
}

/// Reads a `T` from a number or a string; out-of-range numbers and unknown names are
/// errors that say what was expected.
pub(crate) fn deserialize<'de, T: NumberOrName, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(NumberOrNameVisitor(PhantomData))
}

struct NumberOrNameVisitor<T>(PhantomData<T>);

impl<T: NumberOrName> Visitor<'_> for NumberOrNameVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        u8::try_from(n)
            .ok()
            .and_then(T::from_number)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(n), &self))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        u8::try_from(n)
            .ok()
            .and_then(T::from_number)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Signed(n), &self))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        T::from_name(s).ok_or_else(|| E::invalid_value(de::Unexpected::Str(s), &self))
    }
}
