//! Bitmap commands on the string type: SETBIT, GETBIT, BITCOUNT, BITPOS,
//! BITOP, BITFIELD and BITFIELD_RO, with Redis 7.0's bit order (bit 0 is the
//! most significant bit of the first byte), limits and errors.
//!
//! Strings are read with `strings::read_string` and changed in place with
//! `Db::update_str`; this file holds only the bit arithmetic and grammar.

use super::aggregate::store_result;
use super::strings::read_string;
use super::{int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, StrEncoding};
use crate::protocol::request::parse_i64;
use crate::protocol::Args;
use crate::value::Value;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("setbit", setbit),
    ("getbit", getbit),
    ("bitcount", bitcount),
    ("bitpos", bitpos),
    ("bitop", bitop),
    ("bitfield", bitfield),
    ("bitfield_ro", bitfield_ro),
];

const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";

/// A bit offset argument (`getBitOffsetFromArgument`): a non-negative
/// integer whose byte is within `proto-max-bulk-len` (not checked for the
/// primary's stream or a file being loaded); with `bits` (BITFIELD), `#n`
/// means `n * bits`.
fn bit_offset(ctx: &Ctx, arg: &[u8], bits: Option<u32>) -> Result<u64, CmdError> {
    let (digits, times) = match (arg.first(), bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], i64::from(bits)),
        _ => (arg, 1),
    };
    let offset = parse_i64(digits)
        .map(|n| n.wrapping_mul(times))
        .filter(|&n| n >= 0)
        .ok_or(CmdError::Static(BAD_OFFSET))?;
    if (offset >> 3) >= ctx.server.config.proto_max_bulk_len && !ctx.obeys_client() {
        return Err(CmdError::Static(BAD_OFFSET));
    }
    Ok(offset as u64)
}

