//! The incremental request parser: bytes in, argument slices out.
//!
//! Owns nothing but its own resume state. It never sees a socket or the
//! keyspace, never panics on any input, and never allocates in proportion to
//! a length read from the wire: every declared length is checked against
//! Redis's limits first, and preallocation is capped.
//!
//! Two request forms, as Redis accepts them:
//! - multibulk (`*<n>\r\n$<len>\r\n<bytes>\r\n...`), what every client
//!   library sends; arguments are zero-copy ranges of the caller's buffer;
//! - inline (`SET a "b c"\n`), what telnet and `nc` send; quotes and escapes
//!   are decoded into the parser's own scratch buffer.

use std::ops::Range;

/// Longest inline request, and longest `*`/`$` header line, Redis accepts.
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;
/// Most arguments one multibulk request may declare.
pub const PROTO_MAX_MULTIBULK_LEN: i64 = 1024 * 1024;
/// Default `proto-max-bulk-len`: the longest single argument, in bytes.
pub const PROTO_MAX_BULK_LEN_DEFAULT: i64 = 512 * 1024 * 1024;
/// Most arguments, and longest argument, a client that must still
/// authenticate may send (Redis's limits for unauthenticated clients).
pub const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
pub const UNAUTHENTICATED_MAX_BULK_LEN: i64 = 16 * 1024;
/// Never reserve more argument slots than this up front, whatever `*<n>` says.
const MAX_PREALLOC_ARGS: usize = 1024;
/// An idle parser keeps an inline scratch buffer up to this size.
const INLINE_SCRATCH_KEEP_BYTES: usize = 4 * 1024;

/// A protocol error: the client gets `-ERR Protocol error: <text>` and is
/// closed once that reply is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    InvalidMultibulkLength,
    InvalidBulkLength,
    TooBigInlineRequest,
    TooBigMbulkCount,
    TooBigBulkCount,
    UnbalancedQuotes,
    ExpectedDollar(u8),
    UnauthenticatedMultibulkLength,
    UnauthenticatedBulkLength,
}

impl ProtocolError {
    /// The text after `Protocol error: `, exactly as Redis words it.
    pub fn message(&self) -> String {
        match self {
            Self::InvalidMultibulkLength => "invalid multibulk length".into(),
            Self::InvalidBulkLength => "invalid bulk length".into(),
            Self::TooBigInlineRequest => "too big inline request".into(),
            Self::TooBigMbulkCount => "too big mbulk count string".into(),
            Self::TooBigBulkCount => "too big bulk count string".into(),
            Self::UnbalancedQuotes => "unbalanced quotes in request".into(),
            Self::ExpectedDollar(b) => format!("expected '$', got '{}'", char::from(*b)),
            Self::UnauthenticatedMultibulkLength => "unauthenticated multibulk length".into(),
            Self::UnauthenticatedBulkLength => "unauthenticated bulk length".into(),
        }
    }
}

/// What one call to [`RequestParser::parse`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed; call again with the same buffer start, extended.
    Incomplete,
    /// A request of `consumed` bytes; its arguments are in [`RequestParser::args`].
    /// `consumed` may cover an empty request (blank line, `*0`): then there
    /// are no arguments and nothing should be executed.
    Complete { consumed: usize },
}

/// Where the parsed arguments live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Ranges into the caller's buffer.
    Buffer,
    /// Ranges into the parser's inline scratch buffer.
    Inline,
}

