//! The values a key can hold: owned (`Value`, moved in and out of the
//! keyspace) and borrowed (`ValueRef`, what lookups hand to commands).

use std::collections::VecDeque;

/// A stored value. Strings are binary-safe bytes, copied out of the read
/// buffer so a stored value never pins a client's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(Vec<u8>),
    /// A list: elements in order, pushes and pops at both ends O(1).
    List(VecDeque<Vec<u8>>),
}

/// A value borrowed from the keyspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueRef<'a> {
    Str(&'a [u8]),
    List(&'a VecDeque<Vec<u8>>),
}

impl Value {
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Str(s) => ValueRef::Str(s),
            Value::List(l) => ValueRef::List(l),
        }
    }
}

impl ValueRef<'_> {
    /// The name TYPE replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueRef::Str(_) => "string",
            ValueRef::List(_) => "list",
        }
    }

    pub fn to_owned(&self) -> Value {
        match self {
            ValueRef::Str(s) => Value::Str(s.to_vec()),
            ValueRef::List(l) => Value::List((*l).clone()),
        }
    }
}
