//! The libraries Redis gives scripts besides `redis`: `bit`, `cjson`,
//! `cmsgpack`, `struct` and its `math.random`, written here to Redis's
//! encodings (LuaBitOp, lua-cjson 2.1, lua-cmsgpack and lua_struct as
//! Redis 7.0 ships them): the same bytes out, the same
//! values and error messages back.
//!
//! Errors are raised with the `\u{1}` mark the scripting room's error
//! handler turns into `ERR user_script:<line>: <message>`, as Lua's
//! `luaL_error` from a C library would read.

use mlua::{LightUserData, Lua, LuaString, Table, Value, Variadic};

use crate::float::strtod_prefix;
use crate::protocol::reply::format_g;

/// The deepest nesting lua-cmsgpack decodes (lua-cjson's default depth).
const MSGPACK_MAX_DEPTH: usize = 1000;
/// lua-cmsgpack encodes tables nested deeper than this as nil.
const MSGPACK_MAX_NESTING: usize = 16;

fn lua_error(message: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::runtime(format!("\u{1}{message}"))
}

fn json_null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// Redis's `redisLrand48`: the 48-bit linear congruential generator of
/// POSIX `lrand48`, started where `lrand48` starts, one stream for the
/// server's life (Redis 7 no longer reseeds it per script).
#[derive(Debug)]
struct Rand48(u64);

impl Rand48 {
    const START: u64 = 0x1234_ABCD_330E;

    fn seed(&mut self, seed: i32) {
        self.0 = (u64::from(seed as u32) << 16) | 0x330E;
    }

    fn next(&mut self) -> i32 {
        self.0 = (self.0.wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB)) & ((1 << 48) - 1);
        (self.0 >> 17) as i32
    }
}

/// C's `(long long)` of a Lua number as redis-server on x86-64 computes it.
pub(crate) fn number_to_i64(n: f64) -> i64 {
    // x86-64's conversion gives the "integer indefinite" value for NaN
    // and anything out of range.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Lua's string-to-number conversion (`luaO_str2d`): `strtod`, then
/// nothing but white space.
pub(crate) fn lua_str_number(s: &[u8]) -> Option<f64> {
    let (n, used) = strtod_prefix(s)?;
    s[used..]
        .iter()
        .all(|c| c.is_ascii_whitespace())
        .then_some(n)
}

/// `luaL_checknumber` on argument `i` (0-based) of `function`: the
/// number, or Lua's message.
pub(crate) fn check_number(function: &str, args: &[Value], i: usize) -> mlua::Result<f64> {
    let got = match args.get(i) {
        Some(Value::Integer(n)) => return Ok(*n as f64),
        Some(Value::Number(n)) => return Ok(*n),
        Some(Value::String(s)) => match lua_str_number(&s.as_bytes()) {
            Some(n) => return Ok(n),
            None => "string",
        },
        Some(other) => other.type_name(),
        None => "no value",
    };
    Err(lua_error(format!(
        "bad argument #{} to '{function}' (number expected, got {got})",
        i + 1
    )))
}

/// `luaL_checkint`: a number (or numeric string) as C `int`.
fn check_int(function: &str, args: &[Value], i: usize) -> mlua::Result<i32> {
    Ok(number_to_i64(check_number(function, args, i)?) as i32)
}

/// `math.random` and `math.randomseed` as Redis replaces them: the same
/// numbers as redis-server for the same seed and calls.
pub fn install_random(lua: &Lua, math: &Table) -> mlua::Result<()> {
    let state = std::rc::Rc::new(std::cell::RefCell::new(Rand48(Rand48::START)));
    let rng = state.clone();
    math.raw_set(
        "random",
        lua.create_function(move |_, args: Variadic<Value>| {
            let r = f64::from(rng.borrow_mut().next() % i32::MAX) / f64::from(i32::MAX);
            match args.len() {
                0 => Ok(r),
                1 => {
                    let u = check_int("random", &args, 0)?;
                    if u < 1 {
                        return Err(lua_error("bad argument #1 to 'random' (interval is empty)"));
                    }
                    Ok((r * f64::from(u)).floor() + 1.0)
                }
                2 => {
                    let l = check_int("random", &args, 0)?;
                    let u = check_int("random", &args, 1)?;
                    if l > u {
                        return Err(lua_error("bad argument #2 to 'random' (interval is empty)"));
                    }
                    Ok((r * (f64::from(u) - f64::from(l) + 1.0)).floor() + f64::from(l))
                }
                _ => Err(lua_error("wrong number of arguments")),
            }
        })?,
    )?;
    math.raw_set(
        "randomseed",
        lua.create_function(move |_, args: Variadic<Value>| {
            let seed = check_int("randomseed", &args, 0)?;
            state.borrow_mut().seed(seed);
            Ok(())
        })?,
    )?;
    Ok(())
}

/// lua-cjson's settings (its `json_config_t`), changed by its
/// `encode_*` / `decode_*` functions and kept for the interpreter's life.
#[derive(Debug, Clone, Copy)]
struct JsonConfig {
    /// An excessively sparse array: refused, or encoded as an object.
    sparse_convert: bool,
    /// An array whose largest index passes both `ratio` times its item
    /// count and `safe` is excessively sparse (ratio 0: never).
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    /// Significant digits of numbers (`%.14g` by default).
    precision: i64,
    /// Only reported: the output is the same either way.
    keep_buffer: bool,
    /// NaN and infinities: refused (0), written (1) or written as null (2).
    encode_invalid: i64,
    decode_invalid: bool,
}

impl Default for JsonConfig {
    fn default() -> Self {
        JsonConfig {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            keep_buffer: true,
            encode_invalid: 0,
            decode_invalid: true,
        }
    }
}

/// lua-cjson's `json_arg_init`: no more than `most` arguments.
fn json_args(name: &str, args: &[Value], most: usize) -> mlua::Result<()> {
    if args.len() > most {
        return Err(lua_error(format!(
            "bad argument #{} to '{name}' (found too many arguments)",
            most + 1
        )));
    }
    Ok(())
}

/// lua-cjson's `json_integer_option`: argument `i` (if given) in
/// `min..=max` becomes the setting, which is returned.
fn json_integer_option(
    name: &str,
    args: &[Value],
    i: usize,
    setting: &mut i64,
    (min, max): (i64, i64),
) -> mlua::Result<Value> {
    if !matches!(args.get(i), None | Some(Value::Nil)) {
        let value = number_to_i64(check_number(name, args, i)?);
        if !(min..=max).contains(&value) {
            return Err(lua_error(format!(
                "bad argument #1 to '{name}' (expected integer between {min} and {max})"
            )));
        }
        *setting = value;
    }
    Ok(Value::Integer(*setting))
}

/// lua-cjson's `json_enum_option` for `options` (a boolean stands for
/// option 0 or `on`): argument `i` (if given) becomes the setting, which
/// is returned as a boolean when it is 0 or `on`, else by its name.
fn json_enum_option(
    lua: &Lua,
    (name, args, i): (&str, &[Value], usize),
    setting: &mut i64,
    (options, on): (&[&str], i64),
) -> mlua::Result<Value> {
    match args.get(i) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = i64::from(*b) * on,
        Some(Value::String(s)) => {
            let given = s.as_bytes();
            match options.iter().position(|o| o.as_bytes() == &given[..]) {
                Some(at) => *setting = at as i64,
                None => {
                    return Err(lua_error(format!(
                        "bad argument #{} to '{name}' (invalid option '{}')",
                        i + 1,
                        String::from_utf8_lossy(&given)
                    )))
                }
            }
        }
        Some(other) => {
            return Err(lua_error(format!(
                "bad argument #{} to '{name}' (string expected, got {})",
                i + 1,
                other.type_name()
            )))
        }
    }
    if *setting == 0 || *setting == on {
        Ok(Value::Boolean(*setting != 0))
    } else {
        let option = options.get(*setting as usize).copied().unwrap_or("");
        Ok(Value::String(lua.create_string(option)?))
    }
}