/// Incremental parser for one connection.
///
/// Contract: the caller passes a buffer whose start stays fixed until a
/// `Complete` is returned; then it drops `consumed` bytes from the front (or
/// moves its own offset) before the next call. Resume state is kept so that a
/// large request arriving in many reads is scanned once, not once per read.
#[derive(Debug)]
pub struct RequestParser {
    /// Arguments still expected by the multibulk being parsed (0 = between requests).
    remaining: usize,
    /// Declared length of the bulk whose header was read but whose body has not arrived.
    bulk_len: Option<usize>,
    /// Offset in the caller's buffer where parsing resumes.
    pos: usize,
    /// Argument ranges of the request being built or just completed.
    ranges: Vec<Range<usize>>,
    /// Decoded inline arguments (quotes and escapes resolved).
    inline: Vec<u8>,
    /// Whether `ranges` point into the caller's buffer or into `inline`.
    source: Source,
    /// The `proto-max-bulk-len` limit in bytes.
    max_bulk_len: i64,
    /// The client must still authenticate: Redis's tighter limits apply.
    unauthenticated: bool,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new(PROTO_MAX_BULK_LEN_DEFAULT)
    }
}

impl RequestParser {
    pub fn new(max_bulk_len: i64) -> Self {
        Self {
            remaining: 0,
            bulk_len: None,
            pos: 0,
            ranges: Vec::new(),
            inline: Vec::new(),
            source: Source::Buffer,
            max_bulk_len,
            unauthenticated: false,
        }
    }

    /// Whether the next requests come from a client that must still
    /// authenticate (at most `UNAUTHENTICATED_MAX_ARGS` arguments of
    /// `UNAUTHENTICATED_MAX_BULK_LEN` bytes, as Redis allows it).
    pub fn set_unauthenticated(&mut self, unauthenticated: bool) {
        self.unauthenticated = unauthenticated;
    }

    /// Releases argument storage grown by one big request, when no request
    /// is half parsed (Redis frees an idle client's argv the same way):
    /// kept, 100,000 arguments would pin 1.6 MB per client.
    pub fn shrink_idle(&mut self) {
        if self.remaining != 0 {
            return;
        }
        if self.ranges.capacity() > MAX_PREALLOC_ARGS {
            self.ranges = Vec::new();
        }
        if self.inline.capacity() > INLINE_SCRATCH_KEEP_BYTES {
            self.inline = Vec::new();
        }
    }

    pub fn set_max_bulk_len(&mut self, max_bulk_len: i64) {
        self.max_bulk_len = max_bulk_len;
    }

    /// Parses the next request at the start of `buf`.
    pub fn parse(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        if self.remaining == 0 {
            self.ranges.clear();
            if let Some(consumed) = self.parse_whole(buf) {
                self.source = Source::Buffer;
                self.pos = 0;
                return Ok(Parsed::Complete { consumed });
            }
        }
        self.parse_resumable(buf)
    }

