//! Numbers as C reads and prints them, where Redis's replies depend on it:
//! `strtod`/`strtold` (decimal and hex forms, infinities, how much of the
//! text they consume, ERANGE), and INCRBYFLOAT's x87 80-bit long double sum
//! printed with `%.17Lf`.
//!
//! Pure functions over bytes; no keyspace, no replies. The 80-bit
//! arithmetic is done in software (`rustc_apfloat`, LLVM's APFloat port),
//! so results are bit-identical to redis-server on x86-64 on any platform.

use rustc_apfloat::ieee::{Double, X87DoubleExtended};
use rustc_apfloat::{Float, FloatConvert, Round, Status};

/// The longest text Redis's `string2ld` takes (`MAX_LONG_DOUBLE_CHARS`).
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

/// What kind of number a `strtod` prefix spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Decimal,
    Hex,
    Infinity,
    NaN,
}

/// A number `strtod` recognised at the start of some text.
#[derive(Debug, Clone, Copy)]
struct Scanned {
    /// Leading whitespace skipped before the number.
    start: usize,
    /// Just past the last byte `strtod` consumes.
    end: usize,
    form: Form,
    /// The mantissa has a non-zero digit (a zero result then underflowed).
    nonzero: bool,
}

/// C's `isspace` in the "C" locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn digits_while(s: &[u8], mut i: usize, hex: bool, nonzero: &mut bool) -> usize {
    while let Some(&c) = s.get(i) {
        let is_digit = if hex {
            c.is_ascii_hexdigit()
        } else {
            c.is_ascii_digit()
        };
        if !is_digit {
            break;
        }
        *nonzero |= c != b'0';
        i += 1;
    }
    i
}

/// Past an exponent (`e`/`p`, optional sign, decimal digits) at `i`, or `i`
/// itself when none is there: `strtod` takes the marker only with digits.
fn exponent_end(s: &[u8], i: usize, marker: u8) -> usize {
    if !s.get(i).is_some_and(|c| c.eq_ignore_ascii_case(&marker)) {
        return i;
    }
    let mut j = i + 1;
    if matches!(s.get(j), Some(b'+' | b'-')) {
        j += 1;
    }
    let end = digits_while(s, j, false, &mut false);
    if end == j {
        i
    } else {
        end
    }
}

fn starts_with_ignore_case(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

/// The prefix of `s` that `strtod` converts, or `None` when it converts
/// nothing (then its end pointer is `s` itself).
fn scan(s: &[u8]) -> Option<Scanned> {
    let start = s.iter().take_while(|&&c| is_c_space(c)).count();
    let mut i = start;
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let rest = &s[i..];
    let done = |end, form, nonzero| {
        Some(Scanned {
            start,
            end,
            form,
            nonzero,
        })
    };
    if starts_with_ignore_case(rest, b"infinity") {
        return done(i + 8, Form::Infinity, true);
    }
    if starts_with_ignore_case(rest, b"inf") {
        return done(i + 3, Form::Infinity, true);
    }
    if starts_with_ignore_case(rest, b"nan") {
        return done(i + 3, Form::NaN, true);
    }
    let mut nonzero = false;
    if starts_with_ignore_case(rest, b"0x") {
        let int_end = digits_while(s, i + 2, true, &mut nonzero);
        let mut end = int_end;
        if s.get(end) == Some(&b'.') {
            end = digits_while(s, end + 1, true, &mut nonzero);
        }
        // "0x" with no hex digit: only the "0" is a number.
        if end - (i + 2) - usize::from(end > int_end) == 0 {
            return done(i + 1, Form::Decimal, false);
        }
        return done(exponent_end(s, end, b'p'), Form::Hex, nonzero);
    }
    let int_end = digits_while(s, i, false, &mut nonzero);
    let mut end = int_end;
    if s.get(end) == Some(&b'.') {
        end = digits_while(s, end + 1, false, &mut nonzero);
    }
    if end - i - usize::from(end > int_end) == 0 {
        return None;
    }
    done(exponent_end(s, end, b'e'), Form::Decimal, nonzero)
}

/// `text` as LLVM's parser takes it: a hex form without an exponent gets
/// `p0` (C allows it, APFloat does not).
fn apfloat_text(text: &str, form: Form) -> std::borrow::Cow<'_, str> {
    if form == Form::Hex && !text.contains(['p', 'P']) {
        format!("{text}p0").into()
    } else {
        text.into()
    }
}

