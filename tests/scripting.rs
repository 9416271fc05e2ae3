//! Lua scripting over TCP (issue 14): EVAL, EVALSHA, EVAL_RO, SCRIPT,
//! FUNCTION and FCALL; the `redis` API, the sandbox's errors and the
//! Lua ↔ RESP conversions, recorded from redis-server 7.0.15 reply for
//! reply (checked against it where it is installed); time frozen for a
//! whole script; a lock's compare-and-delete release through the `redis`
//! crate's script support (EVALSHA, falling back to EVAL on NOSCRIPT).

mod common;

use std::time::Duration;

use common::{replay_cases, Case, Raw, Server};

/// In order on one connection, from an empty server.
const CASES: &[Case] = &[
    (&[b"EVAL", b"return redis.call('set', KEYS[1], ARGV[1])", b"1", b"k", b"v"], b"+OK\r\n"),
    (&[b"EVAL", b"return redis.call('nosuch')", b"0"], b"-ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return redis.call('incr', 'k')", b"0"], b"-ERR value is not an integer or out of range script: 6f2b230e8168d6623331d135dfd8a3a262da17ee, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return redis.pcall('incr', 'k')", b"0"], b"-ERR value is not an integer or out of range\r\n"),
    (&[b"EVAL", b"x = 1", b"0"], b"-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return y", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: e278681ed961e2fb52881313e5c90fdd93749940, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {1,2,{3,'a'},nil,5}", b"0"], b"*3\r\n:1\r\n:2\r\n*2\r\n:3\r\n$1\r\na\r\n"),
    (&[b"EVAL", b"return {ok='fine'}", b"0"], b"+fine\r\n"),
    (&[b"EVAL", b"return {err='bad thing'}", b"0"], b"-bad thing\r\n"),
    (&[b"EVAL", b"return 3.99", b"0"], b":3\r\n"),
    (&[b"EVAL", b"return -3.99", b"0"], b":-3\r\n"),
    (&[b"EVAL", b"return true", b"0"], b":1\r\n"),
    (&[b"EVAL", b"return false", b"0"], b"$-1\r\n"),
    (&[b"EVAL", b"return redis.call('get','missing')", b"0"], b"$-1\r\n"),
    (&[b"EVAL", b"return syntax error here", b"0"], b"-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'error'\r\n"),
    (&[b"EVALSHA", b"ffffffffffffffffffffffffffffffffffffffff", b"0"], b"-NOSCRIPT No matching script. Please use EVAL.\r\n"),
    (&[b"EVAL", b"return redis.call('multi')", b"0"], b"-ERR This Redis command is not allowed from script script: c329a1a294be6bf95b44144f7502610661ae925a, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return redis.call()", b"0"], b"-ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return redis.call({})", b"0"], b"-ERR Lua redis lib command arguments must be strings or integers script: 80747816df1f4411f7c442b928fce6a814214839, on @user_script:1.\r\n"),
    (&[b"EVAL_RO", b"return redis.call('set','a','b')", b"0"], b"-ERR Write commands are not allowed from read-only scripts. script: ff967d0ae0e68b4f9e360fa91c54598bc25ad9b6, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return 1", b"-1"], b"-ERR Number of keys can't be negative\r\n"),
    (&[b"EVAL", b"return 1", b"2", b"a"], b"-ERR Number of keys can't be greater than number of args\r\n"),
    (&[b"EVAL", b"error('boom')", b"0"], b"-ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return redis.error_reply('My Error')", b"0"], b"-My Error\r\n"),
    (&[b"EVAL", b"return redis.status_reply('GOOD')", b"0"], b"+GOOD\r\n"),
    (&[b"EVAL", b"return redis.sha1hex('')", b"0"], b"$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"),
    (&[b"EVAL", b"return os", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: f03b5ad6e7d58786b6a5e879efbea4a4408f5c2f, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return loadfile", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'loadfile' script: a08fbe72c95f67027cc9b6349f5d335b598397b7, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return type(newproxy)", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: 2db8cbf73e97a4b7d8d1a7ce472bf57302f0f369, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return type(setfenv)", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'setfenv' script: ceaddaad3558d2f10cbb8082ea10e1b63f3ac0ea, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return type(getfenv)", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'getfenv' script: d2c7282719af3bf866eec648f4592730ecb3a75f, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return type(print)", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: 296aa29e565df267b5e30e498f3872c9f9e8e8cc, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {pcall(error, {err='x'})}", b"0"], b"*2\r\n$-1\r\n$1\r\nx\r\n"),
    (&[b"EVAL", b"return {pcall(error, {err=7})}", b"0"], b"*2\r\n$-1\r\n:7\r\n"),
    (&[b"EVAL", b"return redis.call('echo', 2^62)", b"0"], b"$22\r\n4.6116860184273879e+18\r\n"),
    (&[b"EVAL", b"return redis.call('echo', 0.1)", b"0"], b"$19\r\n0.10000000000000001\r\n"),
    (&[b"EVAL", b"local ok, e = pcall(redis.call, 'incr', 'x', 'y') return e", b"0"], b"$58\r\nERR Wrong number of args calling Redis command from script\r\n"),
    (&[b"EVAL", b"return redis.pcall('hgetall', 'nokey')", b"0"], b"*0\r\n"),
    (&[b"EVAL", b"return redis.call('ping')", b"0"], b"+PONG\r\n"),
    (&[b"EVAL", b"return redis.call('set','x',1.5)", b"0"], b"+OK\r\n"),
    (&[b"EVAL", b"return redis.call('get','x')", b"0"], b"$3\r\n1.5\r\n"),
    (&[b"EVAL", b"return redis.call('get')", b"0"], b"-ERR Wrong number of args calling Redis command from script script: f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {1.5, 'x', false, 7}", b"0"], b"*4\r\n:1\r\n$1\r\nx\r\n$-1\r\n:7\r\n"),
    (&[b"EVAL", b"local t = redis.pcall('nosuch'); return t['err']", b"0"], b"$44\r\nERR Unknown Redis command called from script\r\n"),
    (&[b"EVAL", b"return 12345678901234", b"0"], b":12345678901234\r\n"),
    (&[b"EVAL", b"return redis.call('select', '1')", b"0"], b"+OK\r\n"),
    (&[b"EVAL", b"return _G.x", b"0"], b"-ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: a77ae67de163f975b1ed8463acc72469cf24a035, on @user_script:1.\r\n"),
    (&[b"EVAL", b"_G.x = 1", b"0"], b"-ERR user_script:1: Attempt to modify a readonly table script: e5cf4a26667af1721988fe8c9829d5cd2e26c62e, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return redis.REDIS_VERSION", b"0"], b"$6\r\n7.0.15\r\n"),
    (&[b"EVAL", b"return redis.call('evalsha','a',0)", b"0"], b"-ERR This Redis command is not allowed from script script: 741875da3f95390f015ded54cfd088e5db75558f, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return redis.log(redis.LOG_WARNING, 'hi')", b"0"], b"$-1\r\n"),
    (&[b"EVAL", b"return redis.call('blpop','nokey',0)", b"0"], b"-ERR This Redis command is not allowed from script script: 2f696a2f7ab34754c297af4b9e4a20eb967d783f, on @user_script:1.\r\n"),
    (&[b"EVAL", b"redis.setresp(3); return redis.call('hgetall','nope')", b"0"], b"*0\r\n"),
    (&[b"EVAL", b"redis.call('hset','h','a','1'); redis.setresp(3); local m = redis.call('hgetall','h'); return m['map']['a']", b"0"], b"$1\r\n1\r\n"),
    (&[b"EVAL", b"return redis.call('hgetall','h')", b"0"], b"*2\r\n$1\r\na\r\n$1\r\n1\r\n"),
    (&[b"EVAL", b"return {double=1.5}", b"0"], b"$3\r\n1.5\r\n"),
    (&[b"EVAL", b"return redis.call('lpush','l',1,2,3)", b"0"], b":3\r\n"),
    (&[b"EVAL", b"return redis.call('lrange','l',0,-1)", b"0"], b"*3\r\n$1\r\n3\r\n$1\r\n2\r\n$1\r\n1\r\n"),
    (&[b"EVAL", b"return redis.call('incrbyfloat','f','1.5')", b"0"], b"$3\r\n1.5\r\n"),
    (&[b"EVAL", b"local s = 0; for i=1,100 do s = s + i end; return s", b"0"], b":5050\r\n"),
    (&[b"EVAL", b"return string.format('%d-%s', 5, 'x')", b"0"], b"$3\r\n5-x\r\n"),
    (&[b"EVAL", b"return math.floor(7.9)", b"0"], b":7\r\n"),
    (&[b"EVAL", b"return table.concat({'a','b'}, ',')", b"0"], b"$3\r\na,b\r\n"),
    (&[b"EVAL", b"return tonumber('42')", b"0"], b":42\r\n"),
    (&[b"EVAL", b"return type(KEYS)", b"0"], b"$5\r\ntable\r\n"),
    (&[b"EVAL", b"return ARGV", b"0", b"a", b"b"], b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    (&[b"EVAL", b"return #KEYS", b"2", b"x", b"y", b"z"], b":2\r\n"),
    (&[b"EVAL", b"return redis.call('type', KEYS[1])", b"1", b"l"], b"+list\r\n"),
    (&[b"EVAL", b"local function f(a) return a*2 end; return f(21)", b"0"], b":42\r\n"),
    (&[b"EVAL", b"return pcall(error, 'x')", b"0"], b"$-1\r\n"),
    (&[b"EVAL", b"return redis.call('exists', 'nope') == 0", b"0"], b":1\r\n"),
    (&[b"SCRIPT", b"LOAD", b"return 'loaded'"], b"$40\r\nb534286061d4b9e4026607613b95c06c06015ae8\r\n"),
    (&[b"EVALSHA", b"4b6ec2e7df7e9aee0b3a0b6bac9b78e2b4a64a8e", b"0"], b"-NOSCRIPT No matching script. Please use EVAL.\r\n"),
    (&[b"SCRIPT", b"EXISTS", b"4b6ec2e7df7e9aee0b3a0b6bac9b78e2b4a64a8e", b"0000"], b"*2\r\n:0\r\n:0\r\n"),
    (&[b"SCRIPT", b"KILL"], b"-NOTBUSY No scripts in execution right now.\r\n"),
    (&[b"SCRIPT", b"FLUSH"], b"+OK\r\n"),
    (&[b"SCRIPT", b"EXISTS", b"4b6ec2e7df7e9aee0b3a0b6bac9b78e2b4a64a8e"], b"*1\r\n:0\r\n"),
    (&[b"SCRIPT", b"LOAD", b"return syntax error"], b"-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'error'\r\n"),
    (&[b"SCRIPT", b"FLUSH", b"BOGUS"], b"-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n"),
    // the bit library, and read-only libraries
    (&[b"EVAL", b"return bit.tobit(0xffffffff)", b"0"], b":-1\r\n"),
    (&[b"EVAL", b"return bit.tohex(-1, -4)", b"0"], b"$4\r\nFFFF\r\n"),
    (&[b"EVAL", b"return bit.band(0x12345678, 0xff)", b"0"], b":120\r\n"),
    (&[b"EVAL", b"return bit.bor(1, 2, 4)", b"0"], b":7\r\n"),
    (&[b"EVAL", b"return bit.bxor(5, 3)", b"0"], b":6\r\n"),
    (&[b"EVAL", b"return bit.lshift(1, 31)", b"0"], b":-2147483648\r\n"),
    (&[b"EVAL", b"return bit.rshift(-1, 28)", b"0"], b":15\r\n"),
    (&[b"EVAL", b"return bit.arshift(-256, 4)", b"0"], b":-16\r\n"),
    (&[b"EVAL", b"return bit.rol(0x12345678, 12)", b"0"], b":1164411171\r\n"),
    (&[b"EVAL", b"return bit.ror(0x12345678, 12)", b"0"], b":1736516421\r\n"),
    (&[b"EVAL", b"return bit.bswap(0x12345678)", b"0"], b":2018915346\r\n"),
    (&[b"EVAL", b"return bit.tobit(3.5)", b"0"], b":4\r\n"),
    (&[b"EVAL", b"return bit.tohex(1.5e10)", b"0"], b"$8\r\n7e11d600\r\n"),
    (&[b"EVAL", b"return bit.band()", b"0"], b"-ERR user_script:1: bad argument #1 to 'band' (number expected, got no value) script: 5cf53f885283a4f44a8fe7ad7e7fccaed4113e62, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return bit.band('x')", b"0"], b"-ERR user_script:1: bad argument #1 to 'band' (number expected, got string) script: d35c9a1d4f4825ae2c0656c3cb8c9f397ca6d9b1, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return bit.band('12', 10)", b"0"], b":8\r\n"),
    (&[b"EVAL", b"return bit.lshift(1)", b"0"], b"-ERR user_script:1: bad argument #2 to 'lshift' (number expected, got no value) script: 96ef0de5140ab932215a1863ca1373f10f03b7a6, on @user_script:1.\r\n"),
    (&[b"EVAL", b"bit.x = 1", b"0"], b"-ERR user_script:1: Attempt to modify a readonly table script: 902810e13d3aefd4d9a780b3b1f6c6f716481d08, on @user_script:1.\r\n"),
    (&[b"EVAL", b"string.x = 1", b"0"], b"-ERR user_script:1: Attempt to modify a readonly table script: c3eb0a2a15b3d4790b323c4104029c1ae425a769, on @user_script:1.\r\n"),
    (&[b"EVAL", b"redis.call = nil", b"0"], b"-ERR user_script:1: Attempt to modify a readonly table script: 2786c35ed73d3860851cf52e0b5dfbbc0bdb4803, on @user_script:1.\r\n"),
    (&[b"EVAL", b"local x = bit.band(1, {})", b"0"], b"-ERR user_script:1: bad argument #2 to 'band' (number expected, got table) script: 3015c4485cac11020957cccbef7b2035de690c49, on @user_script:1.\r\n"),
    // number arguments reach commands as %.17g
    (&[b"EVAL", b"redis.call('set','x',0.1+0.2) return redis.call('get','x')", b"0"], b"$19\r\n0.30000000000000004\r\n"),
    (&[b"EVAL", b"redis.call('set','x',1/3) return redis.call('get','x')", b"0"], b"$19\r\n0.33333333333333331\r\n"),
    (&[b"EVAL", b"redis.call('set','x',1e20) return redis.call('get','x')", b"0"], b"$5\r\n1e+20\r\n"),
    (&[b"EVAL", b"redis.call('set','x',-1e-5) return redis.call('get','x')", b"0"], b"$23\r\n-1.0000000000000001e-05\r\n"),
    (&[b"EVAL", b"redis.call('set','x',42) return redis.call('get','x')", b"0"], b"$2\r\n42\r\n"),
];

