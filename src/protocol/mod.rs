//! RESP: the pure request parser and the reply encoder. No sockets, no keyspace.

pub mod reply;
pub mod request;

pub use reply::Reply;
pub use request::{encode_request, Args, OwnedArgs, Parsed, ProtocolError, RequestParser};

/// Appends `bytes` in double quotes with Redis's escapes (`sdscatrepr`):
/// backslash, quote, `\n`, `\r`, `\t`, `\a`, `\b`, and any other byte that
/// is not printable ASCII as `\xHH` (MONITOR, redis.conf, the AOF manifest).
pub fn repr(bytes: &[u8], out: &mut String) {
    out.push('"');
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            b if b.is_ascii_graphic() || b == b' ' => out.push(char::from(b)),
            b => {
                let _ = std::fmt::Write::write_fmt(out, format_args!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
}

/// A word as redis.conf and the AOF manifest write it: bare when it is
/// printable without quotes or backslashes, else `repr`.
pub fn word_repr(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\'' | b'\\'));
    if plain {
        return word.to_string();
    }
    let mut out = String::new();
    repr(word.as_bytes(), &mut out);
    out
}

/// A client's argument as C's `%.<max>s` prints it: the bytes up to the
/// first NUL, at most `max` of them. Redis formats user input into error
/// messages this way; the bytes themselves are kept, never re-encoded.
pub fn c_str(arg: &[u8], max: usize) -> &[u8] {
    let end = arg.iter().position(|&c| c == 0).unwrap_or(arg.len());
    &arg[..end.min(max)]
}

#[cfg(test)]
mod repr_tests {
    #[test]
    fn repr_escapes_as_redis_does() {
        let mut out = String::new();
        super::repr(b"va\"l\n\x01ue \\\x07\x08\t\r\xff", &mut out);
        assert_eq!(out, r#""va\"l\n\x01ue \\\a\b\t\r\xff""#);
        assert_eq!(super::word_repr("plain"), "plain");
        assert_eq!(super::word_repr(""), "\"\"");
        assert_eq!(super::word_repr("two words"), "\"two words\"");
    }
}
