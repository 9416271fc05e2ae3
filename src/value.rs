//! The values a key can hold: owned (`Value`, moved in and out of the
//! keyspace) and borrowed (`ValueRef`, what lookups hand to commands).

/// A stored value. Strings are binary-safe bytes, copied out of the read
/// buffer so a stored value never pins a client's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(Vec<u8>),
}

/// A value borrowed from the keyspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueRef<'a> {
    Str(&'a [u8]),
}

impl Value {
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Str(s) => ValueRef::Str(s),
        }
    }
}

impl ValueRef<'_> {
    /// The name TYPE replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueRef::Str(_) => "string",
        }
    }

    pub fn to_owned(&self) -> Value {
        match self {
            ValueRef::Str(s) => Value::Str(s.to_vec()),
        }
    }
}