/// FUNCTION and FCALL, in order on one connection, recorded from
/// redis-server 7.0.15. (FUNCTION LIST shows libraries of one function
/// only: Redis lists a library's functions in its hash table's order,
/// lapse in the order they were registered.)
const FUNCTION_CASES: &[Case] = &[
    (&[b"FUNCTION", b"FLUSH"], b"+OK\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=lib1\nredis.register_function('f1', function(keys, args) return redis.call('get', keys[1]) end)\nredis.register_function{function_name='f2', callback=function(keys, args) return args[1] end, flags={'no-writes', 'allow-stale'}, description='desc two'}"], b"$4\r\nlib1\r\n"),
    (&[b"FUNCTION", b"LOAD", b"return 1"], b"-ERR Missing library metadata\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua"], b"-ERR Invalid library metadata\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=lib1\nredis.register_function('f3', function() return 1 end)"], b"-ERR Library 'lib1' already exists\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function('f1', function() return 1 end)"], b"-ERR Function f1 already exists\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nreturn 1"], b"-ERR No functions registered\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function()"], b"-ERR Error registering functions: ERR wrong number of arguments to redis.register_function\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function('a b', function() end)"], b"-ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags={'bad'}}"], b"-ERR Error registering functions: ERR unknown flag given\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.call('ping')"], b"-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nerror('boom')"], b"-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'error'\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nsyntax error"], b"-ERR Error compiling function: user_function:2: '=' expected near 'error'\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x foo=bar\n"], b"-ERR Invalid metadata value given: foo=bar\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!js name=x\n"], b"-ERR Engine 'js' not found\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x name=y\n"], b"-ERR Invalid metadata value, name argument was given multiple times\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=a-b\n"], b"-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nx = 1"], b"-ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function(1, 2)"], b"-ERR Error registering functions: ERR second argument to redis.register_function must be a function\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function('f', 2)"], b"-ERR Error registering functions: ERR second argument to redis.register_function must be a function\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function{callback=function() end}"], b"-ERR Error registering functions: ERR redis.register_function must get a function name argument\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function{function_name='z', cb=1}"], b"-ERR Error registering functions: ERR unknown argument given to redis.register_function\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nlocal i = 0 while true do i = i + 1 end"], b"-ERR Error registering functions: ERR FUNCTION LOAD timeout\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.register_function('f1x', function() return 1 end)\nredis.register_function('f1x', function() return 1 end)"], b"-ERR Error registering functions: ERR Function already exists in the library\r\n"),
    (&[b"FUNCTION", b"LOAD", b"REPLACE", b"#!lua name=e\nredis.register_function('boom', function(keys, args) error('boom') end)"], b"$1\r\ne\r\n"),
    (&[b"FUNCTION", b"LOAD", b"REPLACE", b"#!lua name=w\nredis.register_function('cw', function(keys, args) return redis.call('incr', keys[1]) end)"], b"$1\r\nw\r\n"),
    (&[b"FUNCTION", b"LOAD", b"REPLACE", b"#!lua name=r\nredis.register_function{function_name='ro', callback=function(keys, args) return redis.call('set', 'a', 'b') end, flags={'no-writes'}}"], b"$1\r\nr\r\n"),
    (&[b"FUNCTION", b"LOAD", b"REPLACE", b"#!lua name=g\nredis.register_function('g', function(keys, args) return x end)"], b"$1\r\ng\r\n"),
    (&[b"SET", b"k", b"v"], b"+OK\r\n"),
    (&[b"FCALL", b"boom", b"0"], b"-ERR user_function:2: boom script: boom, on @user_function:2.\r\n"),
    (&[b"FCALL", b"cw", b"1", b"k"], b"-ERR value is not an integer or out of range script: cw, on @user_function:2.\r\n"),
    (&[b"FCALL", b"cw", b"1", b"n"], b":1\r\n"),
    (&[b"FCALL", b"ro", b"0"], b"-ERR Write commands are not allowed from read-only scripts. script: ro, on @user_function:2.\r\n"),
    (&[b"FCALL", b"g", b"0"], b"-ERR user_function:2: Script attempted to access nonexistent global variable 'x' script: g, on @user_function:2.\r\n"),
    (&[b"FUNCTION", b"DELETE", b"nope"], b"-ERR Library not found\r\n"),
    (&[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"w", b"WITHCODE"], b"*1\r\n*8\r\n$12\r\nlibrary_name\r\n$1\r\nw\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n*6\r\n$4\r\nname\r\n$2\r\ncw\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n$12\r\nlibrary_code\r\n$103\r\n#!lua name=w\nredis.register_function('cw', function(keys, args) return redis.call('incr', keys[1]) end)\r\n"),
    (&[b"FUNCTION", b"STATS"], b"*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:5\r\n$15\r\nfunctions_count\r\n:6\r\n"),
    (&[b"FUNCTION", b"DELETE", b"e"], b"+OK\r\n"),
    (&[b"FCALL", b"boom", b"0"], b"-ERR Function not found\r\n"),
    (&[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"r*"], b"*1\r\n*6\r\n$12\r\nlibrary_name\r\n$1\r\nr\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n*6\r\n$4\r\nname\r\n$2\r\nro\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*1\r\n+no-writes\r\n"),
    (&[b"FUNCTION", b"LIST", b"foo"], b"-ERR Unknown argument foo\r\n"),
    (&[b"FUNCTION", b"LIST", b"LIBRARYNAME"], b"-ERR library name argument was not given\r\n"),
    (&[b"FUNCTION", b"FLUSH", b"bad"], b"-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n"),
    (&[b"FUNCTION", b"KILL"], b"-NOTBUSY No scripts in execution right now.\r\n"),
    (&[b"FCALL", b"f1", b"1", b"k"], b"$1\r\nv\r\n"),
    (&[b"FCALL_RO", b"f1", b"1", b"k"], b"-ERR Can not execute a script with write flag using *_ro command.\r\n"),
    (&[b"FCALL_RO", b"f2", b"0", b"a"], b"$1\r\na\r\n"),
    (&[b"FCALL", b"nosuch", b"0"], b"-ERR Function not found\r\n"),
    (&[b"FCALL", b"f1", b"x"], b"-ERR Bad number of keys provided\r\n"),
    (&[b"FCALL", b"f1", b"-1"], b"-ERR Number of keys can't be negative\r\n"),
    (&[b"FCALL", b"f1", b"3", b"a"], b"-ERR Number of keys can't be greater than number of args\r\n"),
    (&[b"FUNCTION", b"LOAD", b"foo", b"bar"], b"-ERR Unknown option given: foo\r\n"),
    (&[b"FUNCTION", b"LOAD", b"REPLACE"], b"-ERR Missing library metadata\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!LUA name=up\nredis.register_function('up', function() return redis.REDIS_VERSION end)"], b"$2\r\nup\r\n"),
    (&[b"FCALL", b"up", b"0"], b"$6\r\n7.0.15\r\n"),
    (&[b"FUNCTION", b"LOAD", b"#!lua name=lg\nredis.log(redis.LOG_WARNING, 'loading')\nredis.register_function('lg', function() redis.log(redis.LOG_NOTICE, 'x', 1) return redis.setresp ~= nil end)"], b"$2\r\nlg\r\n"),
    (&[b"FCALL", b"lg", b"0"], b":1\r\n"),
    (&[b"FUNCTION", b"FLUSH", b"ASYNC"], b"+OK\r\n"),
    (&[b"FUNCTION", b"STATS"], b"*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:0\r\n$15\r\nfunctions_count\r\n:0\r\n"),
    (&[b"FUNCTION", b"LIST"], b"*0\r\n"),
];

