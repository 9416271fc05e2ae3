//! The values a key can hold.

/// A stored value. Strings are binary-safe bytes, copied out of the read
/// buffer so a stored value never pins a client's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(Vec<u8>),
}

impl Value {
    /// The name TYPE replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
        }
    }
}
