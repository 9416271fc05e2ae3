//! Micro benchmarks of the keyspace: get, set of new keys, overwrite (all
//! through `set_str`, SET's path), and the cost per key of sampling keys
//! with a TTL (the active cycle's unit of work).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use lapse::db::{Db, StrEncoding, Ttl};
use rand::SeedableRng;

const KEYS: usize = 100_000;

fn keys() -> Vec<Vec<u8>> {
    (0..KEYS).map(|i| format!("key:{i}").into_bytes()).collect()
}

fn filled(keys: &[Vec<u8>], ttl: Ttl) -> Db {
    let mut db = Db::default();
    for k in keys {
        db.set_str(k, b"0123456789abcdef", ttl, StrEncoding::Auto, 0);
    }
    db
}

fn keyspace(c: &mut Criterion) {
    let keys = keys();
    let mut group = c.benchmark_group("keyspace");
    group.throughput(Throughput::Elements(KEYS as u64));
    let mut db = filled(&keys, Ttl::Clear);
    group.bench_function("get_100k", |b| {
        b.iter(|| keys.iter().filter(|k| db.get(k, 1).is_some()).count())
    });
    group.bench_function("set_new_100k", |b| {
        b.iter_batched(
            Db::default,
            |mut db| {
                for k in &keys {
                    db.set_str(k, b"0123456789abcdef", Ttl::Clear, StrEncoding::Auto, 0);
                }
                db
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("overwrite_100k", |b| {
        b.iter(|| {
            for k in &keys {
                db.set_str(k, b"fedcba9876543210", Ttl::Keep, StrEncoding::Auto, 0);
            }
        })
    });
    group.bench_function("set_with_ttl_100k", |b| {
        b.iter_batched(
            Db::default,
            |mut db| {
                for (i, k) in keys.iter().enumerate() {
                    db.set_str(
                        k,
                        b"0123456789abcdef",
                        Ttl::At(1_000_000 + i as i64),
                        StrEncoding::Auto,
                        0,
                    );
                }
                db
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn sampling(c: &mut Criterion) {
    let keys = keys();
    let mut group = c.benchmark_group("expire_sampling");
    group.throughput(Throughput::Elements(KEYS as u64));
    // Sampling live keys: the cost of looking without deleting.
    let mut live = filled(&keys, Ttl::At(i64::MAX));
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    group.bench_function("sample_live_100k", |b| {
        b.iter(|| {
            (0..KEYS)
                .filter_map(|_| live.sample_volatile(&mut rng, 1))
                .count()
        })
    });
    // Sampling due keys: every sample deletes one.
    group.bench_function("sample_and_delete_100k", |b| {
        b.iter_batched(
            || filled(&keys, Ttl::At(10)),
            |mut db| {
                while db.sample_volatile(&mut rng, 100).is_some() {}
                db
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, keyspace, sampling);
criterion_main!(benches);