    /// `parse` for any input, resuming where the last call stopped.
    fn parse_resumable(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        if self.remaining == 0 {
            self.ranges.clear();
            self.pos = 0;
            match buf.first() {
                None => return Ok(Parsed::Incomplete),
                Some(b'*') => {}
                Some(_) => return self.parse_inline(buf),
            }
            let Some((count, next)) = read_line_int(buf, 1)? else {
                return if buf.len() > PROTO_INLINE_MAX_SIZE {
                    Err(ProtocolError::TooBigMbulkCount)
                } else {
                    Ok(Parsed::Incomplete)
                };
            };
            let count = count.ok_or(ProtocolError::InvalidMultibulkLength)?;
            if count > PROTO_MAX_MULTIBULK_LEN {
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            if self.unauthenticated && count > UNAUTHENTICATED_MAX_ARGS {
                return Err(ProtocolError::UnauthenticatedMultibulkLength);
            }
            if count <= 0 {
                return Ok(Parsed::Complete { consumed: next });
            }
            // Bounded above by PROTO_MAX_MULTIBULK_LEN, so the cast is lossless.
            self.remaining = count as usize;
            self.source = Source::Buffer;
            self.ranges.reserve(self.remaining.min(MAX_PREALLOC_ARGS));
            self.pos = next;
        }
        self.parse_bulks(buf)
    }

    /// What clients send nearly always, in one pass: a whole multibulk
    /// request already in `buf`, of at most `WHOLE_MAX_ARGS` arguments,
    /// every count and length 1 to 9 digits without a leading zero and
    /// within the limits. Anything else (a request cut short, an empty
    /// argument, an error to report) is left to the resumable path,
    /// which reads it from the start: `None`, the ranges pushed so far
    /// to be cleared.
    #[inline]
    fn parse_whole(&mut self, buf: &[u8]) -> Option<usize> {
        const WHOLE_MAX_ARGS: usize = 64;
        let (count, mut pos) = small_number(buf, b'*', 0)?;
        let max_args = if self.unauthenticated {
            UNAUTHENTICATED_MAX_ARGS as usize
        } else {
            WHOLE_MAX_ARGS
        };
        if count > max_args {
            return None;
        }
        let max_len = if self.unauthenticated {
            self.max_bulk_len.min(UNAUTHENTICATED_MAX_BULK_LEN)
        } else {
            self.max_bulk_len
        };
        self.ranges.reserve(count);
        for _ in 0..count {
            let (len, body) = small_number(buf, b'$', pos)?;
            if len as i64 > max_len || buf.len() < body + len + 2 {
                return None;
            }
            self.ranges.push(body..body + len);
            pos = body + len + 2;
        }
        Some(pos)
    }

    /// Continues a multibulk request from `self.pos`.
    fn parse_bulks(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let Some(&first) = buf.get(self.pos) else {
                        return Ok(Parsed::Incomplete);
                    };
                    let Some((len, next)) = read_line_int(buf, self.pos + 1)? else {
                        return if buf.len() - self.pos > PROTO_INLINE_MAX_SIZE {
                            Err(ProtocolError::TooBigBulkCount)
                        } else {
                            Ok(Parsed::Incomplete)
                        };
                    };
                    if first != b'$' {
                        return Err(ProtocolError::ExpectedDollar(first));
                    }
                    let len = match len {
                        Some(len) if (0..=self.max_bulk_len).contains(&len) => len,
                        _ => return Err(ProtocolError::InvalidBulkLength),
                    };
                    if self.unauthenticated && len > UNAUTHENTICATED_MAX_BULK_LEN {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    // Checked against the limits above: non-negative.
                    let len = len as usize;
                    self.pos = next;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // Like Redis, the two bytes after the body are skipped unchecked.
            if buf.len() - self.pos < len + 2 {
                return Ok(Parsed::Incomplete);
            }
            self.ranges.push(self.pos..self.pos + len);
            self.pos += len + 2;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        let consumed = self.pos;
        self.pos = 0;
        Ok(Parsed::Complete { consumed })
    }

    /// Parses one inline request (a line ended by `\n`, optionally `\r\n`).
    fn parse_inline(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        let Some(newline) = memchr(b'\n', buf) else {
            return if buf.len() > PROTO_INLINE_MAX_SIZE {
                Err(ProtocolError::TooBigInlineRequest)
            } else {
                Ok(Parsed::Incomplete)
            };
        };
        if newline > PROTO_INLINE_MAX_SIZE {
            return Err(ProtocolError::TooBigInlineRequest);
        }
        let mut line = &buf[..newline];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        self.source = Source::Inline;
        split_args(line, &mut self.inline, &mut self.ranges)?;
        Ok(Parsed::Complete {
            consumed: newline + 1,
        })
    }

    /// The arguments of the request last returned as `Complete`, borrowed
    /// from `buf` (the same buffer given to `parse`) or from the parser.
    pub fn args<'a>(&'a self, buf: &'a [u8]) -> Args<'a> {
        let base = match self.source {
            Source::Buffer => buf,
            Source::Inline => &self.inline,
        };
        Args {
            base,
            ranges: &self.ranges,
        }
    }
}

/// Appends `args` as one multibulk request (what clients send): for tests,
/// benchmarks and tools that talk to a server.
pub fn encode_request<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    let mut tmp = [0u8; 20];
    out.push(b'*');
    out.extend_from_slice(crate::protocol::reply::format_i64(
        args.len() as i64,
        &mut tmp,
    ));
    out.extend_from_slice(b"\r\n");
    for arg in args {
        let arg = arg.as_ref();
        out.push(b'$');
        out.extend_from_slice(crate::protocol::reply::format_i64(
            arg.len() as i64,
            &mut tmp,
        ));
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The arguments of one request: `args[0]` is the command name.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    base: &'a [u8],
    ranges: &'a [Range<usize>],
}

impl<'a> Args<'a> {
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i`, with the lifetime of the underlying buffer.
    ///
    /// Panics if `i >= len()`: callers index only within the arity the
    /// command table has already checked.
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.base[self.ranges[i].clone()]
    }

    /// The arguments from `n` on (COMMAND GETKEYS looks at the command it
    /// names as if it were the request).
    pub fn skip(&self, n: usize) -> Args<'a> {
        Args {
            base: self.base,
            ranges: &self.ranges[n.min(self.ranges.len())..],
        }
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let base = self.base;
        self.ranges.iter().map(move |r| &base[r.clone()])
    }
}

/// An argument vector that owns its bytes: for what must outlive the read
/// buffer (queued MULTI commands, the propagated stream, blocked commands).
/// One buffer for all arguments, so it costs two allocations, not one per
/// argument.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OwnedArgs {
    buf: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

impl OwnedArgs {
    pub fn from_args(args: Args<'_>) -> OwnedArgs {
        OwnedArgs::from_slices(args.iter())
    }

    pub fn from_slices<'a>(args: impl IntoIterator<Item = &'a [u8]>) -> OwnedArgs {
        let mut owned = OwnedArgs::default();
        for arg in args {
            owned.push(arg);
        }
        owned
    }

    /// Empties it, keeping the buffers for reuse.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.ranges.clear();
    }

    pub fn push(&mut self, arg: &[u8]) {
        let start = self.buf.len();
        self.buf.extend_from_slice(arg);
        self.ranges.push(start..self.buf.len());
    }

    pub fn as_args(&self) -> Args<'_> {
        Args {
            base: &self.buf,
            ranges: &self.ranges,
        }
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Bytes held, for memory accounting (CLIENT LIST `multi-mem`).
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity() + self.ranges.capacity() * std::mem::size_of::<Range<usize>>()
    }
}

impl std::fmt::Debug for OwnedArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_args().fmt(f)
    }
}

impl std::ops::Index<usize> for Args<'_> {
    type Output = [u8];
    fn index(&self, i: usize) -> &[u8] {
        self.get(i)
    }
}

impl std::fmt::Debug for Args<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

pub fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Reads a `\r\n`-terminated decimal integer starting at `start`.
///
/// Returns `Ok(None)` if the line is not complete yet, `Ok(Some((None, _)))`
/// if it is complete but not a valid integer, otherwise the value and the
/// offset just past the `\n`.
type LineInt = Option<(Option<i64>, usize)>;
fn read_line_int(buf: &[u8], start: usize) -> Result<LineInt, ProtocolError> {
    let Some(tail) = buf.get(start..) else {
        return Ok(None);
    };
    let Some(cr) = memchr(b'\r', tail) else {
        return Ok(None);
    };
    // The `\n` after the `\r` must have arrived too before we move past it.
    if tail.len() < cr + 2 {
        return Ok(None);
    }
    Ok(Some((parse_i64(&tail[..cr]), start + cr + 2)))
}

/// `<tag><digits>\r` and one byte more at `at`, the digits 1 to 9 of
/// them, the first not 0: the number and where the line after it starts
/// (`RequestParser::parse_whole`'s headers; `None` for anything else).
#[inline(always)]
fn small_number(buf: &[u8], tag: u8, at: usize) -> Option<(usize, usize)> {
    // One and two digits, nearly every header, from four bytes at once.
    if let Some(&[t, d1, c, d]) = buf.get(at..at + 4) {
        let first = d1.wrapping_sub(b'1');
        if t != tag || first > 8 {
            return None;
        }
        if c == b'\r' {
            return Some((usize::from(first) + 1, at + 4));
        }
        let second = c.wrapping_sub(b'0');
        if second <= 9 && d == b'\r' && at + 4 < buf.len() {
            return Some(((usize::from(first) + 1) * 10 + usize::from(second), at + 5));
        }
    }
    if *buf.get(at)? != tag {
        return None;
    }
    let first = buf.get(at + 1)?.wrapping_sub(b'1');
    if first > 8 {
        return None;
    }
    let mut n = usize::from(first) + 1;
    let mut i = at + 2;
    loop {
        let digit = buf.get(i)?.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        n = n * 10 + usize::from(digit);
        i += 1;
        if i - at > 10 {
            return None;
        }
    }
    // The line ends at `\r`; its `\n` (the next byte) must have arrived.
    (buf[i] == b'\r' && i + 1 < buf.len()).then_some((n, i + 2))
}

/// Strict decimal i64 parsing in Redis's `string2ll` style: optional `-`,
/// no `+`, no spaces, no leading zeros (except "0"), no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    // 19 digits fit a u64 unchecked; 20 are past i64 whatever the sign.
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || negative) {
        return None;
    }
    let mut magnitude: u64 = 0;
    for &d in digits {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(digit);
    }
    if negative {
        // -2^63 is i64::MIN, its magnitude one past i64::MAX.
        (magnitude <= 1 << 63).then(|| (magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Splits an inline line into arguments the way Redis's `sdssplitargs` does:
/// whitespace separates, "double quotes" take `\n \r \t \b \a \\ \" \xHH`
/// escapes, 'single quotes' take `\'`, and a closing quote must be followed by
/// whitespace or the end of the line.
fn split_args(
    line: &[u8],
    out: &mut Vec<u8>,
    ranges: &mut Vec<Range<usize>>,
) -> Result<(), ProtocolError> {
    out.clear();
    ranges.clear();
    // Redis works on a C string: a NUL byte ends the line.
    let line = match memchr(0, line) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(());
        }
        let start = out.len();
        i = split_one_arg(line, i, out)?;
        ranges.push(start..out.len());
    }
}

/// Decodes one argument starting at `i`; returns the index after it.
fn split_one_arg(line: &[u8], mut i: usize, out: &mut Vec<u8>) -> Result<usize, ProtocolError> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Double,
        Single,
    }
    let mut quote = Quote::None;
    loop {
        let Some(&c) = line.get(i) else {
            return if quote == Quote::None {
                Ok(i)
            } else {
                Err(ProtocolError::UnbalancedQuotes)
            };
        };
        match quote {
            Quote::Double => match c {
                b'\\'
                    if line.get(i + 1) == Some(&b'x')
                        && hex_pair(line.get(i + 2..i + 4)).is_some() =>
                {
                    out.push(hex_pair(line.get(i + 2..i + 4)).unwrap_or_default());
                    i += 3;
                }
                b'\\' if i + 1 < line.len() => {
                    i += 1;
                    out.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                }
                b'"' => return end_of_quoted(line, i),
                _ => out.push(c),
            },
            Quote::Single => match c {
                b'\\' if line.get(i + 1) == Some(&b'\'') => {
                    out.push(b'\'');
                    i += 1;
                }
                b'\'' => return end_of_quoted(line, i),
                _ => out.push(c),
            },
            Quote::None => match c {
                b' ' | b'\n' | b'\r' | b'\t' => return Ok(i),
                b'"' => quote = Quote::Double,
                b'\'' => quote = Quote::Single,
                _ => out.push(c),
            },
        }
        i += 1;
    }
}

