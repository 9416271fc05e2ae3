//! The keyspace's unit tests.

use super::*;
use rand::SeedableRng;

fn s(v: &str) -> Value {
    Value::Str(v.as_bytes().to_vec())
}

pub(super) fn check_invariants(db: &Db) {
    for slot in 0..db.expires.len() as u32 {
        let entry = db.expires.get(slot).entry;
        assert_eq!(db.dict.word(entry), slot);
    }
    db.expires.check();
    let with_ttl = db
        .dict
        .iter()
        .filter(|&(idx, _)| db.dict.word(idx) != NO_EXPIRE)
        .count();
    assert_eq!(with_ttl, db.expires.len());
}

/// Every hash with field deadlines has a record in the registry no
/// later than its earliest, and no other value has one.
fn check_field_deadlines(db: &Db) {
    for (idx, _) in db.dict.iter() {
        match db.element_deadline_at(idx) {
            Some(at) => assert!(
                db.element_deadlines
                    .bound(idx)
                    .is_some_and(|bound| bound <= at),
                "entry {idx}: earliest {at}, record {:?}",
                db.element_deadlines.bound(idx)
            ),
            None => assert_eq!(db.element_deadlines.bound(idx), None, "entry {idx}"),
        }
    }
}

/// Writes of every kind to hashes with and without field deadlines
/// (small and big, replaced, renamed, deleted, expiring) keep the
/// active cycle's registry right: it skips the writes that leave a
/// hash's earliest deadline where it was.
#[test]
fn the_field_deadline_registry_follows_every_write() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(21);
    let mut h = crate::harness::Harness::new();
    h.run("CONFIG SET hash-max-listpack-entries 6");
    // Overwritten big values go to the lazyfree thread.
    h.run("CONFIG SET lazyfree-lazy-server-del yes");
    for step in 0..20_000 {
        h.now_ms += rng.gen_range(0..5);
        let k = ["a", "b", "c", "d"][rng.gen_range(0..4)];
        // Mostly a few fields; now and then many (a big hash).
        let f = rng.gen_range(0..9);
        let ttl = rng.gen_range(1..400);
        let cmd = match rng.gen_range(0..16) {
            0 | 1 => format!("HSET {k} f{f} v"),
            2 => format!("HPEXPIRE {k} {ttl} FIELDS 2 f{f} f{}", f + 1),
            3 => format!("HPEXPIRE {k} {ttl} GT FIELDS 1 f{f}"),
            4 => format!("HPERSIST {k} FIELDS 1 f{f}"),
            5 => format!("HDEL {k} f{f}"),
            6 => format!("HINCRBY {k} f{f} 1"),
            7 => format!("HSETEX {k} PX {ttl} FIELDS 1 f{f} v"),
            8 => format!("HGETEX {k} PX {ttl} FIELDS 1 f{f}"),
            9 => format!("HGETDEL {k} FIELDS 1 f{f}"),
            10 => format!("SET {k} x"),
            11 => format!("RENAME {k} e"),
            12 => "HGETALL e".to_string(),
            // A big hash (a lazily freed value when overwritten).
            13 => {
                let pairs: Vec<String> = (0..70).map(|i| format!("g{i} v")).collect();
                format!("HSET {k} {}", pairs.join(" "))
            }
            14 => format!("HPEXPIRE {k} {ttl} FIELDS 1 g{f}"),
            _ => {
                h.expire_cycle();
                continue;
            }
        };
        h.run(&cmd);
        if step % 7 == 0 {
            check_field_deadlines(&h.server.dbs[0]);
        }
    }
    check_field_deadlines(&h.server.dbs[0]);
}

fn is_inline(db: &Db, key: &[u8]) -> bool {
    let idx = db.dict.find(key).expect("present");
    matches!(db.dict.entry(idx).slot, Slot::Packed { .. })
}