/// The cjson, cmsgpack and struct libraries: encodings, decodings and errors;
/// then what `pcall` catches (Redis 7.0 hands a command's error or a
/// library's back as a string). Recorded from redis-server 7.0.15.
const LIBRARY_CASES: &[Case] = &[
    (&[b"EVAL", b"return struct.pack('>i', 1)", b"0"], b"$4\r\n\x00\x00\x00\x01\r\n"),
    (&[b"EVAL", b"return struct.pack('<h', -2)", b"0"], b"$2\r\n\xfe\xff\r\n"),
    (&[b"EVAL", b"return struct.pack('B b', 255, -1)", b"0"], b"$2\r\n\xff\xff\r\n"),
    (&[b"EVAL", b"return struct.pack('>I8', 2^40)", b"0"], b"$8\r\n\x00\x00\x01\x00\x00\x00\x00\x00\r\n"),
    (&[b"EVAL", b"return struct.pack('>d', 1.5)", b"0"], b"$8\r\n?\xf8\x00\x00\x00\x00\x00\x00\r\n"),
    (&[b"EVAL", b"return struct.pack('<f', 0.25)", b"0"], b"$4\r\n\x00\x00\x80>\r\n"),
    (&[b"EVAL", b"return struct.pack('s', 'ab')", b"0"], b"$3\r\nab\x00\r\n"),
    (&[b"EVAL", b"return struct.pack('c3', 'abcd')", b"0"], b"$3\r\nabc\r\n"),
    (&[b"EVAL", b"return struct.pack('c0', 'abc')", b"0"], b"$3\r\nabc\r\n"),
    (&[b"EVAL", b"return struct.pack('c5', 'ab')", b"0"], b"-ERR user_script:1: bad argument #3 to 'pack' (string too short) script: cec53901ab5000b5eccda51f64e59e716bdfd4ba, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.pack('!4 b i', 1, 2)", b"0"], b"$8\r\n\x01\x00\x00\x00\x02\x00\x00\x00\r\n"),
    (&[b"EVAL", b"return struct.pack('!3 i', 1)", b"0"], b"-ERR user_script:1: alignment 3 is not a power of 2 script: ceba564af1ec234f144dd411387773dddb742900, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.pack('z', 1)", b"0"], b"-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'z') script: b1a49a62278d772f47cfca6a679bc33c0fa64430, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.pack('i40', 1)", b"0"], b"-ERR user_script:1: integral size 40 is larger than limit of 32 script: 652cabace7a9fdbd8e0c2489b1b804d19185ddc8, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.pack('>i', 'x')", b"0"], b"-ERR user_script:1: bad argument #2 to 'pack' (number expected, got string) script: 0bbd4465433429810e32c950a66413f210d901e6, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {struct.unpack('>i', struct.pack('>i', -7))}", b"0"], b"*2\r\n:-7\r\n:5\r\n"),
    (&[b"EVAL", b"return {struct.unpack('<HHs', struct.pack('<HHs', 1, 2, 'hi'))}", b"0"], b"*4\r\n:1\r\n:2\r\n$2\r\nhi\r\n:8\r\n"),
    (&[b"EVAL", b"return {struct.unpack('>I', 'ab')}", b"0"], b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: dcdfc454e19eed3d2a10e3d45225bf794a68f888, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {struct.unpack('b c0', struct.pack('b', 3) .. 'xyz')}", b"0"], b"*2\r\n$3\r\nxyz\r\n:5\r\n"),
    (&[b"EVAL", b"return {struct.unpack('s', 'abc')}", b"0"], b"-ERR user_script:1: unfinished string in data script: 492b42cd22537e0bb82c111843dde3f2c69bafe9, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {struct.unpack('>d', struct.pack('>d', 2.5))}", b"0"], b"*2\r\n:2\r\n:9\r\n"),
    (&[b"EVAL", b"return {struct.unpack('i', struct.pack('i', 5) .. struct.pack('i', 6), 5)}", b"0"], b"*2\r\n:6\r\n:9\r\n"),
    (&[b"EVAL", b"return {struct.unpack('i', 'abcd', 0)}", b"0"], b"-ERR user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater) script: b75b006a2f3f6e8d842a94e5f3579ac1cd346c4f, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {struct.unpack('>i3', '\\255\\255\\254')}", b"0"], b"*2\r\n:-2\r\n:4\r\n"),
    (&[b"EVAL", b"return struct.size('>iihd')", b"0"], b":18\r\n"),
    (&[b"EVAL", b"return struct.size('!8 b d')", b"0"], b":16\r\n"),
    (&[b"EVAL", b"return struct.size('s')", b"0"], b"-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size) script: a2a0525826ab7939ccd3f54427a862205642f28f, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.size('c0')", b"0"], b"-ERR user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size) script: 18f217e7d560de92703dc71e9797e043b536e0e6, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.size('i40')", b"0"], b"-ERR user_script:1: integral size 40 is larger than limit of 32 script: 3e540f3a08223d82bf92ec251944ff434d9bae0b, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.pack('>l', 1) .. struct.pack('<L', 2^32)", b"0"], b"$16\r\n\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\x00\x00\x00\r\n"),
    (&[b"EVAL", b"return {struct.unpack('>Hx', 'ab')}", b"0"], b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 8dc7264ff5e11e234e759f198243542cf1ef3865, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return struct.pack('>i2', 70000)", b"0"], b"$2\r\n\x11p\r\n"),
    (&[b"SET", b"pk", b"v"], b"+OK\r\n"),
    (&[b"EVAL", b"local ok, e = pcall(redis.call, 'incr', 'pk') return {tostring(ok), type(e), e}", b"0"], b"*3\r\n$5\r\nfalse\r\n$6\r\nstring\r\n$43\r\nERR value is not an integer or out of range\r\n"),
    (&[b"EVAL", b"local ok, e = pcall(cjson.decode, 'x') return {tostring(ok), type(e), e}", b"0"], b"*3\r\n$5\r\nfalse\r\n$6\r\nstring\r\n$53\r\nExpected value but found invalid token at character 1\r\n"),
    (&[b"EVAL", b"local ok, e = pcall(redis.call) return e", b"0"], b"$64\r\nERR Please specify at least one argument for this redis lib call\r\n"),
    (&[b"EVAL", b"local ok, e = pcall(error, 'x') return e", b"0"], b"$1\r\nx\r\n"),
    (&[b"EVAL", b"return {pcall(function() return 1, 2 end)}", b"0"], b"*3\r\n:1\r\n:1\r\n:2\r\n"),
    (&[b"EVAL", b"return pcall(redis.call, 'nosuch')", b"0"], b"$-1\r\n"),
    (&[b"EVAL", b"local ok, e = pcall(function() return redis.call('incr', 'pk') end) return e", b"0"], b"$43\r\nERR value is not an integer or out of range\r\n"),
    (&[b"EVAL", b"return cjson.encode({1,2,3})", b"0"], b"$7\r\n[1,2,3]\r\n"),
    (&[b"EVAL", b"return cjson.encode({a=1})", b"0"], b"$7\r\n{\"a\":1}\r\n"),
    (&[b"EVAL", b"return cjson.encode({})", b"0"], b"$2\r\n{}\r\n"),
    (&[b"EVAL", b"return cjson.encode('a/b\"c\\\\d\\n\\t\\1\\127')", b"0"], b"$28\r\n\"a\\/b\\\"c\\\\d\\n\\t\\u0001\\u007f\"\r\n"),
    (&[b"EVAL", b"return cjson.encode({1.5, 1e20, 0.1, 3, -0.5, 1/3, 123456789012345678})", b"0"], b"$59\r\n[1.5,1e+20,0.1,3,-0.5,0.33333333333333,1.2345678901235e+17]\r\n"),
    (&[b"EVAL", b"return cjson.encode({[1]=1,[3]=3})", b"0"], b"$10\r\n[1,null,3]\r\n"),
    (&[b"EVAL", b"return cjson.encode({[1]=1,[20]=3})", b"0"], b"-ERR user_script:1: Cannot serialise table: excessively sparse array script: 599049a94af36a079b8c19b2e9635d7951cda076, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.encode({[1]=1, a=2})", b"0"], b"$13\r\n{\"1\":1,\"a\":2}\r\n"),
    (&[b"EVAL", b"return cjson.encode(function() end)", b"0"], b"-ERR user_script:1: Cannot serialise function: type not supported script: c6600573aa08cdf0af5da6e0ef682db69a3acc00, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.encode(true)", b"0"], b"$4\r\ntrue\r\n"),
    (&[b"EVAL", b"return cjson.encode(nil)", b"0"], b"$4\r\nnull\r\n"),
    (&[b"EVAL", b"return cjson.encode({a={b={c={1,{}}}}})", b"0"], b"$24\r\n{\"a\":{\"b\":{\"c\":[1,{}]}}}\r\n"),
    (&[b"EVAL", b"return cjson.encode(cjson.null)", b"0"], b"$4\r\nnull\r\n"),
    (&[b"EVAL", b"return cjson.encode({x=cjson.null})", b"0"], b"$10\r\n{\"x\":null}\r\n"),
    (&[b"EVAL", b"return cjson.encode(1/0)", b"0"], b"-ERR user_script:1: Cannot serialise number: must not be NaN or Inf script: 08ffdaa5e7f117332da21c3b5222c2ede9492c60, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.encode(0/0)", b"0"], b"-ERR user_script:1: Cannot serialise number: must not be NaN or Inf script: d3f8d4e745d6587b04e9dd216e0d4631f0a306d9, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.encode({[1.5]=1})", b"0"], b"$9\r\n{\"1.5\":1}\r\n"),
    (&[b"EVAL", b"return cjson.encode({[true]=1})", b"0"], b"-ERR user_script:1: Cannot serialise boolean: table key must be a number or string script: 376a640005c8509c694166527ca834359bf69aa8, on @user_script:1.\r\n"),
    (&[b"EVAL", b"local t = {} local c = t for i=1,1100 do c[1] = {} c = c[1] end return cjson.encode(t)", b"0"], b"-ERR user_script:1: Cannot serialise, excessive nesting (1001) script: 190387e70a4f4ace45e3621ca338fa07002224db, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.encode('\\195\\169')", b"0"], b"$4\r\n\"\xc3\xa9\"\r\n"),
    (&[b"EVAL", b"return cjson.encode({b=1, a=2, c=3, d=4})", b"0"], b"$25\r\n{\"a\":2,\"d\":4,\"c\":3,\"b\":1}\r\n"),
    (&[b"EVAL", b"return cjson.encode()", b"0"], b"-ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument) script: fc593ea31f478c7ed65c77495cc63edeb9153530, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.encode(1, 2)", b"0"], b"-ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument) script: e3a38cd8c1bb7de419304607b05108c80af53cbc, on @user_script:1.\r\n"),
    (&[b"EVAL", b"local t = cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":\"x\\\\u00e9\\\\n\"}') return {t.a[1], t.a[2], t.c, tostring(t.a[3].b == cjson.null)}", b"0"], b"*4\r\n:1\r\n:2\r\n$4\r\nx\xc3\xa9\n\r\n$4\r\ntrue\r\n"),
    (&[b"EVAL", b"return cjson.decode('[1,2.5,-3e2,true,false]')", b"0"], b"*5\r\n:1\r\n:2\r\n:-300\r\n:1\r\n$-1\r\n"),
    (&[b"EVAL", b"return cjson.decode('\"abc\"')", b"0"], b"$3\r\nabc\r\n"),
    (&[b"EVAL", b"return cjson.decode('12')", b"0"], b":12\r\n"),
    (&[b"EVAL", b"return type(cjson.decode('null'))", b"0"], b"$8\r\nuserdata\r\n"),
    (&[b"EVAL", b"return cjson.decode('')", b"0"], b"-ERR user_script:1: Expected value but found T_END at character 1 script: 7ff8cf86abed928f4d61a01dcc9713f0117b180a, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('[1,2')", b"0"], b"-ERR user_script:1: Expected comma or array end but found T_END at character 5 script: c107001b5ba2ff860ee2557f64da37c4767ef4bd, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('{\"a\" 1}')", b"0"], b"-ERR user_script:1: Expected colon but found T_NUMBER at character 6 script: 3486ee24bfdfc100c738c73355e99954ef01d92f, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('{1:2}')", b"0"], b"-ERR user_script:1: Expected object key string but found T_NUMBER at character 2 script: b7dfc51e0d5bf164c246fe708a2e33743e899be6, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('tru')", b"0"], b"-ERR user_script:1: Expected value but found invalid token at character 1 script: b0ae6f0426d6ff93bdff3364f547baa19aa4171b, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('[1,]')", b"0"], b"-ERR user_script:1: Expected value but found T_ARR_END at character 4 script: d31ab1dd313d99d4ad3dac6e48cdff283bea270c, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('\"\\\\x\"')", b"0"], b"-ERR user_script:1: Expected value but found invalid escape code at character 2 script: e15fa517a0e30bc5ba472a9403d98fe6c88ca8e5, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('[1] x')", b"0"], b"-ERR user_script:1: Expected the end but found invalid token at character 5 script: 90488ed3df43636c96be19291b12cbc738913942, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('\"\\\\ud83d\\\\ude00\"')", b"0"], b"$4\r\n\xf0\x9f\x98\x80\r\n"),
    (&[b"EVAL", b"return cjson.decode('  [ ]  ')", b"0"], b"*0\r\n"),
    (&[b"EVAL", b"return cjson.decode(5)", b"0"], b":5\r\n"),
    (&[b"EVAL", b"return cjson.decode({})", b"0"], b"-ERR user_script:1: bad argument #1 to 'decode' (string expected, got table) script: 10c706d54b3ae7d2bcc169d647405abd961145fa, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('0x10')", b"0"], b":16\r\n"),
    (&[b"EVAL", b"return cjson.decode('[\"a\\tb\"]')", b"0"], b"*1\r\n$3\r\na\x09b\r\n"),
    (&[b"EVAL", b"return cjson.decode('{\"a\":1,\"a\":2}').a", b"0"], b":2\r\n"),
    (&[b"EVAL", b"return cjson.decode('1e400')", b"0"], b":-9223372036854775808\r\n"),
    (&[b"EVAL", b"return cjson.encode(cjson.decode('[[],{}]'))", b"0"], b"$7\r\n[{},{}]\r\n"),
    (&[b"EVAL", b"return cjson.encode({1,2,nil,4})", b"0"], b"$12\r\n[1,2,null,4]\r\n"),
    (&[b"EVAL", b"return cjson.encode({[0]=1})", b"0"], b"$7\r\n{\"0\":1}\r\n"),
    (&[b"EVAL", b"return cjson.encode({[-1]=1})", b"0"], b"$8\r\n{\"-1\":1}\r\n"),
    (&[b"EVAL", b"return cjson.encode({[2]=2})", b"0"], b"$8\r\n[null,2]\r\n"),
    (&[b"EVAL", b"return cjson.encode(-0)", b"0"], b"$2\r\n-0\r\n"),
    (&[b"EVAL", b"return cjson.encode(100000000000000)", b"0"], b"$5\r\n1e+14\r\n"),
    (&[b"EVAL", b"return cjson.encode(1e14)", b"0"], b"$5\r\n1e+14\r\n"),
    (&[b"EVAL", b"return cjson.encode(2^53)", b"0"], b"$18\r\n9.007199254741e+15\r\n"),
    (&[b"EVAL", b"return cjson.encode(0.000001)", b"0"], b"$5\r\n1e-06\r\n"),
    (&[b"EVAL", b"return cjson.encode(1e-7)", b"0"], b"$5\r\n1e-07\r\n"),
    (&[b"EVAL", b"return cjson.decode('-')", b"0"], b"-ERR user_script:1: Expected value but found invalid number at character 1 script: a968c762a4638482bd9ef50dcecdc4504214d87d, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cjson.decode('01')", b"0"], b":1\r\n"),
    (&[b"EVAL", b"return cjson.decode('[1e5, 1E-2, -0]')", b"0"], b"*3\r\n:100000\r\n:0\r\n:0\r\n"),
    (&[b"EVAL", b"return cjson.decode('\"\\\\u0041\\\\u00\"')", b"0"], b"-ERR user_script:1: Expected value but found invalid unicode escape code at character 8 script: cd86a412603ed1a37773fa3160ac91e2d6d75b67, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack({1,2,3})", b"0"], b"$4\r\n\x93\x01\x02\x03\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack({a=1,b='x'})", b"0"], b"$8\r\n\x82\xa1a\x01\xa1b\xa1x\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack({})", b"0"], b"$1\r\n\x90\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack(nil, true, false)", b"0"], b"$3\r\n\xc0\xc3\xc2\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649)", b"0"], b"$62\r\n\x00\x7f\xcc\x80\xcc\xff\xcd\x01\x00\xcd\xff\xff\xce\x00\x01\x00\x00\xce\xff\xff\xff\xff\xcf\x00\x00\x00\x01\x00\x00\x00\x00\xff\xe0\xd0\xdf\xd0\x80\xd1\xff\x7f\xd1\x80\x00\xd2\xff\xff\x7f\xff\xd2\x80\x00\x00\x00\xd3\xff\xff\xff\xff\x7f\xff\xff\xff\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack(1.5, 0.1, 1e300, -2.25, 2^63)", b"0"], b"$33\r\n\xca?\xc0\x00\x00\xcb?\xb9\x99\x99\x99\x99\x99\x9a\xcb~7\xe4<\x88\x00u\x9c\xca\xc0\x10\x00\x00\xca_\x00\x00\x00\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack(string.rep('a', 31), string.rep('b', 32))", b"0"], b"$66\r\n\xbfaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xd9 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n"),
    (&[b"EVAL", b"return #cmsgpack.pack(string.rep('c', 300))", b"0"], b":303\r\n"),
    (&[b"EVAL", b"return #cmsgpack.pack(string.rep('d', 70000))", b"0"], b":70005\r\n"),
    (&[b"EVAL", b"local t = {} for i=1,20 do t[i]=i end return cmsgpack.pack(t)", b"0"], b"$23\r\n\xdc\x00\x14\x01\x02\x03\x04\x05\x06\x07\x08\x09\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack({1,2,nil,4})", b"0"], b"$7\r\n\x83\x01\x01\x02\x02\x04\x04\r\n"),
    (&[b"EVAL", b"local t = {} local c = t for i=1,20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)", b"0"], b"$17\r\n\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack()", b"0"], b"-ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.) script: 6bc235afa55de88253e203cc5fe5844792e25209, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cmsgpack.pack(function() end)", b"0"], b"$1\r\n\xc0\r\n"),
    (&[b"EVAL", b"return {cmsgpack.unpack(cmsgpack.pack(1, 'two', {3, {4}}, -5, 1.5))}", b"0"], b"*5\r\n:1\r\n$3\r\ntwo\r\n*2\r\n:3\r\n*1\r\n:4\r\n:-5\r\n:1\r\n"),
    (&[b"EVAL", b"local t = cmsgpack.unpack(cmsgpack.pack({a=1,b={c='d'}})) return {t.a, t.b.c}", b"0"], b"*2\r\n:1\r\n$1\r\nd\r\n"),
    (&[b"EVAL", b"return cmsgpack.unpack('\\145')", b"0"], b"-ERR user_script:1: Missing bytes in input. script: e5a6d131d7141fcb79a9f44b543166f94c2e8503, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cmsgpack.unpack('\\193')", b"0"], b"-ERR user_script:1: Bad data format in input. script: dc135bd7bc2955014f03280e151acf74360378e7, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return {cmsgpack.unpack('')}", b"0"], b"*0\r\n"),
    (&[b"EVAL", b"return cmsgpack.unpack('\\205\\1')", b"0"], b"-ERR user_script:1: Missing bytes in input. script: 4679240a23ff9735759d614fd4b677cab6fb1b9a, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return cmsgpack.unpack(cmsgpack.pack(-2147483649))", b"0"], b":-2147483649\r\n"),
    (&[b"EVAL", b"return tostring(cmsgpack.unpack(cmsgpack.pack(0.25)))", b"0"], b"$4\r\n0.25\r\n"),
    (&[b"EVAL", b"return cmsgpack.unpack('\\217\\3abc')", b"0"], b"$3\r\nabc\r\n"),
];

