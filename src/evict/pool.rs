//! Eviction's candidates between calls (the server state's): Redis's
//! eviction pool of the best keys sampled so far, and where the random
//! policies take their next key.

/// The best candidates seen (Redis's `EVPOOL_SIZE`).
const POOL_SIZE: usize = 16;

/// Eviction's state between calls.
#[derive(Default)]
pub struct Evictor {
    /// Candidates, best (highest score) last: (score, database, key).
    pool: Vec<(u64, usize, Vec<u8>)>,
    /// The database the random policies take a key from next.
    pub(super) next_db: usize,
}

impl Evictor {
    /// Puts a candidate in the pool, kept sorted by score and at most
    /// `POOL_SIZE` long: a candidate worse than all of a full pool is dropped
    /// (before its key is copied). A key sampled twice may sit there twice,
    /// as in Redis: its second copy is found gone and skipped.
    pub(super) fn insert(&mut self, score: u64, db: usize, key: &[u8]) {
        let pool = &mut self.pool;
        let at = pool.partition_point(|(s, _, _)| *s < score);
        if pool.len() >= POOL_SIZE && at == 0 {
            return;
        }
        if pool.len() >= POOL_SIZE {
            pool.remove(0);
            pool.insert(at - 1, (score, db, key.to_vec()));
        } else {
            pool.insert(at, (score, db, key.to_vec()));
        }
    }

    /// The best candidate, out of the pool.
    pub(super) fn take_best(&mut self) -> Option<(usize, Vec<u8>)> {
        self.pool.pop().map(|(_, db, key)| (db, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_keeps_the_best_sixteen_in_order() {
        let mut pool = Evictor::default();
        for score in [5u64, 1, 9, 3] {
            pool.insert(score, 0, score.to_string().as_bytes());
        }
        let scores: Vec<u64> = pool.pool.iter().map(|c| c.0).collect();
        assert_eq!(scores, [1, 3, 5, 9]);
        for score in 10..40u64 {
            pool.insert(score, 1, score.to_string().as_bytes());
        }
        assert_eq!(pool.pool.len(), POOL_SIZE);
        assert_eq!(pool.pool.first().unwrap().0, 24);
        assert_eq!(pool.pool.last().unwrap().0, 39);
        pool.insert(2, 1, b"low");
        assert_eq!(pool.pool.first().unwrap().0, 24);
    }
}