#[test]
fn a_changed_small_value_goes_back_inline_after_the_command() {
    let mut db = Db::new(0);
    for key in [&b"a"[..], b"b", b"c"] {
        db.set(key, Value::Set(crate::value::Set::default()), Ttl::Clear, 0);
        assert!(is_inline(&db, key));
    }
    // Two values unpacked for a change ...
    for key in [&b"a"[..], b"b"] {
        let Some(Some(Value::Set(set))) = db.value_mut(key, 0) else {
            panic!("a set");
        };
        set.add(b"7", crate::value::SetLimits::DEFAULT);
        assert!(!is_inline(&db, key));
    }
    // ... and the last entry ("c") moved into a removed one's place.
    assert!(db.delete(b"a", 0, false));
    db.settle_changed();
    assert!(is_inline(&db, b"b"));
    assert!(is_inline(&db, b"c"));
    assert_eq!(
        db.get(b"b", 0).map(|v| v.type_name()),
        Some("set"),
        "the change is kept"
    );
    let Some(ValueRef::Set(b)) = db.get(b"b", 0) else {
        panic!("a set");
    };
    assert!(b.contains(b"7"));
    assert!(db.changed.is_empty());
}

#[test]
fn entries_are_compact() {
    // A dict node adds 8 bytes (next, the deadline position) to the
    // entry: 48 in all.
    assert_eq!(std::mem::size_of::<Entry>(), 40);
    assert_eq!(std::mem::size_of::<crate::deadlines::Volatile>(), 16);
    // A hash field's deadline record (issue 21: <= 16 bytes per field
    // with a TTL, with its 4-byte position).
    assert_eq!(
        std::mem::size_of::<crate::value::field_ttl::FieldDeadline>(),
        10
    );
}

#[test]
fn passive_expiry_on_lookup() {
    let mut db = Db::default();
    db.set(b"a", s("1"), Ttl::At(1_000), 0);
    db.set(b"b", s("2"), Ttl::Clear, 0);
    assert!(db.get(b"a", 999).is_some());
    assert_eq!(db.expire_at(b"a", 999), Some(Some(1_000)));
    assert!(db.get(b"a", 1_000).is_none());
    assert_eq!(db.stats.expired_keys, 1);
    assert_eq!(db.len(), 1);
    assert_eq!(db.expires_len(), 0);
    check_invariants(&db);
}

#[test]
fn set_ttl_modes() {
    let mut db = Db::default();
    db.set(b"k", s("1"), Ttl::At(5_000), 0);
    db.set(b"k", s("2"), Ttl::Keep, 0);
    assert_eq!(db.expire_at(b"k", 0), Some(Some(5_000)));
    db.set(b"k", s("3"), Ttl::Clear, 0);
    assert_eq!(db.expire_at(b"k", 0), Some(None));
    assert_eq!(db.expire_at(b"nope", 0), None);
    assert!(!db.persist(b"k", 0));
    db.set_expire(b"k", 9, 0);
    assert!(db.persist(b"k", 0));
    check_invariants(&db);
}

#[test]
fn back_pointers_survive_random_churn() {
    use rand::Rng;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut db = Db::default();
    for step in 0..20_000i64 {
        let key = rng.gen_range(0..500).to_string();
        match rng.gen_range(0..5) {
            0 => {
                db.set(
                    key.as_bytes(),
                    s("v"),
                    Ttl::At(rng.gen_range(1..100_000)),
                    step,
                );
            }
            1 => {
                db.set(key.as_bytes(), s("v"), Ttl::Clear, step);
            }
            2 => {
                db.delete(key.as_bytes(), step, step % 2 == 0);
            }
            3 => {
                db.persist(key.as_bytes(), step);
            }
            _ => {
                db.sample_volatile(&mut rng, step);
            }
        }
        if step % 500 == 0 {
            check_invariants(&db);
        }
    }
    check_invariants(&db);
}