/// Converts a scanned number with APFloat; `None` for NaN. The status
/// tells overflow and underflow apart as `errno == ERANGE` would.
fn convert<F: Float>(s: &[u8], sc: Scanned) -> Option<(F, Status)> {
    let text = std::str::from_utf8(&s[sc.start..sc.end]).ok()?;
    match sc.form {
        Form::NaN => return None,
        Form::Infinity => {
            let negative = text.starts_with('-');
            let inf = if negative { -F::INFINITY } else { F::INFINITY };
            return Some((inf, Status::OK));
        }
        Form::Decimal | Form::Hex => {}
    }
    let r = F::from_str_r(&apfloat_text(text, sc.form), Round::NearestTiesToEven).ok()?;
    Some((r.value, r.status))
}

/// Whether `strtod` would have set ERANGE with a result Redis refuses:
/// an overflow to infinity, or an underflow to zero.
fn out_of_range<F: Float>(value: F, status: Status, sc: Scanned) -> bool {
    (status.contains(Status::OVERFLOW) && value.is_infinite())
        || (value.is_zero() && sc.nonzero && sc.form != Form::Infinity)
}

/// A float argument as Redis's `getDoubleFromObject` reads it: the whole
/// argument consumed by `strtod` (decimal, hex, `inf`), no leading space,
/// not empty, no NaN, no overflow to infinity or underflow to zero.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.first().is_none_or(|&c| is_c_space(c)) {
        return None;
    }
    let sc = scan(s).filter(|sc| sc.end == s.len())?;
    let (value, status) = convert_f64(s, sc)?;
    if out_of_range(value, status, sc) {
        return None;
    }
    Some(f64::from_bits(value.to_bits() as u64))
}

/// `convert` for doubles, with the common decimal case through the
/// standard library's parser (correctly rounded as well, and much faster:
/// this is ZADD's hot path).
fn convert_f64(s: &[u8], sc: Scanned) -> Option<(Double, Status)> {
    if sc.form != Form::Decimal {
        return convert::<Double>(s, sc);
    }
    let text = std::str::from_utf8(&s[sc.start..sc.end]).ok()?;
    let v: f64 = text.parse().ok()?;
    let status = if v.is_infinite() {
        Status::OVERFLOW
    } else {
        Status::OK
    };
    Some((Double::from_bits(u128::from(v.to_bits())), status))
}

/// C's `strtod` on the start of `s`: the value and how many bytes it
/// consumed, or `None` when no number starts there.
pub fn strtod_prefix(s: &[u8]) -> Option<(f64, usize)> {
    let sc = scan(s)?;
    let (value, _) = convert_f64(s, sc)?;
    Some((f64::from_bits(value.to_bits() as u64), sc.end))
}

/// A SORT weight as Redis reads it with `strtod`: the text up to a NUL,
/// all of it a number (nothing at all is 0), refused when out of range
/// (`ERANGE`) or NaN.
pub fn parse_sort_weight(s: &[u8]) -> Option<f64> {
    let s = s.split(|&c| c == 0).next().unwrap_or_default();
    if s.is_empty() {
        return Some(0.0);
    }
    let sc = scan(s).filter(|sc| sc.end == s.len())?;
    let (value, status) = convert_f64(s, sc)?;
    if out_of_range(value, status, sc) {
        return None;
    }
    let value = f64::from_bits(value.to_bits() as u64);
    (!value.is_nan()).then_some(value)
}

/// A score range bound as `zslParseRange` reads it with plain `strtod`:
/// leading space allowed, the text ends at the first NUL (a C string),
/// overflow is infinity, nothing at all is 0 (`""` and `"("`), NaN refused.
pub fn parse_f64_lenient(s: &[u8]) -> Option<f64> {
    let s = s.split(|&c| c == 0).next().unwrap_or_default();
    if s.is_empty() {
        return Some(0.0);
    }
    let sc = scan(s).filter(|sc| sc.end == s.len())?;
    let (value, _) = convert_f64(s, sc)?;
    Some(f64::from_bits(value.to_bits() as u64))
}

