//! The reply encoder: typed replies in, RESP2 or RESP3 bytes out.
//!
//! A `Reply` appends to a connection's output buffer; it never writes to a
//! socket. The protocol version only changes how nulls, maps, sets, doubles,
//! booleans and verbatim strings are framed, so handlers write one reply and
//! both protocols come out right.

/// Reply bytes fixed in advance, framed for each protocol: a constant
/// tail of a reply written in one copy instead of one write per element.
pub struct Encoded {
    pub resp2: &'static [u8],
    pub resp3: &'static [u8],
}

/// Output buffer of one connection plus the protocol it speaks.
#[derive(Debug, Default)]
pub struct Reply {
    /// Encoded bytes not yet written to the socket.
    pub buf: Vec<u8>,
    /// Bytes of `buf` already written (the flush resumes from here).
    pub sent: usize,
    /// True once the client switched to RESP3 with `HELLO 3`.
    pub resp3: bool,
}

impl Reply {
    pub fn pending(&self) -> usize {
        self.buf.len() - self.sent
    }

    /// Drops the bytes already written, keeping the allocation when it is
    /// small. A partly written buffer moves its rest to the front only once
    /// at least half of it was written: each byte is then moved at most as
    /// often as bytes were written, so a huge reply to a slow reader costs
    /// linear time, not a copy of the rest after every write.
    pub fn compact(&mut self) {
        if self.sent == self.buf.len() {
            self.buf.clear();
            self.sent = 0;
            // Don't let one huge reply pin its buffer forever.
            if self.buf.capacity() > 1024 * 1024 {
                self.buf = Vec::new();
            }
        } else if self.sent > 0 && self.sent >= self.buf.len() / 2 {
            self.buf.drain(..self.sent);
            self.sent = 0;
        }
    }

    /// Releases a buffer grown by past replies once everything is sent
    /// (Redis's `clientsCronResizeOutputBuffer`): an idle client keeps at
    /// most `IDLE_KEEP_BYTES`.
    pub fn shrink_idle(&mut self) {
        const IDLE_KEEP_BYTES: usize = 16 * 1024;
        if self.pending() == 0 && self.buf.capacity() > IDLE_KEEP_BYTES {
            self.buf = Vec::new();
            self.sent = 0;
        }
    }

    /// Bytes encoded in advance, in the client's protocol.
    #[inline]
    pub fn encoded(&mut self, bytes: &Encoded) {
        let bytes = if self.resp3 { bytes.resp3 } else { bytes.resp2 };
        self.buf.extend_from_slice(bytes);
    }

