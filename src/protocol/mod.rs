//! RESP: the pure request parser and the reply encoder. No sockets, no keyspace.

pub mod reply;
pub mod request;

pub use reply::{Encoded, Reply};
pub use request::{encode_request, Args, OwnedArgs, Parsed, ProtocolError, RequestParser};

use crate::words::{word8, word_of};

/// Whether `arg` (a client's word) equals `name` (a command or option
/// name) ignoring ASCII case, as Redis's `strcasecmp` lookups do: eight
/// bytes at a time, where `eq_ignore_ascii_case` lowers every byte of
/// both. Only bytes that are letters in `name` may differ, and only in
/// the case bit.
#[inline]
pub fn is_word(arg: &[u8], name: &[u8]) -> bool {
    let len = name.len();
    if arg.len() != len {
        return false;
    }
    if len <= 8 {
        return same_word(word_of(arg), word_of(name));
    }
    let mut at = 0;
    while at + 8 < len {
        if !same_word(word8(&arg[at..]), word8(&name[at..])) {
            return false;
        }
        at += 8;
    }
    // The last eight bytes (overlapping the loop's last, if need be).
    same_word(word8(&arg[len - 8..]), word8(&name[len - 8..]))
}

/// Two words of up to eight bytes equal but for the case of the letters
/// of `name`.
#[inline]
fn same_word(arg: u64, name: u64) -> bool {
    let case = case_bits(name);
    arg | case == name | case
}

/// The case bit (0x20) of each byte of `word` that is an ASCII letter:
/// `byte | 0x20` in `a..=z`, compared per byte by adding to seven bits
/// (no carry across bytes); a byte of 0x80 or more is none.
#[inline]
fn case_bits(word: u64) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = LOW * 0x80;
    let lower = (word | (LOW * 0x20)) & !HIGH;
    let at_least_a = lower + LOW * (0x80 - u64::from(b'a'));
    let past_z = lower + LOW * (0x80 - u64::from(b'z') - 1);
    (at_least_a & !past_z & !word & HIGH) >> 2
}

/// A word of up to eight bytes in upper case, as one number to match
/// against [`word`]s (option names read in one pass); `None` if longer,
/// or if it ends in a NUL byte (which would read as a shorter name).
#[inline]
pub fn upper_word(bytes: &[u8]) -> Option<u64> {
    if bytes.len() > 8 || bytes.last() == Some(&0) {
        return None;
    }
    let w = word_of(bytes);
    Some(w & !case_bits(w))
}

/// `name` (up to eight bytes) as [`upper_word`] reads it, for patterns.
pub const fn word(name: &[u8]) -> u64 {
    let mut w = 0u64;
    let mut i = 0;
    while i < name.len() {
        w |= (name[i] as u64) << (8 * i);
        i += 1;
    }
    w
}

/// A name of one to eight bytes exactly as a client sent it (case
/// kept): a pipeline repeating a command is recognised by one comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactWord {
    word: u64,
    len: usize,
}

impl ExactWord {
    #[inline]
    pub fn of(bytes: &[u8]) -> Option<ExactWord> {
        (1..=8).contains(&bytes.len()).then(|| ExactWord {
            word: word_of(bytes),
            len: bytes.len(),
        })
    }

    /// Whether `bytes` are these, byte for byte.
    #[inline]
    pub fn is(&self, bytes: &[u8]) -> bool {
        bytes.len() == self.len && word_of(bytes) == self.word
    }
}

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

#[cfg(test)]
mod tests {
    use super::is_word;

    /// `is_word` agrees with `eq_ignore_ascii_case` for every pair of
    /// words drawn from bytes around the letters' edges and the case bit,
    /// of every length up to 20.
    #[test]
    fn is_word_is_eq_ignore_ascii_case() {
        let edges = b"@AZ[`az{ \x00\x7f\x80\xc1\xe1\xff-|_0";
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(0x2545_f491_4f6c_dd1du64);
        let mut next = || rng.gen::<u64>();
        for _ in 0..200_000 {
            let len = (next() % 21) as usize;
            let name: Vec<u8> = (0..len)
                .map(|_| edges[(next() % edges.len() as u64) as usize])
                .collect();
            let mut arg = name.clone();
            // Change a byte or two, often only in the case bit.
            for _ in 0..(next() % 3) {
                if len > 0 {
                    let i = (next() % len as u64) as usize;
                    arg[i] = match next() % 3 {
                        0 => arg[i] ^ 0x20,
                        1 => arg[i].to_ascii_uppercase(),
                        _ => edges[(next() % edges.len() as u64) as usize],
                    };
                }
            }
            assert_eq!(
                is_word(&arg, &name),
                arg.eq_ignore_ascii_case(&name),
                "{arg:?} {name:?}"
            );
        }
        assert!(is_word(b"GetLease", b"getlease"));
        assert!(is_word(b"wait", b"WAIT"));
        assert!(!is_word(b"GET\r", b"get-"));
        assert!(!is_word(b"ge", b"get"));
        assert_eq!(super::upper_word(b"Stale"), Some(super::word(b"STALE")));
        assert_eq!(super::upper_word(b"px"), Some(super::word(b"PX")));
        assert_ne!(super::upper_word(b"p\x18"), Some(super::word(b"P8")));
        assert_eq!(super::upper_word(b"123456789"), None);
        assert_eq!(super::upper_word(b"EX\0"), None);
    }

    /// A name as sent matches exactly the same bytes, case included.
    #[test]
    fn an_exact_word_is_its_bytes() {
        use super::ExactWord;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let alphabet = b"gGeEtT\x00\xff";
        for _ in 0..100_000 {
            let mut draw = || -> Vec<u8> {
                let len = rng.gen_range(0..11);
                (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect()
            };
            let (a, b) = (draw(), draw());
            match ExactWord::of(&a) {
                Some(w) => assert_eq!(w.is(&b), a == b, "{a:?} {b:?}"),
                None => assert!(a.is_empty() || a.len() > 8),
            }
        }
        let get = ExactWord::of(b"GET").unwrap();
        assert!(get.is(b"GET") && !get.is(b"get") && !get.is(b"GET\0"));
    }
}
