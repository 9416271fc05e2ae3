//! Hashes, sets and sorted sets over TCP: every command's replies and error
//! strings, RESP3 types, TTLs and key commands on every type, and lazy free
//! of big aggregates.

mod common;

use std::time::Duration;

use common::{eventually, info_field, Raw, Server};

/// Runs `cases` in order on one connection; each is a command (split on
/// spaces) and its exact reply. The replies were recorded from
/// redis-server 7.0.15 running the same script (cases whose reply is
/// random or whose order Redis does not define were left out).
fn script(r: &mut Raw, cases: &[(&str, &str)]) {
    for (cmd, expected) in cases {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(r.cmd(&args), *expected, "{cmd}");
    }
}

#[test]
fn replies_and_errors_match_redis() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    script(
        &mut r,
        &[
            ("hset h a 1 b 2 c 3", ":3\r\n"),
            ("hset h a 10 d 4", ":1\r\n"),
            ("hset h a", "-ERR wrong number of arguments for 'hset' command\r\n"),
            ("hmset h x", "-ERR wrong number of arguments for 'hmset' command\r\n"),
            ("hmset h e 5", "+OK\r\n"),
            ("hsetnx h a 1", ":0\r\n"),
            ("hsetnx h z 9", ":1\r\n"),
            ("hget h a", "$2\r\n10\r\n"),
            ("hget h nope", "$-1\r\n"),
            ("hget nokey a", "$-1\r\n"),
            ("hmget h a nope b", "*3\r\n$2\r\n10\r\n$-1\r\n$1\r\n2\r\n"),
            ("hmget nokey a b", "*2\r\n$-1\r\n$-1\r\n"),
            ("hlen h", ":6\r\n"),
            ("hlen nokey", ":0\r\n"),
            ("hexists h a", ":1\r\n"),
            ("hexists h q", ":0\r\n"),
            ("hdel h a q b", ":2\r\n"),
            ("hdel nokey a", ":0\r\n"),
            ("hstrlen h c", ":1\r\n"),
            ("hincrby h c 5", ":8\r\n"),
            ("hincrby h c x", "-ERR value is not an integer or out of range\r\n"),
            ("hincrby h new 7", ":7\r\n"),
            ("hincrby h c 9223372036854775807", "-ERR increment or decrement would overflow\r\n"),
            ("hset h s abc", ":1\r\n"),
            ("hincrby h s 1", "-ERR hash value is not an integer\r\n"),
            ("hincrbyfloat h s 1", "-ERR hash value is not a float\r\n"),
            ("hincrbyfloat h f 1.1", "$3\r\n1.1\r\n"),
            ("hincrbyfloat h f 2.2", "$3\r\n3.3\r\n"),
            ("hincrbyfloat h f x", "-ERR value is not a valid float\r\n"),
            ("hincrbyfloat h f inf", "-ERR value is NaN or Infinity\r\n"),
            ("hincrbyfloat h c 1.5", "$3\r\n9.5\r\n"),
            ("hrandfield nokey", "$-1\r\n"),
            ("hrandfield nokey 3", "*0\r\n"),
            ("hrandfield h 0", "*0\r\n"),
            ("hrandfield h 1 withvalue", "-ERR syntax error\r\n"),
            ("hrandfield h 1 withvalues x", "-ERR syntax error\r\n"),
            ("hrandfield h x", "-ERR value is not an integer or out of range\r\n"),
            ("hrandfield h -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"),
            ("hrandfield h -9223372036854775807 withvalues", "-ERR value is out of range\r\n"),
            ("set str x", "+OK\r\n"),
            ("hget str a", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("hset str a b", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("hlen str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("hgetall str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("hrandfield str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("hscan str 0", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("hscan nokey 0", "*2\r\n$1\r\n0\r\n*0\r\n"),
            ("hscan h x", "-ERR invalid cursor\r\n"),
            ("hscan h 0 count 0", "-ERR syntax error\r\n"),
            ("hscan h 0 match", "-ERR syntax error\r\n"),
            ("hscan h 0 type string", "-ERR syntax error\r\n"),
            ("type h", "+hash\r\n"),
            ("object encoding h", "$8\r\nlistpack\r\n"),
            ("hdel h c d e z new s f", ":7\r\n"),
            ("exists h", ":0\r\n"),
            ("sadd s a b c", ":3\r\n"),
            ("sadd s a d", ":1\r\n"),
            ("srem s a z", ":1\r\n"),
            ("srem nokey a", ":0\r\n"),
            ("scard s", ":3\r\n"),
            ("scard nokey", ":0\r\n"),
            ("sismember s b", ":1\r\n"),
            ("sismember s z", ":0\r\n"),
            ("smismember s b z", "*2\r\n:1\r\n:0\r\n"),
            ("smismember nokey a", "*1\r\n:0\r\n"),
            ("spop nokey", "$-1\r\n"),
            ("spop nokey 2", "*0\r\n"),
            ("spop s -1", "-ERR value is out of range, must be positive\r\n"),
            ("spop s x", "-ERR value is out of range, must be positive\r\n"),
            ("spop s 1 2", "-ERR syntax error\r\n"),
            ("spop s 0", "*0\r\n"),
            ("srandmember nokey", "$-1\r\n"),
            ("srandmember nokey 2", "*0\r\n"),
            ("srandmember s 0", "*0\r\n"),
            ("srandmember s 1 2", "-ERR syntax error\r\n"),
            ("srandmember s -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"),
            ("sadd s1 a b c d", ":4\r\n"),
            ("sadd s2 c d e", ":3\r\n"),
            ("sadd s3 a c", ":2\r\n"),
            ("sinter s1 s2 s3", "*1\r\n$1\r\nc\r\n"),
            ("sinter s1 nokey", "*0\r\n"),
            ("sinter s1 str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("sinter nokey str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("sunion nokey str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("sdiff s1 s2", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
            ("sdiff nokey s1", "*0\r\n"),
            ("scard s1", ":4\r\n"),
            ("sintercard 0 s1", "-ERR numkeys should be greater than 0\r\n"),
            ("sintercard 2 s1", "-ERR Number of keys can't be greater than number of args\r\n"),
            ("sintercard 1 s1 limit -1", "-ERR LIMIT can't be negative\r\n"),
            ("sintercard 1 s1 limit x", "-ERR LIMIT can't be negative\r\n"),
            ("sintercard 1 s1 foo 1", "-ERR syntax error\r\n"),
            ("sintercard x s1", "-ERR numkeys should be greater than 0\r\n"),
            ("sintercard 2 s1 s2", ":2\r\n"),
            ("sintercard 2 s1 s2 limit 1", ":1\r\n"),
            ("sintercard 2 s1 s2 limit 0", ":2\r\n"),
            ("sintercard 2 s1 str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("sinterstore d s1 s2", ":2\r\n"),
            ("smembers d", "*2\r\n$1\r\nc\r\n$1\r\nd\r\n"),
            ("type d", "+set\r\n"),
            ("sinterstore str s1 s2", ":2\r\n"),
            ("type str", "+set\r\n"),
            ("sinterstore d s1 nokey", ":0\r\n"),
            ("exists d", ":0\r\n"),
            ("sdiffstore d s1 s2 s3", ":1\r\n"),
            ("scard d", ":1\r\n"),
            ("sunionstore d s1 s2 s3", ":5\r\n"),
            ("scard d", ":5\r\n"),
            ("smove s1 s2 a", ":1\r\n"),
            ("smove s1 s2 zz", ":0\r\n"),
            ("smove nokey str a", ":0\r\n"),
            ("smove s1 str b", ":1\r\n"),
            ("smove str s1 a", ":0\r\n"),
            ("smove s1 s1 b", ":0\r\n"),
            ("smove s1 s1 zz", ":0\r\n"),
            ("smove s3 fresh a", ":1\r\n"),
            ("smove s3 fresh c", ":1\r\n"),
            ("exists s3", ":0\r\n"),
            ("sscan s1 x", "-ERR invalid cursor\r\n"),
            ("sscan nokey 0", "*2\r\n$1\r\n0\r\n*0\r\n"),
            ("set str2 x", "+OK\r\n"),
            ("sadd str2 a", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("smembers str2", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("spop str2", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("srandmember str2", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("zadd z", "-ERR wrong number of arguments for 'zadd' command\r\n"),
            ("zadd z 1", "-ERR wrong number of arguments for 'zadd' command\r\n"),
            ("zadd z nx xx 1 a", "-ERR XX and NX options at the same time are not compatible\r\n"),
            ("zadd z gt lt 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
            ("zadd z nx gt 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
            ("zadd z incr 1 a 2 b", "-ERR INCR option supports a single increment-element pair\r\n"),
            ("zadd z 1 a 2", "-ERR syntax error\r\n"),
            ("zadd z x a", "-ERR value is not a valid float\r\n"),
            ("zadd z 1 a 2 b 3 c 1.1 d 1e300 e -0 f inf g -inf h 1e-5 i 123456789012345678 j", ":10\r\n"),
            ("zrange z 0 -1 withscores", "*20\r\n$1\r\nh\r\n$4\r\n-inf\r\n$1\r\nf\r\n$1\r\n0\r\n$1\r\ni\r\n$22\r\n1.0000000000000001e-05\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\ng\r\n$3\r\ninf\r\n"),
            ("zadd z ch 5 a", ":1\r\n"),
            ("zadd z xx incr 1 q", "$-1\r\n"),
            ("zadd z gt incr -1 a", "$-1\r\n"),
            ("zadd z gt incr 1 a", "$1\r\n6\r\n"),
            ("zadd z lt 1 a 100 new", ":1\r\n"),
            ("zadd z nx 7 a 8 b2", ":1\r\n"),
            ("zadd z xx ch 9 a 10 nob", ":1\r\n"),
            ("zadd z incr 1 g", "$3\r\ninf\r\n"),
            ("zadd z incr -inf g", "-ERR resulting score is not a number (NaN)\r\n"),
            ("zincrby z x a", "-ERR value is not a valid float\r\n"),
            ("zincrby z 2.5 a", "$4\r\n11.5\r\n"),
            ("zincrby z 2.5 fresh", "$3\r\n2.5\r\n"),
            ("zincrby nokey 1 m", "$1\r\n1\r\n"),
            ("zscore z a", "$4\r\n11.5\r\n"),
            ("zscore z nope", "$-1\r\n"),
            ("zscore nokey a", "$-1\r\n"),
            ("zmscore z a nope b", "*3\r\n$4\r\n11.5\r\n$-1\r\n$1\r\n2\r\n"),
            ("zmscore nokey a", "*1\r\n$-1\r\n"),
            ("zcard z", ":13\r\n"),
            ("zcard nokey", ":1\r\n"),
            ("zrem z nope fresh m", ":1\r\n"),
            ("zrange z 0 -1", "*12\r\n$1\r\nh\r\n$1\r\nf\r\n$1\r\ni\r\n$1\r\nd\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nb2\r\n$1\r\na\r\n$3\r\nnew\r\n$1\r\nj\r\n$1\r\ne\r\n$1\r\ng\r\n"),
            ("zrange z 0 -1 withscores", "*24\r\n$1\r\nh\r\n$4\r\n-inf\r\n$1\r\nf\r\n$1\r\n0\r\n$1\r\ni\r\n$22\r\n1.0000000000000001e-05\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$2\r\nb2\r\n$1\r\n8\r\n$1\r\na\r\n$4\r\n11.5\r\n$3\r\nnew\r\n$3\r\n100\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\ng\r\n$3\r\ninf\r\n"),
            ("zrange z -3 -1 withscores", "*6\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\ng\r\n$3\r\ninf\r\n"),
            ("zrange z 5 2", "*0\r\n"),
            ("zrange z 0 x", "-ERR value is not an integer or out of range\r\n"),
            ("zrange z 0 1 limit 0 1", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"),
            ("zrange z a b bylex withscores", "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"),
            ("zrange z (1 2 byscore limit 0", "-ERR syntax error\r\n"),
            ("zrange z 0 -1 rev withscores", "*24\r\n$1\r\ng\r\n$3\r\ninf\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n$3\r\nnew\r\n$3\r\n100\r\n$1\r\na\r\n$4\r\n11.5\r\n$2\r\nb2\r\n$1\r\n8\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n$1\r\ni\r\n$22\r\n1.0000000000000001e-05\r\n$1\r\nf\r\n$1\r\n0\r\n$1\r\nh\r\n$4\r\n-inf\r\n"),
            ("zrange z 1 3 rev", "*3\r\n$1\r\ne\r\n$1\r\nj\r\n$3\r\nnew\r\n"),
            ("zrange z -inf +inf byscore withscores", "*24\r\n$1\r\nh\r\n$4\r\n-inf\r\n$1\r\nf\r\n$1\r\n0\r\n$1\r\ni\r\n$22\r\n1.0000000000000001e-05\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$2\r\nb2\r\n$1\r\n8\r\n$1\r\na\r\n$4\r\n11.5\r\n$3\r\nnew\r\n$3\r\n100\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\ng\r\n$3\r\ninf\r\n"),
            ("zrange z (1 5 byscore", "*3\r\n$1\r\nd\r\n$1\r\nb\r\n$1\r\nc\r\n"),
            ("zrange z 5 (1 byscore rev withscores", "*6\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n"),
            ("zrange z +inf -inf byscore rev limit 1 3 withscores", "*6\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n$3\r\nnew\r\n$3\r\n100\r\n"),
            ("zrange z -inf +inf byscore limit 2 -1", "*10\r\n$1\r\ni\r\n$1\r\nd\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nb2\r\n$1\r\na\r\n$3\r\nnew\r\n$1\r\nj\r\n$1\r\ne\r\n$1\r\ng\r\n"),
            ("zrange z -inf +inf byscore limit -1 2", "*0\r\n"),
            ("zrangebyscore z x 1", "-ERR min or max is not a float\r\n"),
            ("zrangebyscore z -inf +inf withscores limit 1 2", "*4\r\n$1\r\nf\r\n$1\r\n0\r\n$1\r\ni\r\n$22\r\n1.0000000000000001e-05\r\n"),
            ("zrangebyscore z (1.1 inf", "*8\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nb2\r\n$1\r\na\r\n$3\r\nnew\r\n$1\r\nj\r\n$1\r\ne\r\n$1\r\ng\r\n"),
            ("zrevrangebyscore z 3 1 withscores limit 0 2", "*4\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n"),
            ("zrevrangebyscore z inf -inf", "*12\r\n$1\r\ng\r\n$1\r\ne\r\n$1\r\nj\r\n$3\r\nnew\r\n$1\r\na\r\n$2\r\nb2\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\nd\r\n$1\r\ni\r\n$1\r\nf\r\n$1\r\nh\r\n"),
            ("zrevrange z 0 2 withscores", "*6\r\n$1\r\ng\r\n$3\r\ninf\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n"),
            ("zrevrange z 0 2 bogus", "-ERR syntax error\r\n"),
            ("zcount z (1 +inf", ":9\r\n"),
            ("zcount z -inf +inf", ":12\r\n"),
            ("zcount z 5 1", ":0\r\n"),
            ("zcount z x 1", "-ERR min or max is not a float\r\n"),
            ("zcount nokey 1 2", ":1\r\n"),
            ("zrank z a", ":7\r\n"),
            ("zrank z nope", "$-1\r\n"),
            ("zrank nokey a", "$-1\r\n"),
            ("zrevrank z a", ":4\r\n"),
            ("zrank z a withscore x", "-ERR wrong number of arguments for 'zrank' command\r\n"),
            ("zpopmin z -1", "-ERR value is out of range, must be positive\r\n"),
            ("zpopmin z 1 2", "-ERR syntax error\r\n"),
            ("zrandmember z -5 withscores x", "-ERR syntax error\r\n"),
            ("zrandmember nokey", "$1\r\nm\r\n"),
            ("zrandmember nokey 5", "*1\r\n$1\r\nm\r\n"),
            ("zrandmember z 0", "*0\r\n"),
            ("zrandmember z -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"),
            ("zrandmember z -9223372036854775807 withscores", "-ERR value is out of range\r\n"),
            ("zremrangebyrank z x 1", "-ERR value is not an integer or out of range\r\n"),
            ("zadd l 0 a 0 b 0 c 0 d 0 e 0 f", ":6\r\n"),
            ("zlexcount l - +", ":6\r\n"),
            ("zlexcount l [b (e", ":3\r\n"),
            ("zlexcount l (b [e", ":3\r\n"),
            ("zlexcount l a b", "-ERR min or max not valid string range item\r\n"),
            ("zlexcount l + -", ":0\r\n"),
            ("zrangebylex l - +", "*6\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n"),
            ("zrangebylex l [b [d", "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"),
            ("zrangebylex l (b + limit 1 2", "*2\r\n$1\r\nd\r\n$1\r\ne\r\n"),
            ("zrangebylex l - + withscores", "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"),
            ("zrevrangebylex l + -", "*6\r\n$1\r\nf\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n"),
            ("zrevrangebylex l [d (a limit 0 2", "*2\r\n$1\r\nd\r\n$1\r\nc\r\n"),
            ("zrange l [b [d bylex", "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"),
            ("zrange l [d [b bylex rev", "*3\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n"),
            ("zremrangebylex l [e +", ":2\r\n"),
            ("zrange l 0 -1", "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"),
            ("zremrangebyrank l 0 1", ":2\r\n"),
            ("zrange l 0 -1", "*2\r\n$1\r\nc\r\n$1\r\nd\r\n"),
            ("zremrangebyscore z (2 5", ":1\r\n"),
            ("zrange z 0 -1 withscores", "*22\r\n$1\r\nh\r\n$4\r\n-inf\r\n$1\r\nf\r\n$1\r\n0\r\n$1\r\ni\r\n$22\r\n1.0000000000000001e-05\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n$1\r\nb\r\n$1\r\n2\r\n$2\r\nb2\r\n$1\r\n8\r\n$1\r\na\r\n$4\r\n11.5\r\n$3\r\nnew\r\n$3\r\n100\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\ng\r\n$3\r\ninf\r\n"),
            ("zremrangebyscore z x 5", "-ERR min or max is not a float\r\n"),
            ("zpopmin z", "*2\r\n$1\r\nh\r\n$4\r\n-inf\r\n"),
            ("zpopmax z", "*2\r\n$1\r\ng\r\n$3\r\ninf\r\n"),
            ("zpopmin z 2", "*4\r\n$1\r\nf\r\n$1\r\n0\r\n$1\r\ni\r\n$22\r\n1.0000000000000001e-05\r\n"),
            ("zpopmax z 2", "*4\r\n$1\r\ne\r\n$23\r\n1.0000000000000001e+300\r\n$1\r\nj\r\n$22\r\n1.2345678901234568e+17\r\n"),
            ("zpopmin nokey", "*2\r\n$1\r\nm\r\n$1\r\n1\r\n"),
            ("zpopmin nokey 2", "*0\r\n"),
            ("zpopmin z 0", "*0\r\n"),
            ("sadd s a b c x", ":2\r\n"),
            ("zadd z1 1 a 2 b 3 c", ":3\r\n"),
            ("zadd z2 10 b 20 c 30 d", ":3\r\n"),
            ("zunionstore out 2 z1 z2", ":4\r\n"),
            ("zrange out 0 -1 withscores", "*8\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$2\r\n12\r\n$1\r\nc\r\n$2\r\n23\r\n$1\r\nd\r\n$2\r\n30\r\n"),
            ("zunionstore out 2 z1 z2 weights 2 0.5 aggregate max", ":4\r\n"),
            ("zrange out 0 -1 withscores", "*8\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n5\r\n$1\r\nc\r\n$2\r\n10\r\n$1\r\nd\r\n$2\r\n15\r\n"),
            ("zunionstore out 3 z1 z2 s aggregate min", ":5\r\n"),
            ("zrange out 0 -1 withscores", "*10\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n1\r\n$1\r\nd\r\n$1\r\n1\r\n$1\r\nx\r\n$1\r\n1\r\n"),
            ("zinterstore out 2 z1 z2", ":2\r\n"),
            ("zrange out 0 -1 withscores", "*4\r\n$1\r\nb\r\n$2\r\n12\r\n$1\r\nc\r\n$2\r\n23\r\n"),
            ("zinterstore out 3 z1 z2 s weights 1 1 5", ":2\r\n"),
            ("zrange out 0 -1 withscores", "*4\r\n$1\r\nb\r\n$2\r\n17\r\n$1\r\nc\r\n$2\r\n28\r\n"),
            ("zinterstore out 2 z1 nokey", ":0\r\n"),
            ("exists out", ":0\r\n"),
            ("zdiffstore out 2 z1 z2", ":1\r\n"),
            ("zrange out 0 -1 withscores", "*2\r\n$1\r\na\r\n$1\r\n1\r\n"),
            ("zdiffstore out 2 z1 z2 weights 1 1", "-ERR syntax error\r\n"),
            ("zunionstore d 0 z", "-ERR at least 1 input key is needed for 'zunionstore' command\r\n"),
            ("zunionstore d -1 z", "-ERR at least 1 input key is needed for 'zunionstore' command\r\n"),
            ("zunionstore d 2 z", "-ERR syntax error\r\n"),
            ("zunionstore d 1 z weights x", "-ERR weight value is not a float\r\n"),
            ("zunionstore d 1 z weights 1 2", "-ERR syntax error\r\n"),
            ("zunionstore d 1 z aggregate foo", "-ERR syntax error\r\n"),
            ("zunionstore d x z", "-ERR value is not an integer or out of range\r\n"),
            ("zdiffstore d 0 z", "-ERR at least 1 input key is needed for 'zdiffstore' command\r\n"),
            ("set str x", "+OK\r\n"),
            ("zinterstore d 1 z1 str", "-ERR syntax error\r\n"),
            ("zinterstore d 2 z1 str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("zunionstore d 1 str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("zadd str 1 a", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("zrange str 0 -1", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("zscore str a", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("zadd inf1 inf a", ":1\r\n"),
            ("zadd inf2 -inf a", ":1\r\n"),
            ("zunionstore infs 2 inf1 inf2", ":1\r\n"),
            ("zrange infs 0 -1 withscores", "*2\r\n$1\r\na\r\n$1\r\n0\r\n"),
            ("zadd big 1 m1 2 m2", ":2\r\n"),
            ("zunionstore z1 2 z1 big", ":5\r\n"),
            ("zrange z1 0 -1 withscores", "*10\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nm1\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$2\r\nm2\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"),
            ("zscan z1 x", "-ERR invalid cursor\r\n"),
            ("zscan nokey 0", "*2\r\n$1\r\n0\r\n*0\r\n"),
            ("type z1", "+zset\r\n"),
        ],
    );
}

#[test]
fn resp3_uses_maps_sets_and_doubles() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    r.cmd(&["HELLO", "3"]);
    script(
        &mut r,
        &[
            ("HSET h f v", ":1\r\n"),
            ("HGETALL h", "%1\r\n$1\r\nf\r\n$1\r\nv\r\n"),
            ("HGETALL nokey", "%0\r\n"),
            (
                "HRANDFIELD h 1 WITHVALUES",
                "*1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
            ),
            ("SADD s m", ":1\r\n"),
            ("SMEMBERS s", "~1\r\n$1\r\nm\r\n"),
            ("SUNION s nokey", "~1\r\n$1\r\nm\r\n"),
            ("SMEMBERS nokey", "~0\r\n"),
            ("ZADD z 1.5 a 2 b", ":2\r\n"),
            ("ZSCORE z a", ",1.5\r\n"),
            ("ZSCORE z nope", "_\r\n"),
            ("ZMSCORE z b nope", "*2\r\n,2\r\n_\r\n"),
            ("ZINCRBY z 1 a", ",2.5\r\n"),
            (
                "ZRANGE z 0 -1 WITHSCORES",
                "*2\r\n*2\r\n$1\r\nb\r\n,2\r\n*2\r\n$1\r\na\r\n,2.5\r\n",
            ),
            ("ZRANK z a WITHSCORE", "*2\r\n:1\r\n,2.5\r\n"),
            ("ZRANK z nope WITHSCORE", "_\r\n"),
            ("ZPOPMIN z", "*2\r\n$1\r\nb\r\n,2\r\n"),
            ("ZPOPMIN z 1", "*1\r\n*2\r\n$1\r\na\r\n,2.5\r\n"),
            ("HINCRBYFLOAT h n 1.5", "$3\r\n1.5\r\n"),
        ],
    );
}

#[test]
fn aggregates_expire_and_move_with_their_ttl() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    script(
        &mut r,
        &[
            ("HSET h f v", ":1\r\n"),
            ("SADD s m", ":1\r\n"),
            ("ZADD z 1 m", ":1\r\n"),
            ("RPUSH l e", ":1\r\n"),
            ("PEXPIRE h 100000", ":1\r\n"),
            ("RENAME h h2", "+OK\r\n"),
            ("COPY h2 h3", ":1\r\n"),
            ("HGET h3 f", "$1\r\nv\r\n"),
            ("TYPE h3", "+hash\r\n"),
            ("TYPE s", "+set\r\n"),
            ("TYPE z", "+zset\r\n"),
            ("OBJECT ENCODING h3", "$8\r\nlistpack\r\n"),
            // Redis 7.2's listpack set (7.0 says hashtable; see README).
            ("OBJECT ENCODING s", "$8\r\nlistpack\r\n"),
            ("OBJECT ENCODING z", "$8\r\nlistpack\r\n"),
            ("OBJECT ENCODING l", "$9\r\nquicklist\r\n"),
            ("SET n 12345", "+OK\r\n"),
            ("OBJECT ENCODING n", "$3\r\nint\r\n"),
            ("SET n 0123", "+OK\r\n"),
            ("OBJECT ENCODING n", "$6\r\nembstr\r\n"),
            ("OBJECT ENCODING nokey", "$-1\r\n"),
            ("MOVE z 1", ":1\r\n"),
            ("EXISTS z", ":0\r\n"),
            ("SCAN 0 TYPE set", "*2\r\n$1\r\n0\r\n*1\r\n$1\r\ns\r\n"),
            ("SCAN 0 TYPE zset", "*2\r\n$1\r\n0\r\n*0\r\n"),
        ],
    );
    let ttl: i64 = r.cmd(&["PTTL", "h2"])[1..].trim().parse().unwrap();
    assert!((1..=100_000).contains(&ttl), "RENAME keeps the TTL: {ttl}");
    let ttl: i64 = r.cmd(&["PTTL", "h3"])[1..].trim().parse().unwrap();
    assert!((1..=100_000).contains(&ttl), "COPY keeps the TTL: {ttl}");
    // Passive and active expiry for every type.
    for key in ["h2", "s", "l"] {
        assert_eq!(r.cmd(&["PEXPIRE", key, "30"]), ":1\r\n");
    }
    assert_eq!(r.cmd(&["SELECT", "1"]), "+OK\r\n");
    assert_eq!(r.cmd(&["PEXPIRE", "z", "30"]), ":1\r\n");
    assert!(eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":0\r\n"));
    assert_eq!(r.cmd(&["SELECT", "0"]), "+OK\r\n");
    assert!(eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":2\r\n"));
    assert_eq!(r.cmd(&["ZSCORE", "z", "m"]), "$-1\r\n");
}

#[test]
fn emptied_aggregates_are_deleted() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    script(
        &mut r,
        &[
            ("HSET h f v", ":1\r\n"),
            ("HDEL h f", ":1\r\n"),
            ("EXISTS h", ":0\r\n"),
            ("SADD s a b", ":2\r\n"),
        ],
    );
    let mut popped = items(&r.cmd(&["SPOP", "s", "5"]));
    popped.sort();
    assert_eq!(popped, ["a", "b"]);
    script(
        &mut r,
        &[
            ("EXISTS s", ":0\r\n"),
            ("SADD s a", ":1\r\n"),
            ("SMOVE s t a", ":1\r\n"),
            ("EXISTS s", ":0\r\n"),
            ("ZADD z 1 a 2 b", ":2\r\n"),
            ("ZREMRANGEBYSCORE z -inf +inf", ":2\r\n"),
            ("EXISTS z", ":0\r\n"),
            ("ZADD z 1 a", ":1\r\n"),
            ("ZPOPMAX z", "*2\r\n$1\r\na\r\n$1\r\n1\r\n"),
            ("EXISTS z", ":0\r\n"),
            ("ZADD z XX 1 a", ":0\r\n"),
            ("EXISTS z", ":0\r\n"),
            ("SINTERSTORE t s nokey", ":0\r\n"),
            ("EXISTS t", ":0\r\n"),
            ("DBSIZE", ":0\r\n"),
        ],
    );
}

/// The elements of a flat array reply (bulk strings only).
fn items(reply: &str) -> Vec<String> {
    reply
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.starts_with('$') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn random_picks_follow_the_count_rules() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    let members: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "s"];
    sadd.extend(members.iter().map(String::as_str));
    r.cmd(&sadd);
    for count in [1, 10, 40, 99, 100, 150] {
        let got = items(&r.cmd(&["SRANDMEMBER", "s", &count.to_string()]));
        let distinct: std::collections::HashSet<_> = got.iter().collect();
        assert_eq!(got.len(), count.min(100), "count {count}");
        assert_eq!(distinct.len(), got.len(), "distinct for count {count}");
        assert!(got.iter().all(|m| members.contains(m)));
    }
    assert_eq!(items(&r.cmd(&["SRANDMEMBER", "s", "-500"])).len(), 500);
    let popped = items(&r.cmd(&["SPOP", "s", "30"]));
    assert_eq!(r.cmd(&["SCARD", "s"]), ":70\r\n");
    for m in &popped {
        assert_eq!(r.cmd(&["SISMEMBER", "s", m]), ":0\r\n");
    }
}

#[test]
fn a_huge_negative_count_is_cut_off_at_the_output_limit() {
    let server = Server::lapse(&["--client-output-buffer-limit", "normal 1mb 0 0"]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SADD", "s", "a"]), ":1\r\n");
    r.send_cmd(&[b"SRANDMEMBER", b"s", b"-9223372036854775807"]);
    assert!(
        r.is_closed(),
        "the client asking for 2^63 members is closed"
    );
    let mut other = server.raw();
    assert_eq!(other.cmd(&["SCARD", "s"]), ":1\r\n");
    let used: u64 = info_field(&mut other, "memory", "used_memory")
        .parse()
        .unwrap();
    assert!(used < 64 << 20, "memory stayed bounded: {used}");
}

fn pending(r: &mut Raw) -> u64 {
    info_field(r, "memory", "lazyfree_pending_objects")
        .parse()
        .unwrap()
}

fn freed(r: &mut Raw) -> u64 {
    info_field(r, "memory", "lazyfreed_objects")
        .parse()
        .unwrap()
}

/// Fills `key` with `n` fields through pipelined HSETs of 1000 fields each.
fn fill_hash(r: &mut Raw, key: &str, n: usize) {
    let batch = 1000;
    for start in (0..n).step_by(batch) {
        let fields: Vec<String> = (start..(start + batch).min(n))
            .map(|i| format!("f{i}"))
            .collect();
        let mut args: Vec<&[u8]> = vec![b"HSET", key.as_bytes()];
        for f in &fields {
            args.push(f.as_bytes());
            args.push(b"v");
        }
        r.send_cmd(&args);
    }
    for _ in (0..n).step_by(batch) {
        r.reply();
    }
    assert_eq!(r.cmd(&["HLEN", key]), format!(":{n}\r\n"));
}

#[test]
fn unlink_of_a_million_field_hash_returns_at_once_and_drains() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    fill_hash(&mut r, "big", 1_000_000);
    let started = std::time::Instant::now();
    assert_eq!(r.cmd(&["UNLINK", "big"]), ":1\r\n");
    let took = started.elapsed();
    assert!(eventually(Duration::from_secs(10), || pending(&mut r) == 0));
    assert_eq!(freed(&mut r), 1);
    assert_eq!(r.cmd(&["EXISTS", "big"]), ":0\r\n");
    // Generous: the point is that the reply does not wait for the free.
    assert!(took < Duration::from_millis(500), "UNLINK took {took:?}");
}

#[test]
fn big_aggregates_follow_the_lazyfree_settings() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    // Settings off: DEL, expiry and overwrite free inline.
    fill_hash(&mut r, "a", 1000);
    assert_eq!(r.cmd(&["DEL", "a"]), ":1\r\n");
    fill_hash(&mut r, "b", 1000);
    assert_eq!(r.cmd(&["PEXPIRE", "b", "10"]), ":1\r\n");
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["EXISTS", "b"])
        == ":0\r\n"));
    fill_hash(&mut r, "c", 1000);
    assert_eq!(r.cmd(&["SET", "c", "x"]), "+OK\r\n");
    assert_eq!(freed(&mut r), 0);
    // Small aggregates stay inline even with UNLINK.
    assert_eq!(r.cmd(&["SADD", "small", "a", "b"]), ":2\r\n");
    assert_eq!(r.cmd(&["UNLINK", "small"]), ":1\r\n");
    assert_eq!(freed(&mut r), 0);
    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "lazyfree-lazy-user-del",
            "yes",
            "lazyfree-lazy-expire",
            "yes",
            "lazyfree-lazy-server-del",
            "yes"
        ]),
        "+OK\r\n"
    );
    fill_hash(&mut r, "a", 1000);
    assert_eq!(r.cmd(&["DEL", "a"]), ":1\r\n");
    assert!(eventually(Duration::from_secs(5), || freed(&mut r) == 1));
    fill_hash(&mut r, "b", 1000);
    assert_eq!(r.cmd(&["PEXPIRE", "b", "10"]), ":1\r\n");
    assert!(eventually(Duration::from_secs(5), || freed(&mut r) == 2));
    fill_hash(&mut r, "c2", 1000);
    assert_eq!(r.cmd(&["SET", "c2", "x"]), "+OK\r\n");
    assert!(eventually(Duration::from_secs(5), || freed(&mut r) == 3));
    assert_eq!(pending(&mut r), 0);
}