/// Grows `s` with zeros so that bit `bit` exists; whether it grew.
fn grow_to_bit(s: &mut Vec<u8>, bit: u64) -> Result<bool, CmdError> {
    let len = (bit >> 3) as usize + 1;
    if s.len() >= len {
        return Ok(false);
    }
    s.try_reserve(len - s.len()).map_err(|_| {
        CmdError::Static("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    })?;
    s.resize(len, 0);
    Ok(true)
}

/// Changes the string at `key` (created if absent) with `edit`, which
/// returns its reply and whether it changed a bit; grown strings count as
/// changed. Signals `setbit` only on a change, as Redis does.
fn update_bits<R>(
    ctx: &mut Ctx,
    key: &[u8],
    highest_bit: u64,
    edit: impl FnOnce(&mut [u8], bool) -> (R, bool),
) -> Result<R, CmdError> {
    let now_ms = ctx.now_ms;
    let (reply, changed) = ctx
        .db()
        .update_str(
            key,
            now_ms,
            |_| StrEncoding::Raw,
            |s, existed| -> Result<(R, bool), CmdError> {
                let grew = grow_to_bit(s, highest_bit)? || !existed;
                let (reply, changed) = edit(s, grew);
                Ok((reply, changed || grew))
            },
        )
        .unwrap_or(Err(CmdError::WrongType))?;
    if changed {
        ctx.signal(EventClass::STRING, "setbit", key);
    }
    Ok(reply)
}

fn setbit(ctx: &mut Ctx, args: Args) -> CmdResult {
    let offset = bit_offset(ctx, &args[2], None)?;
    let on = match parse_i64(&args[3]) {
        Some(v @ (0 | 1)) => v as u8,
        _ => return Err(CmdError::Static(BAD_BIT)),
    };
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let was = update_bits(ctx, &args[1], offset, |s, _| {
        let was = s[byte] & mask != 0;
        s[byte] = if on == 1 {
            s[byte] | mask
        } else {
            s[byte] & !mask
        };
        (was, was != (on == 1))
    })?;
    ctx.out().int(i64::from(was));
    Ok(())
}

fn getbit(ctx: &mut Ctx, args: Args) -> CmdResult {
    let offset = bit_offset(ctx, &args[2], None)?;
    let s = read_string(ctx, &args[1])?.unwrap_or_default();
    let byte = (offset >> 3) as usize;
    let bit = s.get(byte).is_some_and(|b| b & (0x80 >> (offset & 7)) != 0);
    ctx.out().int(i64::from(bit));
    Ok(())
}

/// A BITCOUNT/BITPOS range `start end` over a string of `len` bytes, in
/// bytes or (BIT) in bits, as the inclusive bit range it covers after
/// Redis's index arithmetic; `None` when empty.
fn bit_range(len: usize, start: i64, end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let total = if in_bits { len as i64 * 8 } else { len as i64 };
    let from_end = |i: i64| if i < 0 { (total + i).max(0) } else { i };
    let (start, end) = (from_end(start), from_end(end).min(total - 1));
    if start > end {
        return None;
    }
    let (start, end) = (start as u64, end as u64);
    Some(if in_bits {
        (start, end)
    } else {
        (start * 8, end * 8 + 7)
    })
}

/// `BIT` or `BYTE`: whether the range is in bits.
fn unit_arg(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "bit") {
        Ok(true)
    } else if is(arg, "byte") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

/// The set bits of `s` in the inclusive bit range.
fn popcount(s: &[u8], (first, last): (u64, u64)) -> u64 {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let bytes = &s[first_byte..=last_byte];
    let mut count: u64 = 0;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        count += u64::from(u64::from_ne_bytes(word).count_ones());
    }
    count += chunks
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>();
    // Leave out the bits of the edge bytes outside the range.
    let head = s[first_byte] & !(0xffu8 >> (first & 7));
    let tail = s[last_byte] & (0x7fu8 >> (last & 7));
    count - u64::from(head.count_ones()) - u64::from(tail.count_ones())
}

fn bitcount(ctx: &mut Ctx, args: Args) -> CmdResult {
    let Some(s) = read_string(ctx, &args[1])? else {
        ctx.out().int(0);
        return Ok(());
    };
    let range = match args.len() {
        2 => bit_range(s.len(), 0, -1, false),
        4 | 5 => {
            let (start, end) = (int_arg(&args[2])?, int_arg(&args[3])?);
            if start < 0 && end < 0 && start > end {
                None
            } else {
                let in_bits = args.len() == 5 && unit_arg(&args[4])?;
                bit_range(s.len(), start, end, in_bits)
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    let count = range.map_or(0, |r| popcount(s, r));
    ctx.out().int(count as i64);
    Ok(())
}

/// The first bit equal to `bit` in the inclusive bit range, if any.
fn first_bit(s: &[u8], (first, last): (u64, u64), bit: bool) -> Option<u64> {
    let skip = if bit { 0u8 } else { 0xff };
    let mut pos = first;
    while pos <= last {
        let byte = s[(pos >> 3) as usize];
        // Whole bytes that cannot hold the bit are stepped over at once.
        if pos & 7 == 0 && last - pos >= 7 && byte == skip {
            pos += 8;
            continue;
        }
        if (byte & (0x80 >> (pos & 7)) != 0) == bit {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

fn bitpos(ctx: &mut Ctx, args: Args) -> CmdResult {
    let bit = match int_arg(&args[2])? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::Static("ERR The bit argument must be 1 or 0.")),
    };
    let Some(s) = read_string(ctx, &args[1])? else {
        // A missing key is an endless run of zeros.
        ctx.out().int(if bit { -1 } else { 0 });
        return Ok(());
    };
    let (range, end_given) = match args.len() {
        3 => (bit_range(s.len(), 0, -1, false), false),
        4..=6 => {
            let start = int_arg(&args[3])?;
            let in_bits = args.len() == 6 && unit_arg(&args[5])?;
            let end = match args.len() {
                4 => -1,
                _ => int_arg(&args[4])?,
            };
            (bit_range(s.len(), start, end, in_bits), args.len() > 4)
        }
        _ => return Err(CmdError::Syntax),
    };
    let pos = match range {
        None => -1,
        Some(range) => match first_bit(s, range, bit) {
            Some(pos) => pos as i64,
            // Looking for a clear bit with no end given, the string
            // counts as padded with zeros on the right.
            None if !bit && !end_given => range.1 as i64 + 1,
            None => -1,
        },
    };
    ctx.out().int(pos);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

fn bitop(ctx: &mut Ctx, args: Args) -> CmdResult {
    let op = match &args[1] {
        a if is(a, "and") => BitOp::And,
        a if is(a, "or") => BitOp::Or,
        a if is(a, "xor") => BitOp::Xor,
        a if is(a, "not") => BitOp::Not,
        _ => return Err(CmdError::Syntax),
    };
    if op == BitOp::Not && args.len() != 4 {
        return Err(CmdError::Static(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let mut sources: Vec<Vec<u8>> = Vec::with_capacity(args.len() - 3);
    for key in args.iter().skip(3) {
        sources.push(read_string(ctx, key)?.unwrap_or_default().to_vec());
    }
    let result = bitop_bytes(op, &sources);
    let len = result.len();
    let result = (!result.is_empty()).then_some(Value::Str(result));
    let event = (EventClass::STRING, "set");
    store_result(ctx, &args[2], result, StrEncoding::Raw, event);
    ctx.out().int(len as i64);
    Ok(())
}

/// BITOP's result: as long as the longest source, shorter ones read as
/// zero-padded.
fn bitop_bytes(op: BitOp, sources: &[Vec<u8>]) -> Vec<u8> {
    let len = sources.iter().map(Vec::len).max().unwrap_or(0);
    let byte = |s: &Vec<u8>, i: usize| s.get(i).copied().unwrap_or(0);
    let Some((first, rest)) = sources.split_first() else {
        return Vec::new();
    };
    let mut out: Vec<u8> = (0..len).map(|i| byte(first, i)).collect();
    match op {
        BitOp::Not => out.iter_mut().for_each(|b| *b = !*b),
        _ => {
            for src in rest {
                for (i, o) in out.iter_mut().enumerate() {
                    let b = byte(src, i);
                    match op {
                        BitOp::And => *o &= b,
                        BitOp::Or => *o |= b,
                        _ => *o ^= b,
                    }
                }
            }
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// One BITFIELD operation: an integer of `bits` bits at bit `offset`.
#[derive(Clone, Copy)]
struct Field {
    op: FieldOp,
    offset: u64,
    bits: u32,
    signed: bool,
    overflow: Overflow,
}

/// `i<1..64>` or `u<1..63>`: (signed, bits).
fn field_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let err = CmdError::Static("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.");
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err),
    };
    let max = if signed { 64 } else { 63 };
    match parse_i64(super::c_str(&arg[1..], usize::MAX)) {
        Some(bits) if (1..=max).contains(&bits) => Ok((signed, bits as u32)),
        _ => Err(err),
    }
}

/// BITFIELD's operations, parsed whole before any runs (Redis's order of
/// checks: subcommand, type, offset, value).
fn parse_fields(ctx: &Ctx, args: &Args) -> Result<Vec<Field>, CmdError> {
    let mut fields = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let (name, left) = (&args[j], args.len() - j - 1);
        let op_args = match name {
            n if is(n, "get") && left >= 2 => 2,
            n if (is(n, "set") || is(n, "incrby")) && left >= 3 => 3,
            n if is(n, "overflow") && left >= 1 => {
                overflow = match &args[j + 1] {
                    a if is(a, "wrap") => Overflow::Wrap,
                    a if is(a, "sat") => Overflow::Sat,
                    a if is(a, "fail") => Overflow::Fail,
                    _ => return Err(CmdError::Static("ERR Invalid OVERFLOW type specified")),
                };
                j += 2;
                continue;
            }
            _ => return Err(CmdError::Syntax),
        };
        let (signed, bits) = field_type(&args[j + 1])?;
        let offset = bit_offset(ctx, &args[j + 2], Some(bits))?;
        let op = match op_args {
            2 => FieldOp::Get,
            _ if is(name, "set") => FieldOp::Set(int_arg(&args[j + 3])?),
            _ => FieldOp::IncrBy(int_arg(&args[j + 3])?),
        };
        fields.push(Field {
            op,
            offset,
            bits,
            signed,
            overflow,
        });
        j += 1 + op_args;
    }
    Ok(fields)
}

fn bitfield(ctx: &mut Ctx, args: Args) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

fn bitfield_ro(ctx: &mut Ctx, args: Args) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

fn bitfield_generic(ctx: &mut Ctx, args: Args, read_only: bool) -> CmdResult {
    let fields = parse_fields(ctx, &args)?;
    let highest_write = fields
        .iter()
        .filter(|f| f.op != FieldOp::Get)
        .map(|f| f.offset + u64::from(f.bits) - 1)
        .max();
    let Some(highest) = highest_write else {
        let s = read_string(ctx, &args[1])?.unwrap_or_default();
        let values: Vec<Option<i64>> = fields.iter().map(|f| Some(get_field(s, f))).collect();
        reply_fields(ctx, &values);
        return Ok(());
    };
    if read_only {
        return Err(CmdError::Static(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let values = update_bits(ctx, &args[1], highest, |s, grew| {
        let mut changed = false;
        let values = fields
            .iter()
            .map(|f| {
                let (reply, wrote) = apply_field(s, f);
                changed |= wrote || grew;
                reply
            })
            .collect::<Vec<_>>();
        (values, changed)
    })?;
    reply_fields(ctx, &values);
    Ok(())
}

fn reply_fields(ctx: &mut Ctx, values: &[Option<i64>]) {
    let out = ctx.out();
    out.array(values.len());
    for v in values {
        match v {
            Some(v) => out.int(*v),
            None => out.null(),
        }
    }
}

/// The field's value as an unsigned bit pattern (`bits` low bits).
fn get_bits(s: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0u64, |value, j| {
        let pos = offset + j;
        let byte = s.get((pos >> 3) as usize).copied().unwrap_or(0);
        (value << 1) | u64::from((byte >> (7 - (pos & 7))) & 1)
    })
}

/// Writes the `bits` low bits of `value` at `offset` (inside `s`).
fn set_bits(s: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let pos = offset + j;
        let mask = 0x80u8 >> (pos & 7);
        let byte = &mut s[(pos >> 3) as usize];
        if value >> (u64::from(bits) - 1 - j) & 1 == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// The field read as its type (sign-extended when signed).
fn get_field(s: &[u8], f: &Field) -> i64 {
    let raw = get_bits(s, f.offset, f.bits);
    if f.signed && f.bits < 64 && raw >> (f.bits - 1) & 1 == 1 {
        (raw | (u64::MAX << f.bits)) as i64
    } else {
        raw as i64
    }
}

/// Runs SET or INCRBY on `s`: the reply (`None`: OVERFLOW FAIL refused
/// it) and whether the stored bits changed.
fn apply_field(s: &mut [u8], f: &Field) -> (Option<i64>, bool) {
    let old = get_field(s, f);
    let (target, delta, reply_old) = match f.op {
        FieldOp::Set(v) => (v, 0, true),
        FieldOp::IncrBy(d) => (old, d, false),
        FieldOp::Get => return (Some(old), false),
    };
    let new = if f.signed {
        signed_result(target, delta, f.bits, f.overflow)
    } else {
        unsigned_result(target as u64, delta, f.bits, f.overflow).map(|v| v as i64)
    };
    let Some(new) = new else {
        return (None, false);
    };
    set_bits(s, f.offset, f.bits, new as u64);
    (Some(if reply_old { old } else { new }), new != old)
}

/// `value + incr` as an unsigned integer of `bits` bits under the overflow
/// rule (`checkUnsignedBitfieldOverflow`); `None` when FAIL refuses it.
fn unsigned_result(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Option<u64> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let over = value > max || (incr > 0 && incr > max_incr);
    let under = !over && incr < 0 && incr < min_incr;
    if !over && !under {
        return Some(value.wrapping_add(incr as u64));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if over { max } else { 0 }),
        Overflow::Wrap => Some(value.wrapping_add(incr as u64) & max),
    }
}

/// `value + incr` as a signed integer of `bits` bits under the overflow
/// rule (`checkSignedBitfieldOverflow`); `None` when FAIL refuses it.
fn signed_result(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let over = value > max
        || (bits != 64 && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr);
    let under = !over
        && (value < min
            || (bits != 64 && incr < min_incr)
            || (value < 0 && incr < 0 && incr < min_incr));
    if !over && !under {
        return Some(value.wrapping_add(incr));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if over { max } else { min }),
        Overflow::Wrap => {
            let sum = (value as u64).wrapping_add(incr as u64);
            if bits == 64 {
                return Some(sum as i64);
            }
            let mask = u64::MAX << bits;
            let wrapped = if sum & (1u64 << (bits - 1)) != 0 {
                sum | mask
            } else {
                sum & !mask
            };
            Some(wrapped as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_redis_index_arithmetic() {
        assert_eq!(bit_range(3, 0, -1, false), Some((0, 23)));
        assert_eq!(bit_range(3, 1, 1, false), Some((8, 15)));
        assert_eq!(bit_range(3, 5, 10, true), Some((5, 10)));
        assert_eq!(bit_range(3, -100, 100, false), Some((0, 23)));
        assert_eq!(bit_range(3, 2, 1, false), None);
        assert_eq!(bit_range(0, 0, -1, false), None);
    }

    #[test]
    fn popcount_honours_bit_edges() {
        let s = [0xffu8, 0xff, 0xff];
        assert_eq!(popcount(&s, (0, 23)), 24);
        assert_eq!(popcount(&s, (3, 20)), 18);
        assert_eq!(popcount(&s, (7, 7)), 1);
        let long = vec![0x0fu8; 100];
        assert_eq!(popcount(&long, (0, 799)), 400);
    }

    #[test]
    fn first_bit_finds_both_values() {
        let s = [0x00u8, 0x01, 0xff];
        assert_eq!(first_bit(&s, (0, 23), true), Some(15));
        assert_eq!(first_bit(&s, (16, 23), false), None);
        assert_eq!(first_bit(&s, (0, 23), false), Some(0));
        assert_eq!(first_bit(&s, (0, 14), true), None);
    }

    #[test]
    fn bitfield_overflow_rules() {
        use Overflow::*;
        assert_eq!(unsigned_result(250, 10, 8, Wrap), Some(4));
        assert_eq!(unsigned_result(250, 10, 8, Sat), Some(255));
        assert_eq!(unsigned_result(250, 10, 8, Fail), None);
        assert_eq!(unsigned_result(5, -10, 8, Sat), Some(0));
        assert_eq!(unsigned_result(5, -10, 8, Wrap), Some(251));
        assert_eq!(signed_result(120, 10, 8, Wrap), Some(-126));
        assert_eq!(signed_result(120, 10, 8, Sat), Some(127));
        assert_eq!(signed_result(-120, -10, 8, Sat), Some(-128));
        assert_eq!(signed_result(i64::MAX, 1, 64, Wrap), Some(i64::MIN));
        assert_eq!(signed_result(i64::MAX, 1, 64, Fail), None);
        assert_eq!(signed_result(300, 0, 8, Sat), Some(127));
    }

    #[test]
    fn bit_patterns_round_trip() {
        let mut s = vec![0u8; 9];
        set_bits(&mut s, 5, 64, u64::MAX - 1);
        assert_eq!(get_bits(&s, 5, 64), u64::MAX - 1);
        let f = Field {
            op: FieldOp::Get,
            offset: 5,
            bits: 4,
            signed: true,
            overflow: Overflow::Wrap,
        };
        assert_eq!(get_field(&s, &f), -1);
    }
}
