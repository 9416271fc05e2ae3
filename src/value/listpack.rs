//! How many bytes values take in Redis's listpack encoding (`listpack.c`):
//! what an RDB file writes, and what streams count as their size.

/// Bytes of a listpack entry's back-length for an entry of `l` bytes.
fn lp_backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Bytes the integer `n` takes in a listpack, back-length included (the
/// encodings `ListpackWriter::push_int` writes).
pub fn lp_int_size(n: i64) -> usize {
    let enc = if (0..=127).contains(&n) {
        1
    } else if (-4096..=4095).contains(&n) {
        2
    } else if i16::try_from(n).is_ok() {
        3
    } else if (-(1 << 23)..(1 << 23)).contains(&n) {
        4
    } else if i32::try_from(n).is_ok() {
        5
    } else {
        9
    };
    enc + lp_backlen_size(enc)
}

/// Bytes the string `s` takes in a listpack (as an integer when it reads
/// as one, as `ListpackWriter::push` stores it).
pub fn lp_string_size(s: &[u8]) -> usize {
    if let Some(n) = super::packed::canonical_int(s) {
        return lp_int_size(n);
    }
    let len = s.len();
    let enc = len
        + if len < 64 {
            1
        } else if len < 4096 {
            2
        } else {
            5
        };
    enc + lp_backlen_size(enc)
}