/// `math.random` on a fresh server: the same numbers as redis-server's
/// (its lrand48 stream, shared by all scripts, not reseeded per script).
const RANDOM_CASES: &[Case] = &[
    (&[b"EVAL", b"return {math.random(100), math.random(1000000), math.random(5,10), tostring(math.random())}", b"0"], b"*4\r\n:40\r\n:840486\r\n:7\r\n$16\r\n0.44658343468168\r\n"),
    (&[b"EVAL", b"math.randomseed(42) return {math.random(1000000), math.random(1000000)}", b"0"], b"*2\r\n:744526\r\n:342702\r\n"),
    (&[b"EVAL", b"return math.random(0)", b"0"], b"-ERR user_script:1: bad argument #1 to 'random' (interval is empty) script: 008bcb60f86ee36d26c67b641b46674578d9cba0, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return math.random(3, 1)", b"0"], b"-ERR user_script:1: bad argument #2 to 'random' (interval is empty) script: e7eba8cfa2634198f693e80c6baa2d58a99a9060, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return math.random('x')", b"0"], b"-ERR user_script:1: bad argument #1 to 'random' (number expected, got string) script: d36aee4c433f6d1a257f71070b6a0b37a40bbb04, on @user_script:1.\r\n"),
    (&[b"EVAL", b"return math.random(1, 2, 3)", b"0"], b"-ERR user_script:1: wrong number of arguments script: 07d2fd85ff1e5c39f9bd7d9163eddb0db34f2a7a, on @user_script:1.\r\n"),
    (&[b"EVAL", b"math.randomseed('7') return math.random(1000)", b"0"], b":267\r\n"),
];