#[test]
fn sampling_deletes_due_keys_only() {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    let mut db = Db::default();
    db.set(b"due", s("x"), Ttl::At(10), 0);
    db.set(b"later", s("x"), Ttl::At(1_000), 0);
    db.set(b"forever", s("x"), Ttl::Clear, 0);
    let mut expired = 0;
    for _ in 0..100 {
        if db.sample_volatile(&mut rng, 500) == Some(Sample::Expired) {
            expired += 1;
        }
    }
    assert_eq!(expired, 1);
    assert_eq!(db.len(), 2);
    assert_eq!(db.stats.expired_keys_active, 1);
    assert_eq!(
        db.sample_volatile(&mut rng, 500),
        Some(Sample::Alive { ttl_ms: 500 })
    );
}

#[test]
fn random_key_skips_and_deletes_expired() {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let mut db = Db::default();
    db.set(b"gone", s("x"), Ttl::At(10), 0);
    db.set(b"live", s("x"), Ttl::Clear, 0);
    for _ in 0..20 {
        assert_eq!(db.random_key(&mut rng, 100), Some(b"live".to_vec()));
    }
    assert_eq!(db.len(), 1);
}

/// Soft deadlines follow every write and every move of their entries
/// (deletions move the last entry into the hole): checked against a
/// model of each key's hard deadline and grace.
#[test]
fn soft_deadlines_follow_writes_and_moves() {
    soft_deadlines_follow(12, 300, 20_000, 5);
}

/// The same with thousands of keys and long deadlines: graces kept by
/// position in an array.
#[test]
fn soft_deadlines_follow_writes_and_moves_when_many_have_one() {
    let h = soft_deadlines_follow(4000, 100_000, 30_000, 500);
    assert!(h.server.dbs[0].soft.graces_are_dense());
}

fn soft_deadlines_follow(
    keys: u32,
    max_ms: i64,
    steps: u32,
    check_every: u32,
) -> crate::harness::Harness {
    use rand::Rng;
    use std::collections::HashMap;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(42);
    let mut h = crate::harness::Harness::new();
    // key -> (hard deadline, grace)
    let mut model: HashMap<String, (Option<i64>, Option<i64>)> = HashMap::new();
    for step in 0..steps {
        h.now_ms += rng.gen_range(0..5);
        let now = h.now_ms;
        model.retain(|_, (hard, _)| hard.is_none_or(|at| at > now));
        let k = format!("k{}", rng.gen_range(0..keys));
        let ttl = rng.gen_range(1..max_ms);
        let grace = rng.gen_range(1..max_ms);
        let exists = model.contains_key(&k);
        match rng.gen_range(0..9) {
            0 | 1 => {
                h.run(&format!("SET {k} v PX {ttl} PSTALE {grace}"));
                model.insert(k, (Some(now + ttl + grace), Some(grace)));
            }
            2 => {
                h.run(&format!("SET {k} v PX {ttl}"));
                model.insert(k, (Some(now + ttl), None));
            }
            3 => {
                h.run(&format!("SET {k} v"));
                model.insert(k, (None, None));
            }
            4 if exists => {
                h.run(&format!("PEXPIRE {k} {ttl}"));
                model.entry(k).and_modify(|e| e.0 = Some(now + ttl));
            }
            5 if exists => {
                h.run(&format!("PERSIST {k}"));
                model.insert(k, (None, None));
            }
            6 => {
                h.run(&format!("DEL {k}"));
                model.remove(&k);
            }
            7 if exists => {
                h.run(&format!("RENAME {k} e"));
                let (hard, _) = model.remove(&k).unwrap_or_default();
                model.insert("e".into(), (hard, None));
            }
            _ => h.expire_cycle(),
        }
        if step % check_every == 0 {
            let db = &h.server.dbs[0];
            for (idx, entry) in db.dict.iter() {
                let key = String::from_utf8_lossy(entry.slot.key()).into_owned();
                let Some(&(hard, grace)) = model.get(&key) else {
                    continue; // expired, not removed yet
                };
                let want = hard.zip(grace).map(|(hard, grace)| hard - grace);
                assert_eq!(db.soft_deadline(idx), want, "step {step}: {key}");
            }
        }
    }
    h
}