/// Splits a config-file or inline line into words with Redis's quoting rules.
pub fn split_line(line: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
    let mut out = Vec::new();
    let mut ranges = Vec::new();
    split_args(line, &mut out, &mut ranges)?;
    Ok(ranges.into_iter().map(|r| out[r].to_vec()).collect())
}

/// A closing quote at `i` must end the line or be followed by a space;
/// returns the index after it.
fn end_of_quoted(line: &[u8], i: usize) -> Result<usize, ProtocolError> {
    match line.get(i + 1) {
        Some(&next) if !is_space(next) => Err(ProtocolError::UnbalancedQuotes),
        _ => Ok(i + 1),
    }
}

/// C's `isspace`: space, \t, \n, \v, \f, \r.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_pair(pair: Option<&[u8]>) -> Option<u8> {
    let pair = pair?;
    let hi = (pair[0] as char).to_digit(16)?;
    let lo = (pair[1] as char).to_digit(16)?;
    Some((hi * 16 + lo) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut parser = RequestParser::default();
        let mut offset = 0;
        let mut out = Vec::new();
        loop {
            match parser.parse(&input[offset..])? {
                Parsed::Incomplete => return Ok(out),
                Parsed::Complete { consumed } => {
                    let args = parser.args(&input[offset..]);
                    if !args.is_empty() {
                        out.push(args.iter().map(<[u8]>::to_vec).collect());
                    }
                    offset += consumed;
                }
            }
        }
    }

    fn strings(reqs: &[&[&str]]) -> Vec<Vec<Vec<u8>>> {
        reqs.iter()
            .map(|r| r.iter().map(|a| a.as_bytes().to_vec()).collect())
            .collect()
    }

    const STREAM: &[u8] =
        b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n*1\r\n$4\r\nPING\r\nGET \"a b\" 'c'\r\n";

    #[test]
    fn parses_multibulk_and_inline() {
        assert_eq!(
            parse_all(STREAM).unwrap(),
            strings(&[&["SET", "key", "va\r\nl"], &["PING"], &["GET", "a b", "c"]])
        );
    }

    #[test]
    fn every_prefix_is_incomplete_and_consumed_is_exact() {
        let first_len = STREAM.len() - b"*1\r\n$4\r\nPING\r\nGET \"a b\" 'c'\r\n".len();
        for cut in 0..first_len {
            let mut parser = RequestParser::default();
            assert_eq!(
                parser.parse(&STREAM[..cut]),
                Ok(Parsed::Incomplete),
                "cut {cut}"
            );
        }
        let mut parser = RequestParser::default();
        assert_eq!(
            parser.parse(STREAM),
            Ok(Parsed::Complete {
                consumed: first_len
            })
        );
    }

    #[test]
    fn resumes_across_every_split() {
        let expected = parse_all(STREAM).unwrap();
        for cut in 0..STREAM.len() {
            // Feed a prefix, then the whole: the parser must resume correctly.
            let mut parser = RequestParser::default();
            let _ = parser.parse(&STREAM[..cut]).unwrap();
            let mut offset = 0;
            let mut got: Vec<Vec<Vec<u8>>> = Vec::new();
            while let Parsed::Complete { consumed } = parser.parse(&STREAM[offset..]).unwrap() {
                got.push(
                    parser
                        .args(&STREAM[offset..])
                        .iter()
                        .map(<[u8]>::to_vec)
                        .collect(),
                );
                offset += consumed;
            }
            assert_eq!(got, expected, "cut {cut}");
        }
    }

    #[test]
    fn byte_by_byte_feeding() {
        let mut parser = RequestParser::default();
        let mut buf = Vec::new();
        let mut got: Vec<Vec<Vec<u8>>> = Vec::new();
        for &b in STREAM {
            buf.push(b);
            while let Parsed::Complete { consumed } = parser.parse(&buf).unwrap() {
                got.push(parser.args(&buf).iter().map(<[u8]>::to_vec).collect());
                buf.drain(..consumed);
            }
        }
        assert_eq!(got, parse_all(STREAM).unwrap());
    }

    #[test]
    fn padded_input_reports_exact_consumed() {
        let mut input = b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n".to_vec();
        let len = input.len();
        input.extend_from_slice(b"*9\r\n$garbage");
        let mut parser = RequestParser::default();
        assert_eq!(parser.parse(&input), Ok(Parsed::Complete { consumed: len }));
    }

    #[test]
    fn empty_requests() {
        assert_eq!(
            parse_all(b"*0\r\n*-1\r\n\r\n   \r\n").unwrap(),
            strings(&[])
        );
    }

    #[test]
    fn protocol_errors() {
        let cases: &[(&[u8], ProtocolError)] = &[
            (b"*abc\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1048577\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*3000000000\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1\r\n$-1\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n$abc\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n$536870913\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\nfoo\r\n", ProtocolError::ExpectedDollar(b'f')),
            (b"set \"a b\r\n", ProtocolError::UnbalancedQuotes),
            (b"set a \"b\"c\r\n", ProtocolError::UnbalancedQuotes),
            (b"set a 'b\r\n", ProtocolError::UnbalancedQuotes),
        ];
        for (input, err) in cases {
            assert_eq!(
                parse_all(input),
                Err(err.clone()),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        assert_eq!(
            ProtocolError::ExpectedDollar(b'f').message(),
            "expected '$', got 'f'"
        );
    }

    #[test]
    fn size_limits() {
        let long = vec![b'a'; PROTO_INLINE_MAX_SIZE + 1];
        assert_eq!(parse_all(&long), Err(ProtocolError::TooBigInlineRequest));
        let mut header = b"*".to_vec();
        header.extend(vec![b'1'; PROTO_INLINE_MAX_SIZE + 1]);
        assert_eq!(parse_all(&header), Err(ProtocolError::TooBigMbulkCount));
        let mut bulk = b"*1\r\n$".to_vec();
        bulk.extend(vec![b'1'; PROTO_INLINE_MAX_SIZE + 1]);
        assert_eq!(parse_all(&bulk), Err(ProtocolError::TooBigBulkCount));
    }

    #[test]
    fn huge_declared_lengths_do_not_preallocate() {
        let mut parser = RequestParser::default();
        assert_eq!(
            parser.parse(b"*1048576\r\n$536870912\r\nab"),
            Ok(Parsed::Incomplete)
        );
        assert!(parser.ranges.capacity() <= MAX_PREALLOC_ARGS);
        assert!(parser.inline.capacity() == 0);
    }

    #[test]
    fn inline_escapes() {
        assert_eq!(
            parse_all(b"set a \"\\x41\\n\\t\\\"q\\\\\" 'it\\'s' \"\\xZZ\"\n").unwrap(),
            vec![vec![
                b"set".to_vec(),
                b"a".to_vec(),
                b"A\n\t\"q\\".to_vec(),
                b"it's".to_vec(),
                b"xZZ".to_vec()
            ]]
        );
    }

    #[test]
    fn inline_nul_ends_the_line_like_redis() {
        // Found by the junk test: a NUL once made the splitter loop forever.
        assert_eq!(
            parse_all(b"set a\0b c\r\n").unwrap(),
            strings(&[&["set", "a"]])
        );
        assert_eq!(
            parse_all(b"\x0b\x0cping\r\n").unwrap(),
            strings(&[&["ping"]])
        );
    }

    #[test]
    fn encoded_requests_parse_back() {
        let mut stream = Vec::new();
        encode_request(&[&b"SET"[..], b"k", b"a\r\nb"], &mut stream);
        encode_request(&[b"PING"], &mut stream);
        assert_eq!(
            parse_all(&stream).unwrap(),
            strings(&[&["SET", "k", "a\r\nb"], &["PING"]])
        );
    }

    #[test]
    fn integers_are_strict() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"01",
            b"-0",
            b"9223372036854775808",
            b"1a",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    /// A number is read exactly when it is written in its one canonical
    /// form (Redis's `string2ll`): every length, both signs, the edges of
    /// the range, and a stray byte anywhere.
    #[test]
    fn integers_read_exactly_their_canonical_form() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for _ in 0..300_000 {
            let mut s: Vec<u8> = match rng.gen_range(0..4) {
                0 => rng.gen::<i64>().to_string(),
                1 => (rng.gen::<i64>() >> rng.gen_range(0..63)).to_string(),
                2 => format!("{}{}", i64::MAX - rng.gen_range(0..3), rng.gen_range(0..10)),
                _ => (0..rng.gen_range(1..22))
                    .map(|_| char::from(b'0' + rng.gen_range(0..10)))
                    .collect(),
            }
            .into_bytes();
            if rng.gen_range(0..4) == 0 {
                let at = rng.gen_range(0..=s.len());
                s.insert(at, b"-+0 /:a"[rng.gen_range(0..7)]);
            }
            let expected = std::str::from_utf8(&s)
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
                .filter(|v| v.to_string().as_bytes() == &s[..]);
            assert_eq!(parse_i64(&s), expected, "{:?}", String::from_utf8_lossy(&s));
        }
    }

    #[test]
    fn random_junk_never_panics() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let alphabet = b"*$\r\n0123456789-abc \"'\\x";
        for _ in 0..20_000 {
            let len = rng.gen_range(0..64);
            let junk: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.gen_bool(0.8) {
                        alphabet[rng.gen_range(0..alphabet.len())]
                    } else {
                        rng.gen()
                    }
                })
                .collect();
            let _ = parse_all(&junk);
        }
    }
}