/// EVAL scripts with a `#!lua flags=...` first line (Redis 7.0): the
/// flags, EVAL_RO's check, the errors, line numbers kept. Recorded from
/// redis-server 7.0.15.
const SHEBANG_CASES: &[Case] = &[
    (&[b"EVAL", b"#!lua\nreturn redis.call('set', KEYS[1], 'v')", b"1", b"sk"], b"+OK\r\n"),
    (&[b"EVAL", b"#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", b"1", b"sk"], b"$1\r\nv\r\n"),
    (&[b"EVAL", b"#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'w')", b"1", b"sk"], b"-ERR Write commands are not allowed from read-only scripts. script: 78d396c3c7e27bd2b3fe76e052babcd5c864076c, on @user_script:2.\r\n"),
    (&[b"EVAL_RO", b"#!lua\nreturn redis.call('get', KEYS[1])", b"1", b"sk"], b"-ERR Can not execute a script with write flag using *_ro command.\r\n"),
    (&[b"EVAL_RO", b"#!lua flags=no-writes,allow-stale\nreturn redis.call('get', KEYS[1])", b"1", b"sk"], b"$1\r\nv\r\n"),
    (&[b"EVAL", b"#!lua flags=bogus\nreturn 1", b"0"], b"-ERR Unexpected flag in script shebang: bogus\r\n"),
    (&[b"EVAL", b"#!lua foo=bar\nreturn 1", b"0"], b"-ERR Unknown lua shebang option: foo=bar\r\n"),
    (&[b"EVAL", b"#!python\nreturn 1", b"0"], b"-ERR Unexpected engine in script shebang: #!python\r\n"),
    (&[b"EVAL", b"#!lua", b"0"], b"-ERR Invalid script shebang\r\n"),
    (&[b"EVAL", b"#!lua\n\nerror('line three')", b"0"], b"-ERR user_script:3: line three script: e0d075f41e0c89d0d607faea2c428f060fe0051e, on @user_script:3.\r\n"),
    (&[b"SCRIPT", b"LOAD", b"#!lua flags=nope\nreturn 1"], b"-ERR Unexpected flag in script shebang: nope\r\n"),
];

