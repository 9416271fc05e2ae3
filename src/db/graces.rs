//! Soft deadlines (issue 42's `SET ... STALE`): a key is fresh until its
//! soft deadline and stale from then to its hard deadline, its ordinary
//! TTL. What is kept is the grace, the length of the stale time, so that
//! EXPIRE and its kind move both deadlines and keep the grace; the soft
//! deadline is the hard one minus it. Any other write of the key, and its
//! deletion, drop the grace (`Db::signal`, `Db::remove_at`). A database
//! with none spends one emptiness check per write on them.

use std::collections::HashMap;

#[derive(Default)]
pub struct Graces(HashMap<Box<[u8]>, i64, crate::dict::DefaultHasher>);

impl Graces {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `key` is stale for `grace_ms` before its hard deadline.
    pub fn set(&mut self, key: &[u8], grace_ms: i64) {
        self.0.insert(key.into(), grace_ms);
    }

    pub fn get(&self, key: &[u8]) -> Option<i64> {
        if self.0.is_empty() {
            return None;
        }
        self.0.get(key).copied()
    }

    pub fn remove(&mut self, key: &[u8]) {
        if !self.0.is_empty() {
            self.0.remove(key);
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}
