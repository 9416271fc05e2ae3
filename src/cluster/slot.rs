//! Hash slots: which of the 16384 slots a key belongs to (Redis's
//! `keyHashSlot`: CRC16-XMODEM of the key, or of its hash tag, the part
//! between the first `{` and the next `}` when that part is not empty),
//! and slot arguments as CLUSTER's subcommands parse them.

use crc::{Crc, Table, CRC_16_XMODEM};

/// How many hash slots a cluster has (`CLUSTER_SLOTS`).
pub const SLOTS: usize = 16384;

/// Bytes of a slot bitmap (one bit per slot, slot 0 the lowest bit of
/// the first byte, as Redis's `bitmapTestBit`).
pub const BITMAP_BYTES: usize = SLOTS / 8;

/// Slice-by-16 tables: a typical key is hashed in one or two steps (the
/// cluster check hashes every request's keys).
const CRC16: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_XMODEM);

/// The part of `key` that is hashed: its hash tag if it has a non-empty
/// one, else the whole key.
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key`.
pub fn key_slot(key: &[u8]) -> u16 {
    CRC16.checksum(hash_tag(key)) & (SLOTS as u16 - 1)
}

/// Whether `slot` is set in a slot bitmap.
pub fn bit(bitmap: &[u8; BITMAP_BYTES], slot: usize) -> bool {
    bitmap[slot / 8] & (1 << (slot & 7)) != 0
}

pub fn set_bit(bitmap: &mut [u8; BITMAP_BYTES], slot: usize, on: bool) {
    if on {
        bitmap[slot / 8] |= 1 << (slot & 7);
    } else {
        bitmap[slot / 8] &= !(1 << (slot & 7));
    }
}

/// Runs of consecutive slots for which `owned` holds, as (first, last).
pub fn ranges(owned: impl Fn(usize) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for slot in 0..=SLOTS {
        let on = slot < SLOTS && owned(slot);
        match (on, start) {
            (true, None) => start = Some(slot),
            (false, Some(first)) => {
                out.push((first, slot - 1));
                start = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_hash_tags_as_redis() {
        // Values from Redis's cluster specification and redis-cli.
        assert_eq!(key_slot(b"123456789"), 0x31C3 & 16383);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"{"), b"{");
        assert_eq!(key_slot(b""), 0);
    }

    #[test]
    fn ranges_of_a_bitmap() {
        let mut map = [0u8; BITMAP_BYTES];
        for slot in [0, 1, 2, 5, 16383] {
            set_bit(&mut map, slot, true);
        }
        assert_eq!(ranges(|s| bit(&map, s)), [(0, 2), (5, 5), (16383, 16383)]);
        set_bit(&mut map, 1, false);
        assert!(!bit(&map, 1));
    }
}