fn replay(r: &mut Raw, who: &str) {
    assert_eq!(r.cmd(&["FLUSHALL"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SCRIPT", "FLUSH"]), "+OK\r\n");
    replay_cases(r, CASES, who);
    replay_cases(r, SHEBANG_CASES, who);
}

#[test]
fn scripts_answer_as_redis_does() {
    let lapse = Server::lapse(&[]);
    replay(&mut lapse.raw(), "lapse");
}

#[test]
fn cjson_cmsgpack_and_struct_encode_as_redis_does() {
    let lapse = Server::lapse(&[]);
    replay_cases(&mut lapse.raw(), LIBRARY_CASES, "lapse");
    if let Some(redis) = Server::redis() {
        replay_cases(&mut redis.raw(), LIBRARY_CASES, "redis-server");
    }
}

#[test]
fn math_random_draws_redis_servers_numbers() {
    let lapse = Server::lapse(&[]);
    replay_cases(&mut lapse.raw(), RANDOM_CASES, "lapse");
    if let Some(redis) = Server::redis() {
        replay_cases(&mut redis.raw(), RANDOM_CASES, "redis-server");
    }
}

#[test]
fn functions_answer_as_redis_does() {
    let lapse = Server::lapse(&[]);
    replay_cases(&mut lapse.raw(), FUNCTION_CASES, "lapse");
    if let Some(redis) = Server::redis() {
        replay_cases(&mut redis.raw(), FUNCTION_CASES, "redis-server");
    }
}

#[test]
fn the_script_cache_shows_in_info_and_flushes() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    assert_eq!(
        r.cmd(&["SCRIPT", "LOAD", "return 1"]),
        "$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n"
    );
    assert_eq!(
        common::info_field(&mut r, "memory", "number_of_cached_scripts"),
        "1"
    );
    assert_eq!(
        common::info_field(&mut r, "memory", "used_memory_scripts"),
        "8"
    );
    assert_eq!(r.cmd(&["SCRIPT", "FLUSH", "ASYNC"]), "+OK\r\n");
    assert_eq!(
        common::info_field(&mut r, "memory", "number_of_cached_scripts"),
        "0"
    );
    assert_eq!(
        r.cmd(&["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"]),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n"
    );
}

#[test]
fn recorded_replies_are_redis_servers() {
    let Some(redis) = Server::redis() else {
        return;
    };
    replay(&mut redis.raw(), "redis-server");
}

/// A key whose TTL runs out while a script is busy is still there at the
/// end of that script: the script sees one moment. Afterwards it is gone.
fn frozen_time(r: &mut Raw) {
    assert_eq!(r.cmd(&["SET", "brief", "v", "PX", "100"]), "+OK\r\n");
    let script = "
        local t0 = redis.call('TIME')
        local start = t0[1] * 1000000 + t0[2]
        repeat
            local t = redis.call('TIME')
        until t[1] * 1000000 + t[2] - start > 300000
        return redis.call('GET', KEYS[1])";
    assert_eq!(r.cmd(&["EVAL", script, "1", "brief"]), "$1\r\nv\r\n");
    assert_eq!(r.cmd(&["GET", "brief"]), "$-1\r\n");
}

#[test]
fn time_is_frozen_inside_a_script() {
    let lapse = Server::lapse(&[]);
    frozen_time(&mut lapse.raw());
    if let Some(redis) = Server::redis() {
        frozen_time(&mut redis.raw());
    }
}

/// The classic lock: SET NX PX to take it, compare-and-delete to release.
#[test]
fn a_lock_releases_through_a_client_library_script() {
    let lapse = Server::lapse(&[]);
    let mut con = lapse.client();
    let release = redis::Script::new(
        r"if redis.call('get', KEYS[1]) == ARGV[1] then
              return redis.call('del', KEYS[1])
          else
              return 0
          end",
    );
    let taken: Option<String> = redis::cmd("SET")
        .arg("lock")
        .arg("token-1")
        .arg("NX")
        .arg("PX")
        .arg(30_000)
        .query(&mut con)
        .unwrap();
    assert_eq!(taken.as_deref(), Some("OK"));
    let wrong: i64 = release.key("lock").arg("token-2").invoke(&mut con).unwrap();
    assert_eq!(wrong, 0);
    let right: i64 = release.key("lock").arg("token-1").invoke(&mut con).unwrap();
    assert_eq!(right, 1);
    let again: i64 = release.key("lock").arg("token-1").invoke(&mut con).unwrap();
    assert_eq!(again, 0);
    std::thread::sleep(Duration::from_millis(1));
}

const BUSY_EVAL: &str =
    "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

const BUSY_FUNCTION: &str =
    "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n";

/// Polls PING from `b` until the script `a` runs is reported busy.
#[track_caller]
fn wait_busy(b: &mut Raw) {
    let busy = common::eventually(Duration::from_secs(10), || {
        let reply = b.cmd(&["PING"]);
        assert!(reply == "+PONG\r\n" || reply == BUSY_EVAL, "{reply}");
        reply == BUSY_EVAL
    });
    let port = b
        .reader
        .get_ref()
        .peer_addr()
        .map(|a| a.port())
        .unwrap_or(0);
    assert!(busy, "the script never showed as busy on port {port}");
}

/// Past `busy-reply-threshold` a script leaves the others answered -BUSY;
/// SCRIPT KILL stops it (even when it keeps catching errors), unless it
/// has written; after it the server serves as before.
fn busy_and_kill(a: &mut Raw, b: &mut Raw) {
    assert_eq!(
        b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        "+OK\r\n"
    );
    let spin = "local i = 0 while true do i = i + 1 end";
    a.send_cmd(&[b"EVAL", spin.as_bytes(), b"0"]);
    wait_busy(b);
    assert_eq!(b.cmd(&["FUNCTION", "KILL"]), BUSY_EVAL);
    assert_eq!(b.cmd(&["SHUTDOWN"]), BUSY_EVAL);
    assert_eq!(b.cmd(&["GET", "k"]), BUSY_EVAL);
    assert_eq!(b.cmd(&["SCRIPT", "KILL"]), "+OK\r\n");
    assert_eq!(
        String::from_utf8_lossy(&a.reply()),
        format!(
            "-ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:1.\r\n",
            lapse::scripting::sha1_hex(spin.as_bytes())
        )
    );
    assert_eq!(b.cmd(&["PING"]), "+PONG\r\n");

    // A pcall around the loop cannot swallow the kill.
    let stubborn = "while true do pcall(function() while true do end end) end";
    a.send_cmd(&[b"EVAL", stubborn.as_bytes(), b"0"]);
    wait_busy(b);
    assert_eq!(b.cmd(&["SCRIPT", "KILL"]), "+OK\r\n");
    assert!(String::from_utf8_lossy(&a.reply()).starts_with("-ERR Script killed by user"));

    // A function is stopped by FUNCTION KILL, not SCRIPT KILL.
    let library =
        "#!lua name=spinner\nredis.register_function('spin', function() while true do end end)";
    assert_eq!(
        b.cmd(&["FUNCTION", "LOAD", "REPLACE", library]),
        "$7\r\nspinner\r\n"
    );
    a.send_cmd(&[b"FCALL", b"spin", b"0"]);
    let busy = common::eventually(Duration::from_secs(10), || {
        b.cmd(&["PING"]) == BUSY_FUNCTION
    });
    assert!(busy, "the function never showed as busy");
    assert_eq!(b.cmd(&["SCRIPT", "KILL"]), BUSY_FUNCTION);
    assert_eq!(b.cmd(&["FUNCTION", "KILL"]), "+OK\r\n");
    assert_eq!(
        String::from_utf8_lossy(&a.reply()),
        "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n"
    );

    // One that wrote runs to its end.
    let wrote = "redis.call('set', 'w', '1')
        local t0 = redis.call('TIME')
        repeat local t = redis.call('TIME') until (t[1] - t0[1]) * 1000000 + t[2] - t0[2] > 1500000
        return 7";
    a.send_cmd(&[b"EVAL", wrote.as_bytes(), b"0"]);
    wait_busy(b);
    let refused = b.cmd(&["SCRIPT", "KILL"]);
    assert!(
        refused.starts_with("-UNKILLABLE Sorry the script already executed write commands"),
        "{refused}"
    );
    assert_eq!(a.reply(), b":7\r\n");
    assert_eq!(b.cmd(&["GET", "w"]), "$1\r\n1\r\n");
    assert_eq!(
        b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "5000"]),
        "+OK\r\n"
    );
}

#[test]
fn a_busy_script_answers_others_busy_and_can_be_killed() {
    let lapse = Server::lapse(&[]);
    busy_and_kill(&mut lapse.raw(), &mut lapse.raw());
    if let Some(redis) = Server::redis() {
        busy_and_kill(&mut redis.raw(), &mut redis.raw());
    }
}

/// Scripts that never end, of every shape Lua can loop in: past the
/// threshold, clients that connect while the script runs are answered
/// -BUSY too, and SCRIPT KILL sent on a connection opened meanwhile stops
/// the script (Redis accepts and serves new clients while blocked).
const RUNAWAY_SCRIPTS: &[&str] = &[
    "while true do end",
    "while true do for i = 1, 1000000 do end end",
    "repeat local x = 1 until false",
    "while true do local s = string.rep('x', 1000) end",
    "local function f(n) if n > 60 then return 0 end return f(n + 1) + f(n + 1) end return f(0)",
    "local function f(n) return f(n + 1) end return f(1)",
    "while true do pcall(function() while true do end end) end",
    "while true do pcall(redis.call, 'ping') end",
    "while true do redis.pcall('ping') end",
    "coroutine.wrap(function() while true do end end)()",
    "local t, i = {}, 0 while true do i = i + 1 t[i] = string.rep('x', 100) .. i end",
];

/// Starts `script` (EVAL, or FCALL of a function) on a connection of its
/// own; a new connection polls until it is told -BUSY; another new one
/// kills it with `kill`. Returns the script's reply.
fn run_away_and_kill(server: &Server, call: &[&[u8]], busy: &str, kill: &[&str]) -> String {
    let mut a = server.raw();
    a.send_cmd(call);
    let told_busy = common::eventually(Duration::from_secs(20), || {
        let reply = server.raw().cmd(&["PING"]);
        assert!(reply == "+PONG\r\n" || reply == busy, "{reply}");
        reply == busy
    });
    assert!(told_busy, "{call:?} was never reported busy");
    assert_eq!(server.raw().cmd(kill), "+OK\r\n", "{call:?}");
    let reply = String::from_utf8_lossy(&a.reply()).into_owned();
    assert_eq!(server.raw().cmd(&["PING"]), "+PONG\r\n");
    reply
}

fn runaway_scripts(server: &Server) {
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        "+OK\r\n"
    );
    for script in RUNAWAY_SCRIPTS {
        let call: &[&[u8]] = &[b"EVAL", script.as_bytes(), b"0"];
        let reply = run_away_and_kill(server, call, BUSY_EVAL, &["SCRIPT", "KILL"]);
        assert_eq!(
            reply,
            format!(
                "-ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:1.\r\n",
                lapse::scripting::sha1_hex(script.as_bytes())
            ),
            "{script}"
        );
    }
    let library = "#!lua name=runaway\n\
        redis.register_function('spin', function() while true do end end)\n\
        redis.register_function('stubborn', function() \
            while true do pcall(function() while true do end end) end end)";
    assert_eq!(r.cmd(&["FUNCTION", "LOAD", library]), "$7\r\nrunaway\r\n");
    // FUNCTION STATS is answered while a function is busy (a client
    // waiting for it must not wait for the function's end).
    let mut a = server.raw();
    a.send_cmd(&[b"FCALL", b"spin", b"0"]);
    let busy = common::eventually(Duration::from_secs(20), || {
        server.raw().cmd(&["PING"]) == BUSY_FUNCTION
    });
    assert!(busy);
    let stats = server.raw().cmd(&["FUNCTION", "STATS"]);
    let expected = "*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*3\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n0\r\n$11\r\nduration_ms\r\n:";
    assert!(stats.starts_with(expected), "{stats}");
    assert!(stats.ends_with("$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:2\r\n"), "{stats}");
    assert_eq!(server.raw().cmd(&["FUNCTION", "KILL"]), "+OK\r\n");
    assert!(String::from_utf8_lossy(&a.reply()).starts_with("-ERR Script killed"));
    for (name, line) in [("spin", 2), ("stubborn", 3)] {
        let call: &[&[u8]] = &[b"FCALL", name.as_bytes(), b"0"];
        let reply = run_away_and_kill(server, call, BUSY_FUNCTION, &["FUNCTION", "KILL"]);
        assert_eq!(
            reply,
            format!("-ERR Script killed by user with SCRIPT KILL... script: {name}, on @user_function:{line}.\r\n")
        );
    }
    // A library whose loading never ends is stopped after 500 ms.
    let looping = "#!lua name=looping\nwhile true do end";
    assert_eq!(
        r.cmd(&["FUNCTION", "LOAD", looping]),
        "-ERR Error registering functions: ERR FUNCTION LOAD timeout\r\n"
    );
    assert_eq!(
        r.cmd(&["FUNCTION", "LIST", "LIBRARYNAME", "looping"]),
        "*0\r\n"
    );
}

#[test]
fn runaway_scripts_of_every_shape_are_killed_from_new_connections() {
    runaway_scripts(&Server::lapse(&[]));
    if let Some(redis) = Server::redis() {
        runaway_scripts(&redis);
    }
}

/// A script that allocates without bound meets the interpreter's limit
/// (1 GiB) and fails with Lua's message instead of growing the server;
/// the garbage it left is collected at once (lapse's own: Redis's Lua has
/// no limit).
#[test]
fn a_script_that_allocates_without_bound_fails_and_the_server_serves_on() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    assert_eq!(
        r.cmd(&["EVAL", "local s = 'x' while true do s = s .. s end", "0"]),
        "-ERR not enough memory\r\n"
    );
    let lua: u64 = common::info_field(&mut r, "memory", "used_memory_lua")
        .parse()
        .unwrap();
    assert!(lua < 256 << 20, "used_memory_lua {lua}");
    assert_eq!(r.cmd(&["EVAL", "return 1", "0"]), ":1\r\n");
}