const OFF_ON: &[&str] = &["off", "on"];

/// A lua-cjson function setting one integer (its one argument optional).
fn json_int_setting(
    name: &str,
    args: &[Value],
    setting: &mut i64,
    range: (i64, i64),
) -> mlua::Result<Variadic<Value>> {
    json_args(name, args, 1)?;
    let v = json_integer_option(name, args, 0, setting, range)?;
    Ok(Variadic::from_iter([v]))
}

/// A lua-cjson function setting one on/off switch.
fn json_bool_setting(
    lua: &Lua,
    name: &str,
    args: &[Value],
    setting: &mut bool,
) -> mlua::Result<Variadic<Value>> {
    json_args(name, args, 1)?;
    let mut on = i64::from(*setting);
    let v = json_enum_option(lua, (name, args, 0), &mut on, (OFF_ON, 1))?;
    *setting = on != 0;
    Ok(Variadic::from_iter([v]))
}

/// Registers lua-cjson's configuration functions on `t`.
fn json_config_functions(
    lua: &Lua,
    t: &Table,
    config: &std::rc::Rc<std::cell::Cell<JsonConfig>>,
) -> mlua::Result<()> {
    type Setter = fn(&Lua, &[Value], &mut JsonConfig) -> mlua::Result<Variadic<Value>>;
    let setters: [(&str, Setter); 7] = [
        ("encode_sparse_array", |lua, args, c| {
            const NAME: &str = "encode_sparse_array";
            json_args(NAME, args, 3)?;
            let mut convert = i64::from(c.sparse_convert);
            let a = json_enum_option(lua, (NAME, args, 0), &mut convert, (OFF_ON, 1))?;
            c.sparse_convert = convert != 0;
            let b = json_integer_option(NAME, args, 1, &mut c.sparse_ratio, (0, i32::MAX.into()))?;
            let d = json_integer_option(NAME, args, 2, &mut c.sparse_safe, (0, i32::MAX.into()))?;
            Ok(Variadic::from_iter([a, b, d]))
        }),
        ("encode_max_depth", |_, args, c| {
            json_int_setting(
                "encode_max_depth",
                args,
                &mut c.encode_max_depth,
                (1, i32::MAX.into()),
            )
        }),
        ("decode_max_depth", |_, args, c| {
            json_int_setting(
                "decode_max_depth",
                args,
                &mut c.decode_max_depth,
                (1, i32::MAX.into()),
            )
        }),
        ("encode_number_precision", |_, args, c| {
            json_int_setting("encode_number_precision", args, &mut c.precision, (1, 14))
        }),
        ("encode_keep_buffer", |lua, args, c| {
            json_bool_setting(lua, "encode_keep_buffer", args, &mut c.keep_buffer)
        }),
        ("encode_invalid_numbers", |lua, args, c| {
            const NAME: &str = "encode_invalid_numbers";
            json_args(NAME, args, 1)?;
            let options = (&["off", "on", "null"][..], 1);
            let v = json_enum_option(lua, (NAME, args, 0), &mut c.encode_invalid, options)?;
            Ok(Variadic::from_iter([v]))
        }),
        ("decode_invalid_numbers", |lua, args, c| {
            json_bool_setting(lua, "decode_invalid_numbers", args, &mut c.decode_invalid)
        }),
    ];
    for (name, setter) in setters {
        let config = std::rc::Rc::clone(config);
        t.raw_set(
            name,
            lua.create_function(move |lua, args: Variadic<Value>| {
                let mut c = config.get();
                let result = setter(lua, &args, &mut c);
                config.set(c);
                result
            })?,
        )?;
    }
    Ok(())
}