#[cfg(test)]
mod whole_request_tests {
    use super::*;

    /// Whatever the one-pass reader accepts, the resumable parser reads
    /// the same way (the same length, the same arguments), over requests
    /// built from well-formed and damaged pieces, for both kinds of
    /// client, under the default `proto-max-bulk-len` and a tiny one.
    #[test]
    fn the_one_pass_reader_agrees_with_the_resumable_parser() {
        let pieces: &[&[u8]] = &[
            b"*1\r\n",
            b"*2\r\n",
            b"*3\r\n",
            b"*0\r\n",
            b"*-1\r\n",
            b"*02\r\n",
            b"*11\r\n",
            b"$3\r\nGET\r\n",
            b"$1\r\nk\r\n",
            b"$0\r\n\r\n",
            b"$2\r\nab",
            b"$",
            b"$1",
            b"$1\r",
            b"$01\r\na\r\n",
            b"$-1\r\n",
            b"$10\r\n0123456789\r\n",
            b"$20000\r\n",
            b"x",
            b"\r\n",
            b"$1\rZaXY",
            b"*1\rZ",
        ];
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(0x9e37_79b9_7f4a_7c15u64);
        let mut next = || rng.gen::<u64>();
        let mut accepted = 0;
        for round in 0..100_000 {
            let mut buf = Vec::new();
            for _ in 0..(next() % 6) {
                buf.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
            }
            let cut = (next() % (buf.len() as u64 + 1)) as usize;
            let buf = if round % 2 == 0 {
                &buf[..]
            } else {
                &buf[..cut]
            };
            for (unauthenticated, max_bulk_len) in
                [(false, 512 << 20), (true, 512 << 20), (false, 5), (true, 5)]
            {
                let mut fast = RequestParser::new(max_bulk_len);
                fast.set_unauthenticated(unauthenticated);
                let Some(consumed) = fast.parse_whole(buf) else {
                    continue;
                };
                accepted += 1;
                let mut slow = RequestParser::new(max_bulk_len);
                slow.set_unauthenticated(unauthenticated);
                assert_eq!(
                    slow.parse_resumable(buf),
                    Ok(Parsed::Complete { consumed }),
                    "{buf:?}"
                );
                let (a, b) = (fast.args(buf), slow.args(buf));
                assert!(a.iter().eq(b.iter()), "{buf:?}");
            }
        }
        assert!(accepted > 1_000, "{accepted}");
    }
}
