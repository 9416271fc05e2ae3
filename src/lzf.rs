//! LZF compression, the format Redis's RDB strings use (`C3` strings):
//! literal runs (a control byte `len - 1` < 32, then the bytes) and back
//! references (3 bits of length and 13 bits of distance, the length
//! continued in a third byte past 7). Decompression is the `lzf` crate's.
//!
//! Why not the crate's compressor: it allocates and zeroes a 512 KB hash
//! table on every call, and an RDB file asks for one call per string over
//! 20 bytes — every listpack of every small hash, sorted set and list.
//! Measured: 79% of SAVE's time in that memset (1M mixed keys: 0.94 s
//! against 0.17 s before the listpacks). Here the table is the caller's,
//! reused, and only as large as the input needs.

/// The longest distance a back reference reaches (13 bits).
const MAX_OFF: usize = 1 << 13;
/// The longest match one back reference copies.
const MAX_REF: usize = (1 << 8) + (1 << 3);
/// The longest literal run.
const MAX_LIT: usize = 1 << 5;

/// A compressor's reusable hash table (positions + 1; 0 = empty).
#[derive(Default)]
pub struct Compressor {
    table: Vec<u32>,
}

impl Compressor {
    /// `input` compressed, if that takes at most `limit` bytes.
    pub fn compress(&mut self, input: &[u8], limit: usize) -> Option<Vec<u8>> {
        let n = input.len();
        if n < 4 || n > u32::MAX as usize - 1 {
            return None;
        }
        let slots = n.next_power_of_two().clamp(256, 1 << 14);
        self.table.clear();
        self.table.resize(slots, 0);
        let mask = slots - 1;
        let hash = |i: usize| {
            let v =
                u32::from(input[i]) << 16 | u32::from(input[i + 1]) << 8 | u32::from(input[i + 2]);
            (v.wrapping_mul(0x9E37_79B1) >> 16) as usize & mask
        };
        let mut out = Vec::with_capacity(limit.min(n));
        let mut literal_start = 0;
        let mut i = 0;
        while i + 2 < n {
            let h = hash(i);
            let candidate = self.table[h] as usize;
            self.table[h] = (i + 1) as u32;
            if candidate > 0 {
                let r = candidate - 1;
                let off = i - r - 1;
                if off < MAX_OFF && input[r..r + 3] == input[i..i + 3] {
                    let max = MAX_REF.min(n - i);
                    let mut len = 3;
                    while len < max && input[r + len] == input[i + len] {
                        len += 1;
                    }
                    literals(&mut out, &input[literal_start..i]);
                    let (l, o) = (len - 2, off);
                    if l < 7 {
                        out.extend_from_slice(&[(l << 5 | o >> 8) as u8, o as u8]);
                    } else {
                        out.extend_from_slice(&[(7 << 5 | o >> 8) as u8, (l - 7) as u8, o as u8]);
                    }
                    for j in i + 1..(i + len).min(n - 2) {
                        self.table[hash(j)] = (j + 1) as u32;
                    }
                    i += len;
                    literal_start = i;
                    if out.len() > limit {
                        return None;
                    }
                    continue;
                }
            }
            i += 1;
        }
        literals(&mut out, &input[literal_start..]);
        (out.len() <= limit).then_some(out)
    }
}

/// Literal runs of at most `MAX_LIT` bytes, each after its control byte.
fn literals(out: &mut Vec<u8>, bytes: &[u8]) {
    for run in bytes.chunks(MAX_LIT) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn what_it_compresses_the_reference_decompressor_restores() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let mut c = Compressor::default();
        let mut inputs: Vec<Vec<u8>> = vec![
            b"abc".repeat(40),
            vec![b'x'; 100_000],
            b"value-1value-2value-3value-4value-5".to_vec(),
        ];
        for _ in 0..500 {
            let len = rng.gen_range(4..5000);
            let alphabet = rng.gen_range(1..=20u8);
            inputs.push((0..len).map(|_| rng.gen_range(0..=alphabet)).collect());
        }
        let mut compressed = 0;
        for input in &inputs {
            if let Some(packed) = c.compress(input, input.len() - 4) {
                assert!(packed.len() <= input.len() - 4);
                assert_eq!(lzf::decompress(&packed, input.len()).unwrap(), *input);
                compressed += 1;
            }
        }
        assert!(compressed > 100, "{compressed}");
        assert!(c.compress(&vec![b'x'; 100_000], 100_000).unwrap().len() < 1500);
        // Incompressible input is refused, not expanded past the limit.
        let noise: Vec<u8> = (0..1000).map(|_| rng.gen()).collect();
        assert!(c.compress(&noise, 996).is_none());
    }
}
