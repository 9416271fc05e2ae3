//! Lua values to RESP, as Redis 7.0 converts a script's result and the
//! replies it builds: numbers truncated to integers, tables as arrays up
//! to their first nil, `{ok=...}` and `{err=...}` as status and error
//! replies, RESP3's map, set, double and big-number tables.

use mlua::{Table, Value};

use super::libs::{lua_str_number, number_to_i64};
use crate::protocol::Reply;

/// Deepest nesting of a script's reply (Redis: "reached lua stack limit").
const MAX_REPLY_DEPTH: usize = 1_000;

/// `lua_tonumber`: a number, a numeric string's value, else 0.
pub(super) fn lua_to_number(value: &Value) -> f64 {
    match value {
        Value::Integer(n) => *n as f64,
        Value::Number(n) => *n,
        Value::String(s) => lua_str_number(&s.as_bytes()).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// `redis.error_reply`'s text as Redis builds it: `-` added if missing,
/// then the first word is the code (`ERR` when there is only one word).
pub(super) fn error_reply_text(message: &[u8]) -> Vec<u8> {
    let message = message.strip_prefix(b"-").unwrap_or(message);
    match message.iter().position(|&b| b == b' ') {
        Some(_) => message.to_vec(),
        None => [&b"ERR "[..], message].concat(),
    }
}

/// A script's result as the reply to its caller (Redis's Lua to RESP
/// conversion, in the caller's protocol). A boolean follows the script's
/// own protocol: under RESP2 (the default) `true` is 1 and `false` nil,
/// under `redis.setresp(3)` they are booleans.
pub(super) fn lua_to_reply(value: &Value, out: &mut Reply, lua_resp3: bool) {
    lua_to_reply_nested(value, out, (0, lua_resp3));
}

pub(super) fn lua_to_reply_nested(
    value: &Value,
    out: &mut Reply,
    (depth, lua_resp3): (usize, bool),
) {
    if depth > MAX_REPLY_DEPTH {
        out.error(b"ERR reached lua stack limit");
        return;
    }
    match value {
        Value::Nil => out.null(),
        Value::Boolean(b) if lua_resp3 => out.bool(*b),
        Value::Boolean(true) => out.int(1),
        Value::Boolean(false) => out.null(),
        Value::Integer(n) => out.int(*n),
        Value::Number(n) => out.int(number_to_i64(*n)),
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Table(t) => table_to_reply(t, out, (depth, lua_resp3)),
        _ => out.null(),
    }
}

pub(super) fn table_to_reply(t: &Table, out: &mut Reply, (depth, lua_resp3): (usize, bool)) {
    let inner = (depth + 1, lua_resp3);
    let field = |name: &str| t.raw_get::<Value>(name).unwrap_or(Value::Nil);
    if let Value::String(err) = field("err") {
        out.error(&err.as_bytes());
        return;
    }
    if let Value::String(ok) = field("ok") {
        out.buf.push(b'+');
        out.buf.extend(
            ok.as_bytes()
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        out.buf.extend_from_slice(b"\r\n");
        return;
    }
    if let Value::Number(d) = field("double") {
        out.double(d);
        return;
    }
    if let Value::String(big) = field("big_number") {
        // Line breaks would break the protocol: Redis maps them to spaces.
        let big: Vec<u8> = big
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        if out.resp3 {
            out.buf.push(b'(');
            out.buf.extend_from_slice(&big);
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(&big);
        }
        return;
    }
    if let Value::Table(verbatim) = field("verbatim_string") {
        let part = |name: &str| match verbatim.raw_get::<Value>(name) {
            Ok(Value::String(s)) => Some(s.as_bytes().to_vec()),
            _ => None,
        };
        if let (Some(format), Some(text)) = (part("format"), part("string")) {
            if out.resp3 {
                // Redis writes the first three bytes of the format,
                // padded with spaces.
                let mut head = [b' '; 3];
                for (slot, b) in head.iter_mut().zip(&format) {
                    *slot = *b;
                }
                let len = (text.len() + 4).to_string();
                out.buf.push(b'=');
                out.buf.extend_from_slice(len.as_bytes());
                out.buf.extend_from_slice(b"\r\n");
                out.buf.extend_from_slice(&head);
                out.buf.push(b':');
                out.buf.extend_from_slice(&text);
                out.buf.extend_from_slice(b"\r\n");
            } else {
                out.bulk(&text);
            }
            return;
        }
    }
    if let Value::Table(map) = field("map") {
        let pairs: Vec<(Value, Value)> =
            map.pairs::<Value, Value>().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in pairs {
            lua_to_reply_nested(&k, out, inner);
            lua_to_reply_nested(&v, out, inner);
        }
        return;
    }
    if let Value::Table(set) = field("set") {
        let members: Vec<Value> = set
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| k)
            .collect();
        out.set(members.len());
        for m in members {
            lua_to_reply_nested(&m, out, inner);
        }
        return;
    }
    // An array: elements 1..n up to the first nil.
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    out.array(items.len());
    for v in &items {
        lua_to_reply_nested(v, out, inner);
    }
}
