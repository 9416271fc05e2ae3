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

fn replay(r: &mut Raw, who: &str) {
    assert_eq!(r.cmd(&["FLUSHALL"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SCRIPT", "FLUSH"]), "+OK\r\n");
    replay_cases(r, CASES, who);
}

#[test]
fn scripts_answer_as_redis_does() {
    let lapse = Server::lapse(&[]);
    replay(&mut lapse.raw(), "lapse");
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

/// A transaction sent while a script is busy waits for the script's end
/// and then runs whole (Redis refuses its commands -BUSY and aborts it at
/// EXEC instead: either way nothing applies by halves).
#[test]
fn a_transaction_sent_while_a_script_is_busy_runs_whole_after_it() {
    let lapse = Server::lapse(&[]);
    let (mut a, mut b) = (lapse.raw(), lapse.raw());
    assert_eq!(
        b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        "+OK\r\n"
    );
    let wait = "local t0 = redis.call('TIME')
        repeat local t = redis.call('TIME') until (t[1] - t0[1]) * 1000000 + t[2] - t0[2] > 1000000
        return 1";
    a.send_cmd(&[b"EVAL", wait.as_bytes(), b"0"]);
    wait_busy(&mut b);
    b.send(&common::encode(&[b"MULTI"]));
    b.send(&common::encode(&[b"SET", b"t", b"1"]));
    b.send(&common::encode(&[b"EXEC"]));
    assert_eq!(a.reply(), b":1\r\n");
    let mut got = Vec::new();
    while got.len() < b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n".len() {
        got.extend(b.reply());
    }
    assert_eq!(got, b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n");
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