/// An x87 80-bit extended double: C's `long double` on x86-64, what Redis
/// computes INCRBYFLOAT and HINCRBYFLOAT in.
#[derive(Debug, Clone, Copy)]
pub struct LongDouble(X87DoubleExtended);

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble(X87DoubleExtended::ZERO);

    /// Redis's `string2ld`: `strtold` must consume the whole text (no NUL,
    /// no leading space, under 5 KiB); NaN, overflow and underflow to zero
    /// are refused; `inf` is taken.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_LONG_DOUBLE_CHARS || is_c_space(s[0]) {
            return None;
        }
        let sc = scan(s).filter(|sc| sc.end == s.len())?;
        let (value, status) = convert::<X87DoubleExtended>(s, sc)?;
        if out_of_range(value, status, sc) {
            return None;
        }
        Some(LongDouble(value))
    }

    /// C's `(long long) ceill(self * 1000.0)` on x86-64 (BLPOP's timeout,
    /// Redis 7.0's `getTimeoutFromObjectOrReply`): the product rounded up,
    /// so a timeout under a millisecond still ends (0.0001 waits 1 ms,
    /// not forever), and the CPU's "integer indefinite" `i64::MIN` when it
    /// does not fit (so Redis calls a huge timeout negative).
    pub fn millis_ceil_as_i64(self) -> i64 {
        let thousand = X87DoubleExtended::from_i128(1000).value;
        let product = (self.0 * thousand).value;
        let mut exact = false;
        let converted = product.to_i128_r(64, Round::TowardPositive, &mut exact);
        if converted.status.contains(Status::INVALID_OP) {
            return i64::MIN;
        }
        i64::try_from(converted.value).unwrap_or(i64::MIN)
    }

    /// The double exactly, as C converts a `double` to `long double`.
    pub fn from_f64(value: f64) -> LongDouble {
        let mut loses_info = false;
        let double = Double::from_bits(u128::from(value.to_bits()));
        LongDouble(double.convert(&mut loses_info).value)
    }

    pub fn is_finite(self) -> bool {
        !self.0.is_infinite() && !self.0.is_nan()
    }

    /// Redis's `ld2string(.., LD_STR_HUMAN)`: `%.17Lf`, trailing zeros and
    /// a bare point dropped, `-0` printed as `0`. Finite values only.
    pub fn to_human_string(self) -> String {
        let bits = self.0.to_bits();
        let negative = bits >> 79 & 1 == 1;
        let biased = (bits >> 64 & 0x7fff) as i64;
        let significand = bits as u64;
        // value = significand * 2^exp2 (denormals use the minimum exponent).
        let exp2 = biased.max(1) - 16383 - 63;
        let (int_digits, frac) = fixed_17(significand, exp2);
        let mut text = String::with_capacity(int_digits.len() + 20);
        if negative {
            text.push('-');
        }
        text.push_str(&int_digits);
        if frac != 0 {
            let frac = format!("{frac:017}");
            text.push('.');
            text.push_str(frac.trim_end_matches('0'));
        }
        if text == "-0" {
            text.remove(0);
        }
        text
    }
}

/// `a + b` rounded to nearest, ties to even, as the FPU does.
impl std::ops::Add for LongDouble {
    type Output = LongDouble;
    fn add(self, other: LongDouble) -> LongDouble {
        LongDouble((self.0 + other.0).value)
    }
}

/// Decimal places of `%.17Lf`.
const FIXED_DECIMALS: u32 = 17;

/// `significand * 2^exp2` as `%.17Lf` rounds it (to nearest, ties to even,
/// on the exact value, as glibc does): the integer part's digits and the 17
/// decimals as an integer.
fn fixed_17(significand: u64, exp2: i64) -> (String, u64) {
    let scale = 10u128.pow(FIXED_DECIMALS);
    if exp2 >= 0 {
        return (shifted_decimal(significand, exp2 as u32), 0);
    }
    let k = exp2.unsigned_abs();
    // Below 2^-64 the value is under 0.5e-17 and there is no tie: zero.
    if k >= 128 {
        return ("0".into(), 0);
    }
    let k = k as u32;
    let int_part = if k >= 64 {
        0
    } else {
        u128::from(significand >> k)
    };
    let frac_bits = if k >= 64 {
        u128::from(significand)
    } else {
        u128::from(significand) & ((1u128 << k) - 1)
    };
    // frac_bits < 2^64 and scale < 2^57: the product fits in 121 bits.
    let scaled = frac_bits * scale;
    let mut q = scaled >> k;
    let r = scaled - (q << k);
    let half = 1u128 << (k - 1);
    if r > half || (r == half && q & 1 == 1) {
        q += 1;
    }
    let (int_part, q) = if q == scale {
        (int_part + 1, 0)
    } else {
        (int_part, q)
    };
    (int_part.to_string(), q as u64)
}