/// Transactions while a script is busy go on as in Redis: MULTI and
/// DISCARD are served, a command refused -BUSY inside MULTI dooms the
/// transaction, and EXEC refused -BUSY discards it; nothing applies by
/// halves. Recorded against redis-server 7.0 (Redis's own unit/multi
/// "script timeout" tests, which hung lapse).
fn transactions_while_busy(server: &Server) -> Vec<String> {
    let (mut a, mut b, mut c) = (server.raw(), server.raw(), server.raw());
    let mut seen = vec![
        b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "50"]),
        b.cmd(&["SET", "xx", "1"]),
    ];
    let spin = "while true do end";
    let mut run_spinning =
        |c: &mut Raw, steps: &[&[&str]], after: &[&[&str]], seen: &mut Vec<String>| {
            a.send_cmd(&[b"EVAL", spin.as_bytes(), b"0"]);
            wait_busy(&mut b);
            for step in steps {
                seen.push(c.cmd(step));
            }
            seen.push(b.cmd(&["SCRIPT", "KILL"]));
            seen.push(
                String::from_utf8_lossy(&a.reply())
                    .chars()
                    .take(30)
                    .collect(),
            );
            for step in after {
                seen.push(c.cmd(step));
            }
        };
    // EXEC refused: the transaction from before the script is discarded.
    seen.push(c.cmd(&["MULTI"]));
    seen.push(c.cmd(&["INCR", "xx"]));
    run_spinning(
        &mut c,
        &[&["INCR", "xx"], &["EXEC"]],
        &[&["PING", "asdf"]],
        &mut seen,
    );
    // MULTI served; a refused command dooms it.
    run_spinning(
        &mut c,
        &[&["MULTI"], &["INCR", "xx"], &["MULTI"], &["WATCH", "xx"]],
        &[&["INCR", "xx"], &["EXEC"], &["PING", "asdf"]],
        &mut seen,
    );
    // DISCARD served; EXEC and DISCARD outside MULTI.
    run_spinning(
        &mut c,
        &[&["MULTI"], &["DISCARD"], &["DISCARD"], &["EXEC"]],
        &[&["MULTI"], &["INCR", "xx"], &["EXEC"]],
        &mut seen,
    );
    seen.push(c.cmd(&["GET", "xx"]));
    seen.push(b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "5000"]));
    seen
}

#[test]
fn transactions_while_a_script_is_busy_match_redis() {
    let seen = common::same_on_lapse_and_redis(transactions_while_busy);
    assert!(seen
        .iter()
        .any(|s| s.starts_with("-EXECABORT Transaction discarded because of: BUSY")));
    assert_eq!(seen[seen.len() - 2], "$1\r\n2\r\n");
}

/// Replies nested past Lua's stack limit get Redis's error instead of
/// exhausting the server's stack.
#[test]
fn a_deeply_nested_reply_is_refused() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let deep = "local t = {} local c = t for i = 1, 5000 do c[1] = {} c = c[1] end return t";
    r.send_cmd(&[b"EVAL", deep.as_bytes(), b"0"]);
    let reply = String::from_utf8_lossy(&r.reply()).into_owned();
    assert!(
        reply.ends_with("-ERR reached lua stack limit\r\n"),
        "{reply}"
    );
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
}

/// The bulk payload of a raw `$n\r\n...\r\n` reply.
fn bulk_body(reply: &[u8]) -> Vec<u8> {
    let start = reply
        .iter()
        .position(|&b| b == b'\n')
        .expect("a bulk reply")
        + 1;
    reply[start..reply.len() - 2].to_vec()
}

/// FUNCTION DUMP / RESTORE: each server restores the other's payload
/// (Redis's strings LZF-compressed), with Redis's policies and errors.
#[test]
fn function_dump_and_restore_interoperate_with_redis() {
    let lapse = Server::lapse(&[]);
    let mut l = lapse.raw();
    let library = "#!lua name=mylib\n-- long enough a line for Redis to compress it with LZF, LZF, LZF\nredis.register_function('hello', function(keys, args) return 'hello ' .. (args[1] or 'world') end)";
    assert_eq!(l.cmd(&["FUNCTION", "LOAD", library]), "$5\r\nmylib\r\n");
    l.send_cmd(&[b"FUNCTION", b"DUMP"]);
    let payload = bulk_body(&l.reply());
    let restore = |r: &mut Raw, payload: &[u8], policy: &[u8]| -> String {
        let mut args: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", payload];
        if !policy.is_empty() {
            args.push(policy);
        }
        r.send_cmd(&args);
        String::from_utf8_lossy(&r.reply()).into_owned()
    };
    let policies = |r: &mut Raw, payload: &[u8]| {
        assert_eq!(
            restore(r, payload, b""),
            "-ERR Library mylib already exists\r\n"
        );
        assert_eq!(restore(r, payload, b"REPLACE"), "+OK\r\n");
        assert_eq!(
            restore(r, payload, b"bad"),
            "-ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.\r\n"
        );
        assert_eq!(
            restore(r, b"not a payload at all", b""),
            "-ERR DUMP payload version or checksum are wrong\r\n"
        );
        assert_eq!(restore(r, payload, b"FLUSH"), "+OK\r\n");
        assert_eq!(
            r.cmd(&["FCALL", "hello", "0", "you"]),
            "$9\r\nhello you\r\n"
        );
    };
    policies(&mut l, &payload);
    assert_eq!(l.cmd(&["FUNCTION", "FLUSH"]), "+OK\r\n");
    assert_eq!(restore(&mut l, &payload, b""), "+OK\r\n");
    assert_eq!(l.cmd(&["FCALL", "hello", "0"]), "$11\r\nhello world\r\n");

    let Some(redis) = Server::redis() else {
        return;
    };
    let mut r = redis.raw();
    // Redis restores lapse's payload ...
    assert_eq!(restore(&mut r, &payload, b""), "+OK\r\n");
    policies(&mut r, &payload);
    // ... and lapse Redis's, whose strings are compressed.
    r.send_cmd(&[b"FUNCTION", b"DUMP"]);
    let from_redis = bulk_body(&r.reply());
    assert_ne!(from_redis, payload, "Redis compresses the code");
    assert_eq!(restore(&mut l, &from_redis, b"FLUSH"), "+OK\r\n");
    assert_eq!(
        l.cmd(&["FCALL", "hello", "0", "again"]),
        "$11\r\nhello again\r\n"
    );
    l.send_cmd(&[b"FUNCTION", b"LIST", b"WITHCODE"]);
    assert!(String::from_utf8_lossy(&l.reply()).contains("LZF, LZF, LZF"));
}

/// FCALL finds a function whatever the case of its name, and a library
/// cannot register a name another holds in another case.
fn function_names_ignore_case(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    let lib =
        "#!lua name=cased\nredis.register_function('hello', function() return error('oops') end)";
    let other = "#!lua name=other\nredis.register_function('HELLO', function() return 2 end)";
    vec![
        r.cmd(&["FUNCTION", "LOAD", "REPLACE", lib]),
        r.cmd(&["FCALL", "HELLO", "0"]),
        r.cmd(&["FCALL_RO", "Hello", "0"]),
        r.cmd(&["FUNCTION", "LOAD", other]),
        r.cmd(&["FUNCTION", "DELETE", "cased"]),
        r.cmd(&["FCALL", "hello", "0"]),
    ]
}

#[test]
fn functions_are_found_whatever_the_case_as_in_redis() {
    let seen = common::same_on_lapse_and_redis(function_names_ignore_case);
    assert!(seen[1].contains("oops"), "{seen:?}");
}

const PROTOCOL_TYPES: &[&str] = &[
    "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
    "verbatim", "true", "false", "nosuch",
];

/// DEBUG PROTOCOL's values to RESP2 and RESP3 clients, and through a
/// script in each protocol (`redis.setresp`) and back to each client:
/// Redis's own conversion rules (booleans follow the script's protocol,
/// attributes are dropped, verbatim strings and big numbers survive).
/// Needs DEBUG SET-DISABLE-DENY-SCRIPTS, as Redis's suite uses it.
fn protocol_conversions(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    let mut seen = vec![r.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"])];
    for client in ["2", "3"] {
        seen.push(r.cmd(&["HELLO", client]).chars().take(1).collect());
        for kind in PROTOCOL_TYPES {
            let direct = r.cmd(&["DEBUG", "PROTOCOL", kind]);
            // An attribute or push comes before the reply it goes with.
            let follows = (direct.starts_with('|') || direct.starts_with('>'))
                .then(|| String::from_utf8_lossy(&r.reply()).into_owned());
            seen.push(format!(
                "{client} {kind}: {direct}{}",
                follows.unwrap_or_default()
            ));
            // (A push inside a script: Redis 7.0 hands Lua nil and loses
            // the reply after it; lapse hands the push as an array.)
            for lua in ["2", "3"].into_iter().filter(|_| *kind != "push") {
                let script = format!(
                    "redis.setresp({lua}) return redis.call('debug', 'protocol', '{kind}')"
                );
                let reply = r.cmd(&["EVAL", &script, "0"]);
                seen.push(format!("{client}/{lua} {kind}: {reply}"));
            }
        }
        let malformed = "return {big_number='123\\r\\n123'}";
        seen.push(r.cmd(&["EVAL", malformed, "0"]));
        seen.push(r.cmd(&["EVAL", "redis.setresp(3) return false", "0"]));
        seen.push(r.cmd(&["EVAL", "return false", "0"]));
    }
    seen.push(r.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]));
    seen.push(r.cmd(&[
        "EVAL",
        "return redis.call('debug', 'protocol', 'string')",
        "0",
    ]));
    seen
}

#[test]
fn debug_protocol_values_convert_through_scripts_as_in_redis() {
    let seen = common::same_on_lapse_and_redis(protocol_conversions);
    assert!(seen.contains(&"3/3 verbatim: =29\r\ntxt:This is a verbatim\nstring\r\n".to_string()));
    assert!(seen.contains(&"2/3 false: :0\r\n".to_string()));
}

