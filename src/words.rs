//! Short byte strings read as machine words: eight bytes as one number
//! (the protocol's names and options, compared a word at a time) and two
//! keys compared in place (the keyspace's lookups).

/// The first eight bytes of `bytes` (at least eight), little-endian.
#[inline]
pub fn word8(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(w)
}

/// Up to eight bytes as a little-endian word, zero above them.
#[inline]
pub fn word_of(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    match len {
        0 => 0,
        1..=3 => {
            u64::from(bytes[0])
                | u64::from(bytes[len / 2]) << (8 * (len / 2))
                | u64::from(bytes[len - 1]) << (8 * (len - 1))
        }
        4..=7 => {
            let lo = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let tail = &bytes[len - 4..];
            let hi = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
            u64::from(lo) | u64::from(hi) << (8 * (len - 4))
        }
        _ => word8(bytes),
    }
}

/// Two byte strings equal: 8 to 16 bytes (most keys) as two overlapping
/// words compared in place, others by `==` (a call to memcmp).
#[inline]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        return word8(a) == word8(b) && word8(&a[n - 8..]) == word8(&b[n - 8..]);
    }
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `same_bytes` is `==` for every length, a byte changed anywhere.
    #[test]
    fn same_bytes_is_byte_equality() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for _ in 0..200_000 {
            let a: Vec<u8> = (0..rng.gen_range(0..24))
                .map(|_| rng.gen_range(0..3))
                .collect();
            let mut b = a.clone();
            match rng.gen_range(0..3) {
                0 if !b.is_empty() => {
                    let at = rng.gen_range(0..b.len());
                    b[at] ^= 1 << rng.gen_range(0..8);
                }
                1 => b.push(0),
                _ => {}
            }
            assert_eq!(same_bytes(&a, &b), a == b, "{a:?} {b:?}");
        }
    }
}