/// The decimal digits of `value * 2^shift` (up to 16,384 bits).
fn shifted_decimal(value: u64, shift: u32) -> String {
    if shift < 64 {
        return (u128::from(value) << shift).to_string();
    }
    // Little-endian 32-bit limbs, then repeated division by 10^9.
    let mut limbs = vec![0u32; (shift / 32) as usize];
    let wide = u128::from(value) << (shift % 32);
    limbs.extend([wide as u32, (wide >> 32) as u32, (wide >> 64) as u32]);
    let mut chunks = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem = 0u64;
        for limb in limbs.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
    }
    let mut text = chunks.pop().map_or_else(|| "0".into(), |c| c.to_string());
    for chunk in chunks.iter().rev() {
        text.push_str(&format!("{chunk:09}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> Option<String> {
        let sum = LongDouble::parse(a.as_bytes())? + LongDouble::parse(b.as_bytes())?;
        sum.is_finite().then(|| sum.to_human_string())
    }

    #[test]
    fn long_double_sums_match_redis() {
        // Replies recorded from redis-server 7.0.15 on x86-64.
        for (a, b, want) in [
            ("10.5", "0.1", "10.6"),
            ("0.1", "0.2", "0.3"),
            ("3.0", "0", "3"),
            ("5000", "-5000", "0"),
            ("0", "+.5", "0.5"),
            ("1", "-1.25", "-0.25"),
            ("1", "1e3", "1001"),
            ("16", "1000.1", "1016.09999999999999998"),
            ("9223372036854775806", "-0.1", "9223372036854775806"),
            ("0", "0x10", "16"),
            ("0", "0x1p3", "8"),
            ("0", "-0", "0"),
            ("0", "1e-30", "0"),
            ("0", "-1e-30", "0"),
        ] {
            assert_eq!(incr(a, b).as_deref(), Some(want), "{a} + {b}");
        }
        assert_eq!(incr("1e4932", "1e4932"), None);
        assert_eq!(incr("inf", "1"), None);
        assert_eq!(
            incr("0", "1e300").unwrap(),
            "1000000000000000000008997324079559193870523944273290747938260082321265646596180935755849152083750497190350372508614274835903592556184672983913096260520748646287327135641843653294084255107606016789726652932370030551382947620994540294772781889620606179267611627097410650567187386105690089424915104006144"
        );
        assert_eq!(incr("0", "1e-17").as_deref(), Some("0.00000000000000001"));
        assert_eq!(incr("0", "5e-18").as_deref(), Some("0"));
        assert_eq!(incr("0", "0x1p-18").as_deref(), Some("0.00000381469726562"));
        assert_eq!(incr("0", "0x3p-18").as_deref(), Some("0.00001144409179688"));
        assert_eq!(incr("0", "1e-4940").as_deref(), Some("0"));
    }

    #[test]
    fn timeouts_convert_as_x86_does() {
        let ms = |s: &str| {
            LongDouble::parse(s.as_bytes())
                .unwrap()
                .millis_ceil_as_i64()
        };
        assert_eq!(ms("0.01"), 10);
        assert_eq!(ms("1.5"), 1500);
        assert_eq!(ms("0x10"), 16_000);
        assert_eq!(ms("-0.0001"), 0);
        assert_eq!(ms("-0.9999"), -999);
        assert_eq!(ms("0.001"), 1);
        assert_eq!(ms("0.0001"), 1);
        assert_eq!(ms("1e-300"), 1);
        assert_eq!(ms("0.0015"), 2);
        assert_eq!(ms("0"), 0);
        assert_eq!(ms("inf"), i64::MIN);
        assert_eq!(ms("9223372036854775807"), i64::MIN);
        assert_eq!(ms("1e400"), i64::MIN);
    }

    #[test]
    fn strtold_acceptance() {
        for ok in [
            "1",
            "-1.5",
            ".5",
            "5.",
            "1e5",
            "1E+5",
            "0x1P-3",
            "0x.8",
            "inf",
            "-Infinity",
            "+3",
        ] {
            assert!(LongDouble::parse(ok.as_bytes()).is_some(), "{ok}");
        }
        for bad in [
            "", " 1", "1 ", "1e", "1e+", "0x", ".", "-", "nan", "1\x002", "abc", "1e5000",
            "1e-5000", "0x1p",
        ] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert!(LongDouble::parse(&vec![b'1'; MAX_LONG_DOUBLE_CHARS]).is_none());
    }

    #[test]
    fn strtod_for_scores_and_ranges() {
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"1e-320"), Some(1e-320));
        for bad in ["", " 1", "1e400", "1e-400", "nan", "0x", "1\x00"] {
            assert_eq!(parse_f64(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse_f64_lenient(b""), Some(0.0));
        assert_eq!(parse_f64_lenient(b" 2"), Some(2.0));
        assert_eq!(parse_f64_lenient(b"2\x00junk"), Some(2.0));
        assert_eq!(parse_f64_lenient(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_f64_lenient(b" "), None);
        assert_eq!(parse_f64_lenient(b"nan"), None);
    }

    #[test]
    fn fixed_rounding_ties_to_even() {
        // 2^-18 = 0.000003814697265625 has 18 decimals: a tie at the 17th.
        assert_eq!(fixed_17(1, -18), ("0".into(), 381469726562));
        // 3 * 2^-18 = 0.000011444091796875: tie, rounds up to even.
        assert_eq!(fixed_17(3, -18), ("0".into(), 1144409179688));
        assert_eq!(shifted_decimal(1, 100), "1267650600228229401496703205376");
    }
}