/// lua-cjson's settings and lua-cmsgpack's partial unpacking as Redis
/// ships them: each call's result (or error) on both servers.
fn cjson_settings_and_msgpack_unpacking(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    let scripts = [
        "return {cjson.encode_keep_buffer(false), cjson.encode_keep_buffer()}",
        "return cjson.encode_keep_buffer('maybe')",
        "return {cjson.encode_max_depth(1), pcall(cjson.encode, {a={1}})}",
        "return cjson.encode_max_depth(0)",
        "cjson.encode_max_depth(1000) return cjson.decode_max_depth(1)",
        "return {pcall(cjson.decode, '{\"obj\": {\"array\": [1,2,3,4]}}')}",
        "return cjson.decode_max_depth(1000)",
        "return {pcall(cjson.encode, {n=0/0})}",
        "return cjson.encode_invalid_numbers(true)",
        "return cjson.encode({n=0/0, i=1/0, m=-1/0})",
        "return {cjson.encode_invalid_numbers('null'), cjson.encode({n=0/0})}",
        "cjson.encode_invalid_numbers(false) return cjson.encode_number_precision(3)",
        "return cjson.encode({3.14159, 1234567})",
        "cjson.encode_number_precision(14) return cjson.encode_number_precision(15)",
        "return {pcall(cjson.encode, {[1]=1, [100]=2})}",
        "local a, b, c = cjson.encode_sparse_array(true) return {tostring(a), b, c}",
        "return cjson.encode({[1]=1, [100]=2})",
        "local a, b, c = cjson.encode_sparse_array(false, 2, 10) return {tostring(a), b, c}",
        "return cjson.encode_sparse_array(1, 2, 3, 4)",
        "return {cjson.decode_invalid_numbers(false), cjson.decode_invalid_numbers(true)}",
        "local s = cmsgpack.pack(1, 'two', {3}) \
         local o1, a = cmsgpack.unpack_one(s) \
         local o2, b = cmsgpack.unpack_one(s, o1) \
         local o3, c = cmsgpack.unpack_one(s, o2) \
         return {o1, a, o2, b, o3, c[1]}",
        "local s = cmsgpack.pack(1, 2, 3, 4) return {cmsgpack.unpack_limit(s, 2)}",
        "local s = cmsgpack.pack(1, 2, 3, 4) return {cmsgpack.unpack_limit(s, 2, 2)}",
        "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2), 5)}",
        "return cmsgpack.unpack_one('abc', 10)",
        "return cmsgpack.unpack_one('abc', -1)",
        "return {cmsgpack.unpack_one(cmsgpack.pack(7), 0)}",
    ];
    scripts.iter().map(|s| r.cmd(&["EVAL", s, "0"])).collect()
}

#[test]
fn cjson_settings_and_msgpack_unpacking_match_redis() {
    let seen = common::same_on_lapse_and_redis(cjson_settings_and_msgpack_unpacking);
    assert!(seen[9].contains("nan"), "{}", seen[9]);
}

/// The `redis` library's argument checks and errors, the read-only
/// globals (setmetatable, rawset and getmetatable cannot reach what a
/// script may not change; no bytecode loads), and redis.acl_check_cmd,
/// as redis-server 7.0 answers them.
const LIBRARY_EDGES: &[&str] = &[
    "redis.sha1hex()",
    "return redis.sha1hex(1,2)",
    "return redis.acl_check_cmd('invalid-cmd','arg')",
    "return redis.acl_check_cmd()",
    "return redis.acl_check_cmd('set','x',1)",
    "return loadstring(string.dump(function() return 1 end))()",
    "setmetatable(_G, nil)",
    "local g = getmetatable(_G) g.__index = {}",
    "return redis.error_reply('My Error')",
    "return redis.error_reply('')",
    "return redis.status_reply()",
    "return redis.error_reply()",
    "redis.call()",
    "return redis.call('nosuch')",
    "return redis.call('set')",
    "return redis.setresp()",
    "return redis.log()",
    "return redis.breakpoint()",
    "return redis.debug('x')",
    "return redis.set_repl(9)",
    "return redis.set_repl()",
    "return redis.log(99, 'x')",
    "return redis.log('a', 'x')",
    "return redis.setresp(4)",
    "return redis.sha1hex({})",
    "return redis.error_reply('MYERR')",
    "return redis.error_reply('-MY ERR x')",
    "return redis.error_reply(5)",
    "return redis.status_reply(5)",
    "return redis.call('ping', {})",
    "return redis.acl_check_cmd('set', {})",
    "return redis.set_repl('x')",
    "return type(getmetatable(_G))",
    "return type(getmetatable(redis))",
    "return getmetatable('x').__index == string",
    "setmetatable(redis, {})",
    "rawset(_G, 'x', 1)",
    "rawset(redis, 'x', 1)",
    "local mt = getmetatable(_G) mt.x = 1",
    "getmetatable('').__index.rep = nil",
    "local t = setmetatable({}, {}) return type(getmetatable(t))",
    "return rawset({}, 'a', 1).a",
    "return load(function() return nil end) == nil",
];

fn library_edges(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    let mut seen: Vec<String> = LIBRARY_EDGES
        .iter()
        .map(|s| r.cmd(&["EVAL", s, "0"]))
        .collect();
    let many =
        "local a = {} for i=1,7999 do a[i] = 1 end return redis.call('lpush', 'many', unpack(a))";
    seen.push(r.cmd(&["EVAL", many, "0"]));
    seen.push(r.cmd(&[
        "ACL",
        "SETUSER",
        "bob",
        "on",
        ">123",
        "+@scripting",
        "+set",
        "~x*",
    ]));
    seen.push(r.cmd(&["AUTH", "bob", "123"]));
    for script in [
        "return redis.acl_check_cmd('set','xx',1)",
        "return redis.acl_check_cmd('hset','xx','f',1)",
        "return redis.acl_check_cmd('set','yy',1)",
    ] {
        seen.push(r.cmd(&["EVAL", script, "0"]));
    }
    seen
}

#[test]
fn the_redis_library_and_read_only_globals_match_redis() {
    let seen = common::same_on_lapse_and_redis(library_edges);
    assert!(seen
        .iter()
        .any(|s| s.contains("Attempt to modify a readonly table")));
    assert!(seen.contains(&":7999\r\n".to_string()));
}

/// A library's `#!` line split as Redis splits it (quotes allowed), its
/// errors in Redis's order; then the error statistics of scripts (a
/// command's refusal or error counted once, where it happened; a script's
/// own error, or an error table it returns, counted under its code) and
/// what `allow-oom` / `no-writes` / no shebang may run over `maxmemory`,
/// and the writes a script is refused without enough replicas.
fn metadata_errorstats_and_limits(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    let mut seen = Vec::new();
    for code in [
        "#! name=test\nreturn 1",
        "#!lua name=\"foo\"\nredis.register_function('foo', function() return 1 end)",
        "#!lua name='bar'\nredis.register_function('bar', function() return 1 end)",
        "#!lua name=\"fo o\"\nreturn 1",
        "#!lua name=\"foo\nreturn 1",
        "#!lua\nreturn 1",
        "#!lua name=\nreturn 1",
        "#!lua name=a foo=bar\nreturn 1",
    ] {
        seen.push(r.cmd(&["FUNCTION", "LOAD", "REPLACE", code]));
    }
    let stats = |r: &mut Raw| {
        let errors = r.cmd(&["INFO", "errorstats"]);
        let commands = r.cmd(&["INFO", "commandstats"]);
        let mut lines: Vec<String> = errors
            .lines()
            .chain(commands.lines())
            .filter(|l| {
                l.starts_with("errorstat_")
                    || l.starts_with("cmdstat_set")
                    || l.starts_with("cmdstat_eval:")
            })
            .map(|l| {
                l.split(",usec").next().unwrap_or(l).to_string()
                    + l.split("usec_per_call=")
                        .nth(1)
                        .map_or("", |rest| rest.split_once(',').map_or("", |(_, t)| t))
            })
            .collect();
        // (commandstats' order is a hash table's in Redis.)
        lines.sort();
        lines.push(common::info_field(r, "stats", "total_error_replies"));
        lines.join(" ")
    };
    seen.push(r.cmd(&["SET", "x", "123"]));
    seen.push(r.cmd(&["CONFIG", "RESETSTAT"]));
    seen.push(r.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
    for (script, keys) in [
        ("redis.call('set','x',1) return 1", "1"),
        ("local t = redis.pcall('set','x','y') return t['err']", "1"),
        ("return redis.call('get','x')", "1"),
        ("#!lua flags=\nreturn 1", "0"),
        (
            "#!lua flags=allow-oom\nredis.call('set','x',1) return 1",
            "1",
        ),
        ("#!lua flags=no-writes\nreturn redis.call('get','x')", "0"),
        ("return redis.error_reply('MY_ERR_CODE custom msg')", "0"),
        ("return redis.error_reply('')", "0"),
        ("return nosuch()", "0"),
    ] {
        let mut args = vec!["EVAL", script, keys];
        if keys == "1" {
            args.push("x");
        }
        seen.push(r.cmd(&args));
        seen.push(stats(&mut r));
    }
    seen.push(r.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
    seen.push(r.cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"]));
    for script in [
        "#!lua flags=no-writes\nreturn redis.call('get','x')",
        "return redis.call('get','x')",
        "#!lua\nreturn redis.call('get','x')",
        "return redis.call('set','x', 1)",
    ] {
        seen.push(r.cmd(&["EVAL", script, "1", "x"]));
    }
    seen.push(r.cmd(&["CONFIG", "SET", "min-replicas-to-write", "0"]));
    seen
}

#[test]
fn function_metadata_errorstats_and_script_limits_match_redis() {
    let seen = common::same_on_lapse_and_redis(metadata_errorstats_and_limits);
    assert_eq!(seen[1], "$3\r\nfoo\r\n");
    assert!(seen
        .iter()
        .any(|s| s.contains("errorstat_MY_ERR_CODE:count=1")));
}