pub fn cjson(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let config = std::rc::Rc::new(std::cell::Cell::new(JsonConfig::default()));
    json_config_functions(lua, &t, &config)?;
    let encoding = std::rc::Rc::clone(&config);
    t.raw_set(
        "encode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(lua_error(
                    "bad argument #1 to 'encode' (expected 1 argument)",
                ));
            }
            let mut out = Vec::new();
            json_encode(&args[0], &mut out, (0, &encoding.get()))?;
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let text = match args.first() {
                Some(Value::String(s)) => s.as_bytes().to_vec(),
                Some(Value::Integer(n)) => n.to_string().into_bytes(),
                Some(Value::Number(n)) => format_g(*n, 14).into_bytes(),
                other => {
                    let got = other.map_or("no value", |v| v.type_name());
                    return Err(lua_error(format!(
                        "bad argument #1 to 'decode' (string expected, got {got})"
                    )));
                }
            };
            if args.len() != 1 {
                return Err(lua_error(
                    "bad argument #1 to 'decode' (expected 1 argument)",
                ));
            }
            JsonDecoder {
                lua,
                text: &text,
                at: 0,
                max_depth: usize::try_from(config.get().decode_max_depth).unwrap_or(usize::MAX),
            }
            .document()
        })?,
    )?;
    t.raw_set("null", json_null())?;
    Ok(t)
}

/// A number as lua-cjson prints it (`%.14g`).
fn json_number(n: f64, out: &mut Vec<u8>, config: &JsonConfig) -> mlua::Result<()> {
    match config.encode_invalid {
        0 if !n.is_finite() => {
            return Err(lua_error("Cannot serialise number: must not be NaN or Inf"));
        }
        // Written as printf writes them (and NaN as "nan", whatever its sign).
        1 if n.is_nan() => {
            out.extend_from_slice(b"nan");
            return Ok(());
        }
        1 if n.is_infinite() => {
            out.extend_from_slice(if n > 0.0 { b"inf" } else { b"-inf" });
            return Ok(());
        }
        2 if !n.is_finite() => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    let digits = usize::try_from(config.precision).unwrap_or(14);
    out.extend_from_slice(format_g(n, digits).as_bytes());
    Ok(())
}

fn json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// The length of `t` as a JSON array, or `None` for an object.
fn json_array_length(t: &Table, config: &JsonConfig) -> mlua::Result<Option<usize>> {
    let (mut max, mut items) = (0usize, 0usize);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        let index = match k {
            Value::Integer(i) if i >= 1 => i as f64,
            Value::Number(n) if n >= 1.0 && n.floor() == n => n,
            _ => return Ok(None),
        };
        max = max.max(index as usize);
        items += 1;
    }
    let (ratio, safe) = (config.sparse_ratio, config.sparse_safe);
    if ratio > 0 && max as i64 > items as i64 * ratio && max as i64 > safe {
        if config.sparse_convert {
            return Ok(None);
        }
        return Err(lua_error(
            "Cannot serialise table: excessively sparse array",
        ));
    }
    Ok((max > 0).then_some(max))
}

fn json_encode(
    v: &Value,
    out: &mut Vec<u8>,
    (depth, config): (usize, &JsonConfig),
) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => json_number(*n as f64, out, config)?,
        Value::Number(n) => json_number(*n, out, config)?,
        Value::String(s) => json_string(&s.as_bytes(), out),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Table(t) => {
            if depth as i64 + 1 > config.encode_max_depth {
                return Err(lua_error(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                )));
            }
            match json_array_length(t, config)? {
                Some(len) => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        json_encode(&t.raw_get::<Value>(i)?, out, (depth + 1, config))?;
                    }
                    out.push(b']');
                }
                None => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.pairs::<Value, Value>() {
                        let (k, v) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => json_string(&s.as_bytes(), out),
                            Value::Integer(n) => {
                                json_string(format_g(*n as f64, 14).as_bytes(), out)
                            }
                            Value::Number(n) => json_string(format_g(*n, 14).as_bytes(), out),
                            other => {
                                return Err(lua_error(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    other.type_name()
                                )))
                            }
                        }
                        out.push(b':');
                        json_encode(&v, out, (depth + 1, config))?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return Err(lua_error(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )))
        }
    }
    Ok(())
}

