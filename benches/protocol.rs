//! Micro benchmarks of the pure protocol code: request parsing over a
//! pipelined stream of mixed commands, and reply encoding.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lapse::protocol::{Parsed, Reply, RequestParser};

fn pipelined_stream() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..1000 {
        let key = format!("key:{i}");
        let cmd: Vec<&[u8]> = match i % 4 {
            0 => vec![b"SET", key.as_bytes(), b"some-value-of-16"],
            1 => vec![b"GET", key.as_bytes()],
            2 => vec![b"INCR", b"counter"],
            _ => vec![b"EXPIRE", key.as_bytes(), b"100"],
        };
        lapse::protocol::encode_request(&cmd, &mut out);
    }
    out
}

fn parse(c: &mut Criterion) {
    let stream = pipelined_stream();
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("pipelined_mixed", |b| {
        let mut parser = RequestParser::default();
        b.iter(|| {
            let mut offset = 0;
            let mut args = 0;
            while let Ok(Parsed::Complete { consumed }) = parser.parse(&stream[offset..]) {
                args += parser.args(&stream[offset..]).len();
                offset += consumed;
            }
            assert_eq!(offset, stream.len());
            args
        })
    });
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("bulk_and_int_x1000", |b| {
        let mut reply = Reply::default();
        b.iter(|| {
            reply.buf.clear();
            for i in 0..500 {
                reply.bulk(b"some-value-of-16");
                reply.int(i);
            }
            reply.buf.len()
        })
    });
    group.finish();
}

criterion_group!(benches, parse, encode);
criterion_main!(benches);
