//! DEBUG DIGEST and DIGEST-VALUE (issue 13): the digest of a dataset in
//! lapse equals redis-server's digest of the same dataset, for every type
//! (small values, which Redis holds as listpacks and intsets, and big
//! ones), with and without TTLs, across databases. The digests below were
//! recorded from redis-server 7.0.15; where it is installed the test
//! builds the same data there and compares live too.

mod common;

use common::{Raw, Server};

const DATASET_DIGEST: &str = "+e66652f288fa4d6e2f19e6345a6c98a08c96f18a\r\n";
const VALUE_DIGESTS: &str = "*14\r\n\
    +36b23a1456b2dce2c3ed252c456761301dba8060\r\n+e1cf90774e995ae03de66e8109dc5cb9d9c2dc83\r\n\
    +ac04a84d3fcd16162a871280160dabf4ef51f46f\r\n+f48a1249517530ff1906fc79ddbf9b687f71f06f\r\n\
    +0fd9977d57e46b1b9b87439f5ac5b338416ccc24\r\n+6f42f496424012b2c5a66fc538bcfade595ffd8e\r\n\
    +36db8c131ce099312198ab31223feb407b0d5df9\r\n+be37bbc0437a035e0d39499fdb347cbaab6cf84d\r\n\
    +52ecbb273a5583212bfc9eff946782687811dd77\r\n+c56d3f42794a2c10083dc404b113e5e0eac3277b\r\n\
    +04d81c0962ffde34acf89d01fe2057bd59abc03f\r\n+1905108a639d28e90e7c8476c6dd6dcdf7a15271\r\n\
    +becb6cb4ab6099927ed98d8012581b2585885847\r\n+0000000000000000000000000000000000000000\r\n";

fn build(r: &mut Raw) {
    let script: &[&[&str]] = &[
        &["FLUSHALL"],
        &["SET", "s", "hello"],
        &["SET", "n", "12345"],
        &["SET", "t", "val", "PXAT", "99999999999999"],
        &["RPUSH", "l", "a", "b", "c", "1", "2"],
        &["SADD", "st", "x", "y", "z"],
        &["SADD", "ints", "1", "2", "3", "100", "-5"],
        &["HSET", "h", "f1", "v1", "f2", "v2", "f3", "3"],
        &[
            "ZADD", "z", "1", "a", "2.5", "b", "-3", "c", "1e30", "d", "0.1", "e",
        ],
        &["PEXPIREAT", "z", "99999999999999"],
        &["SELECT", "3"],
        &["SET", "other", "1"],
        &["ZADD", "z", "1", "a"],
        &["SELECT", "0"],
    ];
    for cmd in script {
        let reply = r.cmd(cmd);
        assert!(!reply.starts_with('-'), "{cmd:?}: {reply}");
    }
    // Big values: Redis's hashtable, skiplist and quicklist encodings.
    for i in 0..600 {
        let i = i.to_string();
        for cmd in [
            ["RPUSH", "bigl", &i].as_slice(),
            &["SADD", "bigs", &format!("m{i}")],
            &["SADD", "bigints", &i],
            &["HSET", "bigh", &format!("f{i}"), &i],
            &["ZADD", "bigz", &i, &format!("m{i}")],
        ] {
            r.cmd(cmd);
        }
    }
}

fn digests(r: &mut Raw) -> (String, String) {
    let whole = r.cmd(&["DEBUG", "DIGEST"]);
    let keys = [
        "s", "n", "t", "l", "st", "ints", "h", "z", "bigl", "bigs", "bigints", "bigh", "bigz",
        "nokey",
    ];
    let mut args = vec!["DEBUG", "DIGEST-VALUE"];
    args.extend(keys);
    (whole, r.cmd(&args))
}

#[test]
fn empty_dataset_digest_is_zeros() {
    let lapse = Server::lapse(&[]);
    assert_eq!(
        lapse.raw().cmd(&["DEBUG", "DIGEST"]),
        "+0000000000000000000000000000000000000000\r\n"
    );
}

#[test]
fn digests_equal_redis_servers() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    build(&mut r);
    let ours = digests(&mut r);
    if let Some(redis) = Server::redis() {
        let mut theirs = redis.raw();
        build(&mut theirs);
        assert_eq!(digests(&mut theirs), ours);
    }
    assert_eq!(ours.0, DATASET_DIGEST);
    assert_eq!(ours.1, VALUE_DIGESTS);
}
