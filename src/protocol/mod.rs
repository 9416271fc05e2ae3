//! RESP: the pure request parser and the reply encoder. No sockets, no keyspace.

pub mod reply;
pub mod request;

pub use reply::Reply;
pub use request::{encode_request, Args, OwnedArgs, Parsed, ProtocolError, RequestParser};