/// lua-cjson's tokens, by the names its errors use.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(message) => message,
        }
    }
}

struct JsonDecoder<'a> {
    lua: &'a Lua,
    text: &'a [u8],
    at: usize,
    max_depth: usize,
}

impl JsonDecoder<'_> {
    fn document(&mut self) -> mlua::Result<Value> {
        let (token, index) = self.next_token();
        let value = self.value(token, index, 0)?;
        let (token, index) = self.next_token();
        if token != Token::End {
            return Err(self.expected("the end", token, index));
        }
        Ok(value)
    }

    fn expected(&self, what: &str, found: Token, index: usize) -> mlua::Error {
        lua_error(format!(
            "Expected {what} but found {} at character {}",
            found.name(),
            index + 1
        ))
    }

    /// The next token and where it starts (where it failed, for errors).
    /// A string's bytes are left in `self.string`.
    fn next_token(&mut self) -> (Token, usize) {
        while self
            .text
            .get(self.at)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
        let start = self.at;
        let Some(&c) = self.text.get(self.at) else {
            return (Token::End, start);
        };
        let single = match c {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b',' => Some(Token::Comma),
            b':' => Some(Token::Colon),
            _ => None,
        };
        if let Some(token) = single {
            self.at += 1;
            return (token, start);
        }
        if c == b'"' {
            return (Token::Str, start);
        }
        if c == b'-' || c.is_ascii_digit() {
            return match strtod_prefix(&self.text[start..]) {
                Some((n, used)) if used > 0 => {
                    self.at += used;
                    (Token::Number(n), start)
                }
                _ => (Token::Error("invalid number"), start),
            };
        }
        for (word, token) in [
            (&b"true"[..], Token::Boolean(true)),
            (b"false", Token::Boolean(false)),
            (b"null", Token::Null),
        ] {
            if self.text[start..].starts_with(word) {
                self.at += word.len();
                return (token, start);
            }
        }
        (Token::Error("invalid token"), start)
    }

    /// The string whose opening quote is at `self.at`.
    fn string(&mut self) -> Result<Vec<u8>, (Token, usize)> {
        let mut out = Vec::new();
        self.at += 1;
        loop {
            let Some(&c) = self.text.get(self.at) else {
                return Err((Token::Error("unexpected end of string"), self.at));
            };
            match c {
                b'"' => {
                    self.at += 1;
                    return Ok(out);
                }
                b'\\' => {
                    let escape_at = self.at;
                    let escaped = match self.text.get(self.at + 1) {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => {
                            let Some(ch) = self.unicode_escape() else {
                                return Err((
                                    Token::Error("invalid unicode escape code"),
                                    escape_at,
                                ));
                            };
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                            continue;
                        }
                        _ => return Err((Token::Error("invalid escape code"), escape_at)),
                    };
                    out.push(escaped);
                    self.at += 2;
                }
                c => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.text.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(text, 16).ok()
    }

    /// `\uXXXX` (with a following low surrogate when this is a high one)
    /// at `self.at`; moves past it.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4(self.at + 2)?;
        if (0xdc00..0xe000).contains(&first) {
            return None;
        }
        if (0xd800..0xdc00).contains(&first) {
            if self.text.get(self.at + 6..self.at + 8) != Some(b"\\u") {
                return None;
            }
            let second = self.hex4(self.at + 8)?;
            if !(0xdc00..0xe000).contains(&second) {
                return None;
            }
            self.at += 12;
            return char::from_u32(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00));
        }
        self.at += 6;
        char::from_u32(first)
    }

    fn value(&mut self, token: Token, index: usize, depth: usize) -> mlua::Result<Value> {
        Ok(match token {
            Token::Str => match self.string() {
                Ok(s) => Value::String(self.lua.create_string(&s)?),
                Err((token, index)) => return Err(self.expected("value", token, index)),
            },
            Token::Number(n) => Value::Number(n),
            Token::Boolean(b) => Value::Boolean(b),
            Token::Null => json_null(),
            Token::ObjBegin | Token::ArrBegin => {
                if depth + 1 > self.max_depth {
                    return Err(lua_error(format!(
                        "Found too many nested data structures ({}) at character {}",
                        depth + 1,
                        index + 1
                    )));
                }
                let t = self.lua.create_table()?;
                if token == Token::ObjBegin {
                    self.object(&t, depth + 1)?;
                } else {
                    self.array(&t, depth + 1)?;
                }
                Value::Table(t)
            }
            other => return Err(self.expected("value", other, index)),
        })
    }

    fn object(&mut self, t: &Table, depth: usize) -> mlua::Result<()> {
        let (mut token, mut index) = self.next_token();
        if token == Token::ObjEnd {
            return Ok(());
        }
        loop {
            if token != Token::Str {
                return Err(self.expected("object key string", token, index));
            }
            let key = match self.string() {
                Ok(k) => k,
                Err((token, index)) => {
                    return Err(self.expected("object key string", token, index))
                }
            };
            let (colon, at) = self.next_token();
            if colon != Token::Colon {
                return Err(self.expected("colon", colon, at));
            }
            let (vt, vi) = self.next_token();
            let value = self.value(vt, vi, depth)?;
            t.raw_set(self.lua.create_string(&key)?, value)?;
            let (next, at) = self.next_token();
            match next {
                Token::ObjEnd => return Ok(()),
                Token::Comma => (token, index) = self.next_token(),
                other => return Err(self.expected("comma or object end", other, at)),
            }
        }
    }

    fn array(&mut self, t: &Table, depth: usize) -> mlua::Result<()> {
        let (mut token, mut index) = self.next_token();
        if token == Token::ArrEnd {
            return Ok(());
        }
        for i in 1.. {
            let value = self.value(token, index, depth)?;
            t.raw_set(i, value)?;
            let (next, at) = self.next_token();
            match next {
                Token::ArrEnd => return Ok(()),
                Token::Comma => (token, index) = self.next_token(),
                other => return Err(self.expected("comma or array end", other, at)),
            }
        }
        Ok(())
    }
}