    #[inline]
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// `+<s>\r\n`; `s` must not contain CR or LF.
    pub fn simple(&mut self, s: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `-<msg>\r\n`, where `msg` starts with the error code (`ERR ...`).
    /// CR and LF in `msg` are replaced by spaces so user text can't break framing.
    pub fn error(&mut self, msg: &[u8]) {
        self.buf.push(b'-');
        self.buf.extend(
            msg.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn int(&mut self, n: i64) {
        self.prefixed_int(b':', n);
    }

    #[inline]
    pub fn bulk(&mut self, data: &[u8]) {
        self.prefixed_int(b'$', data.len() as i64);
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn bulk_int(&mut self, n: i64) {
        let mut tmp = [0u8; 20];
        let digits = format_i64(n, &mut tmp);
        self.bulk(digits);
    }

    /// The null bulk string: `$-1` in RESP2, `_` in RESP3.
    #[inline]
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// The null array: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    #[inline]
    pub fn array(&mut self, len: usize) {
        self.prefixed_int(b'*', len as i64);
    }

    /// An out-of-band push of `len` items (pub/sub messages): `>` in
    /// RESP3, a plain array in RESP2.
    pub fn push(&mut self, len: usize) {
        if self.resp3 {
            self.prefixed_int(b'>', len as i64);
        } else {
            self.array(len);
        }
    }

    /// A map of `pairs` entries: `%` in RESP3, a flat array in RESP2.
    pub fn map(&mut self, pairs: usize) {
        if self.resp3 {
            self.prefixed_int(b'%', pairs as i64);
        } else {
            self.array(pairs * 2);
        }
    }

    /// A set: `~` in RESP3, an array in RESP2.
    pub fn set(&mut self, len: usize) {
        if self.resp3 {
            self.prefixed_int(b'~', len as i64);
        } else {
            self.array(len);
        }
    }

    /// A boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
    pub fn bool(&mut self, value: bool) {
        if self.resp3 {
            self.buf
                .extend_from_slice(if value { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(i64::from(value));
        }
    }

    /// A double: `,` in RESP3, a bulk string in RESP2 (Redis's `%.17g` style).
    pub fn double(&mut self, value: f64) {
        self.double_text(&format_double(value));
    }

    /// A double already formatted (GEOPOS's long-double digits): `,` in
    /// RESP3, a bulk string in RESP2.
    pub fn double_text(&mut self, text: &str) {
        if self.resp3 {
            self.buf.push(b',');
            self.buf.extend_from_slice(text.as_bytes());
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text.as_bytes());
        }
    }

    /// Verbatim text (INFO, CLIENT LIST): `=<len>\r\ntxt:...` in RESP3, bulk in RESP2.
    pub fn verbatim(&mut self, text: &[u8]) {
        if self.resp3 {
            self.prefixed_int(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(b"txt:");
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    #[inline(always)]
    fn prefixed_int(&mut self, prefix: u8, n: i64) {
        // One or two digits (most array and short bulk headers): one copy.
        if (0..10).contains(&n) {
            let digit = b'0' + n as u8;
            self.buf.extend_from_slice(&[prefix, digit, b'\r', b'\n']);
            return;
        }
        if (10..100).contains(&n) {
            let (tens, ones) = (b'0' + (n / 10) as u8, b'0' + (n % 10) as u8);
            self.buf
                .extend_from_slice(&[prefix, tens, ones, b'\r', b'\n']);
            return;
        }
        self.prefixed_long_int(prefix, n);
    }

    #[inline(never)]
    fn prefixed_long_int(&mut self, prefix: u8, n: i64) {
        let mut tmp = [0u8; 20];
        self.buf.push(prefix);
        self.buf.extend_from_slice(format_i64(n, &mut tmp));
        self.buf.extend_from_slice(b"\r\n");
    }
}

/// Formats `n` in decimal into `tmp`, returning the used tail.
pub fn format_i64(n: i64, tmp: &mut [u8; 20]) -> &[u8] {
    let mut pos = tmp.len();
    let mut v = n.unsigned_abs();
    loop {
        pos -= 1;
        tmp[pos] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        pos -= 1;
        tmp[pos] = b'-';
    }
    &tmp[pos..]
}

/// Formats a double the way Redis 7.0 replies with one: C's `%.17g`
/// (17 significant digits, trailing zeros dropped, exponent form below
/// 1e-4 or from 1e17 on), and `inf`/`-inf`/`nan`.
pub fn format_double(value: f64) -> String {
    // Whole numbers below 1e17 print as their digits (`-0` keeps its
    // sign): the common case of scores, without the general algorithm.
    if value.fract() == 0.0 && value.abs() < 1e17 && !(value == 0.0 && value.is_sign_negative()) {
        return (value as i64).to_string();
    }
    format_g(value, 17)
}

/// C's `%.<digits>g`.
pub fn format_g(value: f64, digits: usize) -> String {
    let digits = digits.max(1) as i32;
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust rounds the 17 digits exactly as printf does; only the layout differs.
    let sci = format!("{:.*e}", (digits - 1) as usize, value);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..digits).contains(&exp) {
        let mantissa = trim_fraction(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let fixed = format!("{:.*}", (digits - 1 - exp) as usize, value);
        trim_fraction(&fixed).to_string()
    }
}

/// Drops trailing zeros after a decimal point, and the point if bare.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(resp3: bool, f: impl FnOnce(&mut Reply)) -> String {
        let mut r = Reply {
            resp3,
            ..Reply::default()
        };
        f(&mut r);
        String::from_utf8(r.buf).unwrap()
    }

    #[test]
    fn resp2_and_resp3_framing() {
        assert_eq!(encoded(false, |r| r.null()), "$-1\r\n");
        assert_eq!(encoded(true, |r| r.null()), "_\r\n");
        assert_eq!(encoded(false, |r| r.null_array()), "*-1\r\n");
        assert_eq!(encoded(false, |r| r.map(2)), "*4\r\n");
        assert_eq!(encoded(true, |r| r.map(2)), "%2\r\n");
        assert_eq!(encoded(true, |r| r.set(3)), "~3\r\n");
        assert_eq!(encoded(false, |r| r.bool(true)), ":1\r\n");
        assert_eq!(encoded(true, |r| r.bool(false)), "#f\r\n");
        assert_eq!(encoded(false, |r| r.double(1.5)), "$3\r\n1.5\r\n");
        assert_eq!(encoded(true, |r| r.double(1.5)), ",1.5\r\n");
        assert_eq!(encoded(true, |r| r.verbatim(b"a")), "=5\r\ntxt:a\r\n");
        assert_eq!(encoded(false, |r| r.bulk(b"hi")), "$2\r\nhi\r\n");
        assert_eq!(
            encoded(false, |r| r.int(i64::MIN)),
            ":-9223372036854775808\r\n"
        );
        assert_eq!(encoded(false, |r| r.int(0)), ":0\r\n");
        // Every header width: one digit, two (its own path), more, negative.
        for n in [1, 9, 10, 42, 99, 100, 101, 1000, -1, -10, -99] {
            assert_eq!(encoded(false, |r| r.int(n)), format!(":{n}\r\n"));
            assert_eq!(
                encoded(false, |r| r.array(n.max(0) as usize)),
                format!("*{}\r\n", n.max(0))
            );
        }
        assert_eq!(encoded(false, |r| r.error(b"ERR a\r\nb")), "-ERR a  b\r\n");
    }

    #[test]
    fn doubles_print_as_percent_17g() {
        for (v, text) in [
            (1.5, "1.5"),
            (3.0, "3"),
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
            (1e300, "1.0000000000000001e+300"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e16, "10000000000000000"),
            (-2.5e-4, "-0.00025000000000000001"),
            (0.0, "0"),
            (-0.0, "-0"),
            (-7.0, "-7"),
            (99999999999999984.0, "99999999999999984"),
            (1e17, "1e+17"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_double(v), text, "{v}");
        }
    }

    #[test]
    fn compact_keeps_unsent_bytes() {
        let mut r = Reply::default();
        r.bulk(b"abc");
        r.sent = 4;
        r.compact();
        assert_eq!(r.buf, b"abc\r\n");
        assert_eq!(r.pending(), 5);
    }

    #[test]
    fn compact_moves_the_rest_only_once_half_is_written() {
        let mut r = Reply {
            buf: vec![7; 1000],
            ..Reply::default()
        };
        // A slow reader takes 10 bytes a write: nothing moves until half
        // is gone, then the rest moves once.
        let mut moves = 0;
        while r.pending() > 0 {
            r.sent += 10.min(r.pending());
            let before = r.buf.len();
            r.compact();
            if r.buf.len() != before && r.pending() > 0 {
                moves += 1;
            }
        }
        assert!(moves <= 10, "{moves}");
        assert!(r.buf.is_empty() && r.sent == 0);
    }
}