pub fn cmsgpack(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.is_empty() {
                return Err(lua_error(
                    "bad argument #0 to 'pack' (MessagePack pack needs input.)",
                ));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                msgpack_encode(v, &mut out, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, s: LuaString| msgpack_unpack(lua, &s.as_bytes(), 0, 0))?,
    )?;
    // unpack_one(data [, offset]) and unpack_limit(data, limit [, offset]):
    // the next offset (-1 at the end), then the values.
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, args: Variadic<Value>| {
            let data = msgpack_data("unpack_one", &args)?;
            let offset = optional_int("unpack_one", &args, 1)?;
            msgpack_unpack(lua, &data, 1, offset)
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(|lua, args: Variadic<Value>| {
            let data = msgpack_data("unpack_limit", &args)?;
            let limit = check_int("unpack_limit", &args, 1)?;
            let offset = optional_int("unpack_limit", &args, 2)?;
            msgpack_unpack(lua, &data, limit, offset)
        })?,
    )?;
    Ok(t)
}

/// `luaL_checklstring` on a msgpack function's first argument.
fn msgpack_data(name: &str, args: &[Value]) -> mlua::Result<Vec<u8>> {
    match args.first() {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(n)) => Ok(n.to_string().into_bytes()),
        Some(Value::Number(n)) => Ok(format_g(*n, 14).into_bytes()),
        other => Err(lua_error(format!(
            "bad argument #1 to '{name}' (string expected, got {})",
            other.map_or("no value", |v| v.type_name())
        ))),
    }
}

/// `luaL_optinteger`: argument `i`, 0 when absent.
fn optional_int(name: &str, args: &[Value], i: usize) -> mlua::Result<i32> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(0),
        Some(_) => check_int(name, args, i),
    }
}

/// lua-cmsgpack's `mp_unpack_full`: up to `limit` values from `offset`
/// (with neither, every value and no offset before them).
fn msgpack_unpack(
    lua: &Lua,
    data: &[u8],
    limit: i32,
    offset: i32,
) -> mlua::Result<Variadic<Value>> {
    let len = data.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        // (lua-cmsgpack prints the input's length as the limit.)
        return Err(lua_error(format!(
            "Invalid request to unpack with offset of {offset} and limit of {len}."
        )));
    }
    let mut at = offset as usize;
    if at > len {
        return Err(lua_error(format!(
            "Start offset {offset} greater than input length {len}."
        )));
    }
    let limit = if decode_all {
        usize::MAX
    } else {
        limit as usize
    };
    let mut values = Variadic::new();
    while at < len && values.len() < limit {
        values.push(msgpack_decode(lua, data, &mut at, 0)?);
    }
    if !decode_all {
        let next = if at == len { -1 } else { at as i64 };
        values.insert(0, Value::Integer(next));
    }
    Ok(values)
}

fn msgpack_len(out: &mut Vec<u8>, len: usize, fix: Option<(u8, usize)>, wide: [u8; 3]) {
    match fix {
        Some((tag, max)) if len < max => out.push(tag | len as u8),
        _ if wide[0] != 0 && len <= 0xff => out.extend_from_slice(&[wide[0], len as u8]),
        _ if len <= 0xffff => {
            out.push(wide[1]);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(wide[2]);
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
}

fn msgpack_integer(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        match n {
            0..=127 => out.push(n as u8),
            128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
            _ => {
                out.push(0xcf);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= i64::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn msgpack_number(n: f64, out: &mut Vec<u8>) {
    // lua-cmsgpack's IS_INT64_EQUIVALENT, with C's conversion.
    let i = number_to_i64(n);
    if n.is_finite() && i as f64 == n {
        return msgpack_integer(i, out);
    }
    let f = n as f32;
    if f64::from(f) == n {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn msgpack_encode(v: &Value, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => msgpack_integer(*n, out),
        Value::Number(n) => msgpack_number(*n, out),
        Value::String(s) => {
            let bytes = s.as_bytes();
            msgpack_len(out, bytes.len(), Some((0xa0, 32)), [0xd9, 0xda, 0xdb]);
            out.extend_from_slice(&bytes);
        }
        Value::Table(t) if depth < MSGPACK_MAX_NESTING => {
            // An array when its keys are exactly 1..n (empty included).
            let (mut count, mut max, mut array) = (0usize, 0usize, true);
            for pair in t.pairs::<Value, Value>() {
                let (k, _) = pair?;
                count += 1;
                match k {
                    Value::Integer(i) if i >= 1 => max = max.max(i as usize),
                    Value::Number(n) if n >= 1.0 && n.floor() == n => max = max.max(n as usize),
                    _ => array = false,
                }
            }
            if array && max == count {
                msgpack_len(out, count, Some((0x90, 16)), [0, 0xdc, 0xdd]);
                for i in 1..=count {
                    msgpack_encode(&t.raw_get::<Value>(i)?, out, depth + 1)?;
                }
            } else {
                msgpack_len(out, count, Some((0x80, 16)), [0, 0xde, 0xdf]);
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    msgpack_encode(&k, out, depth + 1)?;
                    msgpack_encode(&v, out, depth + 1)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

fn msgpack_decode(lua: &Lua, b: &[u8], at: &mut usize, depth: usize) -> mlua::Result<Value> {
    let missing = || lua_error("Missing bytes in input.");
    let take = |at: &mut usize, n: usize| -> mlua::Result<&[u8]> {
        let bytes = b.get(*at..*at + n).ok_or_else(missing)?;
        *at += n;
        Ok(bytes)
    };
    let uint = |bytes: &[u8]| bytes.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
    if depth > MSGPACK_MAX_DEPTH {
        return Err(lua_error("Bad data format in input."));
    }
    let tag = take(at, 1)?[0];
    let string = |at: &mut usize, len: usize| -> mlua::Result<Value> {
        let bytes = take(at, len)?;
        Ok(Value::String(lua.create_string(bytes)?))
    };
    let array = |at: &mut usize, len: usize| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        for i in 1..=len {
            t.raw_set(i, msgpack_decode(lua, b, at, depth + 1)?)?;
        }
        Ok(Value::Table(t))
    };
    let map = |at: &mut usize, len: usize| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        for _ in 0..len {
            let k = msgpack_decode(lua, b, at, depth + 1)?;
            let v = msgpack_decode(lua, b, at, depth + 1)?;
            if !matches!(k, Value::Nil) {
                t.raw_set(k, v)?;
            }
        }
        Ok(Value::Table(t))
    };
    Ok(match tag {
        0x00..=0x7f => Value::Number(f64::from(tag)),
        0x80..=0x8f => map(at, usize::from(tag & 0x0f))?,
        0x90..=0x9f => array(at, usize::from(tag & 0x0f))?,
        0xa0..=0xbf => string(at, usize::from(tag & 0x1f))?,
        0xc0 => Value::Nil,
        0xc2 => Value::Boolean(false),
        0xc3 => Value::Boolean(true),
        0xc4 | 0xd9 => {
            let n = uint(take(at, 1)?) as usize;
            string(at, n)?
        }
        0xc5 | 0xda => {
            let n = uint(take(at, 2)?) as usize;
            string(at, n)?
        }
        0xc6 | 0xdb => {
            let n = uint(take(at, 4)?) as usize;
            string(at, n)?
        }
        0xca => {
            let bytes: [u8; 4] = take(at, 4)?.try_into().map_err(|_| missing())?;
            Value::Number(f64::from(f32::from_be_bytes(bytes)))
        }
        0xcb => {
            let bytes: [u8; 8] = take(at, 8)?.try_into().map_err(|_| missing())?;
            Value::Number(f64::from_be_bytes(bytes))
        }
        0xcc => Value::Number(uint(take(at, 1)?) as f64),
        0xcd => Value::Number(uint(take(at, 2)?) as f64),
        0xce => Value::Number(uint(take(at, 4)?) as f64),
        0xcf => Value::Number(uint(take(at, 8)?) as f64),
        0xd0 => Value::Number(f64::from(take(at, 1)?[0] as i8)),
        0xd1 => Value::Number(f64::from(uint(take(at, 2)?) as u16 as i16)),
        0xd2 => Value::Number(f64::from(uint(take(at, 4)?) as u32 as i32)),
        0xd3 => Value::Number(uint(take(at, 8)?) as i64 as f64),
        0xdc => {
            let n = uint(take(at, 2)?) as usize;
            array(at, n)?
        }
        0xdd => {
            let n = uint(take(at, 4)?) as usize;
            array(at, n)?
        }
        0xde => {
            let n = uint(take(at, 2)?) as usize;
            map(at, n)?
        }
        0xdf => {
            let n = uint(take(at, 4)?) as usize;
            map(at, n)?
        }
        0xe0..=0xff => Value::Number(f64::from(tag as i8)),
        _ => return Err(lua_error("Bad data format in input.")),
    })
}

/// lua_struct's limits: the widest integer and the native alignment.
const STRUCT_MAX_INT_SIZE: usize = 32;
const STRUCT_MAX_ALIGN: usize = 8;

/// The format state: byte order and largest alignment.
struct StructHeader {
    little: bool,
    align: usize,
}

/// A number in a format (`i4`, `!8`, `c10`), or `default` when none.
fn struct_number(fmt: &[u8], at: &mut usize, default: usize) -> mlua::Result<usize> {
    if !fmt.get(*at).is_some_and(u8::is_ascii_digit) {
        return Ok(default);
    }
    let mut n: usize = 0;
    while let Some(&d) = fmt.get(*at).filter(|d| d.is_ascii_digit()) {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(usize::from(d - b'0')))
            .filter(|&n| n <= i32::MAX as usize)
            .ok_or_else(|| lua_error("integral size overflow"))?;
        *at += 1;
    }
    Ok(n)
}

/// The size of option `opt` (0 for the options that are not items).
fn struct_size(opt: u8, fmt: &[u8], at: &mut usize) -> mlua::Result<usize> {
    Ok(match opt {
        b'b' | b'B' | b'x' => 1,
        b'h' | b'H' => 2,
        b'l' | b'L' | b'T' | b'd' => 8,
        b'f' => 4,
        b'c' => struct_number(fmt, at, 1)?,
        b'i' | b'I' => {
            let size = struct_number(fmt, at, 4)?;
            if size > STRUCT_MAX_INT_SIZE {
                return Err(lua_error(format!(
                    "integral size {size} is larger than limit of {STRUCT_MAX_INT_SIZE}"
                )));
            }
            size
        }
        _ => 0,
    })
}

fn struct_padding(len: usize, h: &StructHeader, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

/// The options that change the header rather than add an item.
fn struct_control(
    function: &str,
    opt: u8,
    fmt: &[u8],
    at: &mut usize,
    h: &mut StructHeader,
) -> mlua::Result<()> {
    match opt {
        b' ' => {}
        b'>' => h.little = false,
        b'<' | b'=' => h.little = true,
        b'!' => {
            let a = struct_number(fmt, at, STRUCT_MAX_ALIGN)?;
            if !a.is_power_of_two() {
                return Err(lua_error(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
        }
        other => {
            return Err(lua_error(format!(
                "bad argument #1 to '{function}' (invalid format option '{}')",
                other as char
            )))
        }
    }
    Ok(())
}

fn struct_arg_bytes(function: &str, args: &[Value], i: usize) -> mlua::Result<Vec<u8>> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(n)) => Ok(n.to_string().into_bytes()),
        Some(Value::Number(n)) => Ok(format_g(*n, 14).into_bytes()),
        other => Err(lua_error(format!(
            "bad argument #{} to '{function}' (string expected, got {})",
            i + 1,
            other.map_or("no value", |v| v.type_name())
        ))),
    }
}

fn struct_pack(args: &[Value]) -> mlua::Result<Vec<u8>> {
    let fmt = struct_arg_bytes("pack", args, 0)?;
    let mut h = StructHeader {
        little: true,
        align: 1,
    };
    let (mut out, mut at, mut arg) = (Vec::new(), 0, 1);
    while let Some(&opt) = fmt.get(at) {
        at += 1;
        let mut size = struct_size(opt, &fmt, &mut at)?;
        let pad = struct_padding(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number("pack", args, arg)?;
                arg += 1;
                let value = if n < 0.0 {
                    number_to_i64(n) as u64
                } else {
                    n as u64
                };
                let mut bytes: Vec<u8> = (0..size)
                    .map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 })
                    .collect();
                if !h.little {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'x' => out.push(0),
            b'f' | b'd' => {
                let n = check_number("pack", args, arg)?;
                arg += 1;
                let mut bytes = if opt == b'f' {
                    (n as f32).to_le_bytes().to_vec()
                } else {
                    n.to_le_bytes().to_vec()
                };
                if !h.little {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'c' | b's' => {
                let s = struct_arg_bytes("pack", args, arg)?;
                arg += 1;
                if size == 0 || opt == b's' {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(lua_error(format!(
                        "bad argument #{} to 'pack' (string too short)",
                        arg + 1
                    )));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => struct_control("pack", opt, &fmt, &mut at, &mut h)?,
        }
    }
    Ok(out)
}

fn struct_unpack(lua: &Lua, args: &[Value]) -> mlua::Result<Variadic<Value>> {
    let fmt = struct_arg_bytes("unpack", args, 0)?;
    let data = struct_arg_bytes("unpack", args, 1)?;
    let start = match args.get(2) {
        None | Some(Value::Nil) => 1.0,
        Some(_) => check_number("unpack", args, 2)?,
    };
    if start < 1.0 {
        return Err(lua_error(
            "bad argument #3 to 'unpack' (offset must be 1 or greater)",
        ));
    }
    let mut pos = start as usize - 1;
    let mut h = StructHeader {
        little: true,
        align: 1,
    };
    let mut values = Variadic::new();
    let mut at = 0;
    let short = || lua_error("bad argument #2 to 'unpack' (data string too short)");
    while let Some(&opt) = fmt.get(at) {
        at += 1;
        let mut size = struct_size(opt, &fmt, &mut at)?;
        pos += struct_padding(pos, &h, opt, size);
        if size > data.len() || pos > data.len() - size {
            return Err(short());
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let bytes = &data[pos..pos + size];
                let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
                let mut v = if h.little {
                    bytes.iter().rev().fold(0, fold)
                } else {
                    bytes.iter().fold(0, fold)
                };
                let n = if opt.is_ascii_lowercase() {
                    let bits = (size * 8).min(64);
                    let mask = if bits == 0 { 0 } else { u64::MAX << (bits - 1) };
                    if bits > 0 && v & mask != 0 {
                        v |= mask;
                    }
                    v as i64 as f64
                } else {
                    v as f64
                };
                values.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().map_err(|_| short())?;
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                values.push(Value::Number(f64::from(f)));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().map_err(|_| short())?;
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                values.push(Value::Number(d));
            }
            b'c' => {
                if size == 0 {
                    let Some(Value::Number(n)) = values.pop() else {
                        return Err(lua_error("format 'c0' needs a previous size"));
                    };
                    size = n as usize;
                    if size > data.len() || pos > data.len() - size {
                        return Err(short());
                    }
                }
                values.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(lua_error("unfinished string in data"));
                };
                values.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                size = end + 1;
            }
            _ => struct_control("unpack", opt, &fmt, &mut at, &mut h)?,
        }
        pos += size;
    }
    values.push(Value::Number((pos + 1) as f64));
    Ok(values)
}

fn struct_fixed_size(args: &[Value]) -> mlua::Result<usize> {
    let fmt = struct_arg_bytes("size", args, 0)?;
    let mut h = StructHeader {
        little: true,
        align: 1,
    };
    let (mut pos, mut at) = (0usize, 0);
    while let Some(&opt) = fmt.get(at) {
        at += 1;
        let size = struct_size(opt, &fmt, &mut at)?;
        pos += struct_padding(pos, &h, opt, size);
        if opt == b's' {
            return Err(lua_error(
                "bad argument #1 to 'size' (option 's' has no fixed size)",
            ));
        }
        if opt == b'c' && size == 0 {
            return Err(lua_error(
                "bad argument #1 to 'size' (option 'c0' has no fixed size)",
            ));
        }
        if !opt.is_ascii_alphanumeric() {
            struct_control("size", opt, &fmt, &mut at, &mut h)?;
        }
        pos += size;
    }
    Ok(pos)
}

/// The `struct` library (Roberto Ierusalimschy's, as Redis ships it):
/// pack, unpack and size over binary formats.
pub fn struct_library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| lua.create_string(struct_pack(&args)?))?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args: Variadic<Value>| struct_unpack(lua, &args))?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|_, args: Variadic<Value>| Ok(struct_fixed_size(&args)? as f64))?,
    )?;
    Ok(t)
}

/// The `bit` library (LuaBitOp's API, as Redis ships it), in Rust so a
/// tail call keeps the script's frame for error positions. Arguments are
/// checked as `luaL_checknumber` does (numbers, and strings that convert).
pub fn bit_library(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    let arity: &[(&'static str, usize)] = &[
        ("tobit", 1),
        ("bnot", 1),
        ("bswap", 1),
        ("tohex", 1),
        ("lshift", 2),
        ("rshift", 2),
        ("arshift", 2),
        ("rol", 2),
        ("ror", 2),
        ("band", 1),
        ("bor", 1),
        ("bxor", 1),
    ];
    for &(name, required) in arity {
        let f = lua.create_function(move |lua, args: Variadic<Value>| {
            let mut numbers = Vec::with_capacity(args.len());
            for i in 0..args.len().max(required) {
                numbers.push(check_number(name, &args, i)?);
            }
            match name {
                "band" | "bor" | "bxor" => {
                    let acc = numbers[1..]
                        .iter()
                        .fold(tobit(numbers[0]), |acc, &n| bit_value(name, acc, tobit(n)));
                    Ok(Value::Number(f64::from(acc)))
                }
                "tohex" => {
                    let digits = numbers.get(1).map_or(8, |&n| tobit(n));
                    let upper = digits < 0;
                    let count = digits.unsigned_abs().min(8) as usize;
                    let x = tobit(numbers[0]) as u32;
                    let hex = if upper {
                        format!("{x:08X}")
                    } else {
                        format!("{x:08x}")
                    };
                    Ok(Value::String(lua.create_string(&hex[8 - count..])?))
                }
                _ => {
                    let b = numbers.get(1).map_or(0, |&n| tobit(n));
                    Ok(Value::Number(f64::from(bit_value(
                        name,
                        tobit(numbers[0]),
                        b,
                    ))))
                }
            }
        })?;
        bit.raw_set(name, f)?;
    }
    Ok(bit)
}

/// One 32-bit operation of the `bit` library on normalised operands.
fn bit_value(name: &str, a: i32, b: i32) -> i32 {
    let (x, y) = (a as u32, b as u32);
    let n = y & 31;
    match name {
        "bnot" => !a,
        "bswap" => x.swap_bytes() as i32,
        "lshift" => (x << n) as i32,
        "rshift" => (x >> n) as i32,
        "arshift" => a >> n,
        "rol" => x.rotate_left(n) as i32,
        "ror" => x.rotate_right(n) as i32,
        "band" => a & b,
        "bor" => a | b,
        "bxor" => a ^ b,
        _ => a,
    }
}

/// LuaBitOp's normalisation: the low 32 bits of `x + 2^52 + 2^51`, which
/// rounds to the nearest integer and wraps modulo 2^32.
fn tobit(x: f64) -> i32 {
    (x + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}
