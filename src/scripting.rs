//! Lua scripting (EVAL): the interpreter, the script cache, the `redis`
//! library scripts call, and the conversions between Lua values and RESP,
//! as Redis 7.0 does them.
//!
//! Lua 5.1, as Redis embeds it, through mlua with its vendored build (a
//! maintained binding; `scope` lets `redis.call` borrow the running
//! command's context without `'static` tricks). Commands a script calls
//! go through the same dispatcher as a client's (`commands::call`), under
//! the script's one time snapshot, and their effects reach the
//! propagation point wrapped with the rest of the script's.
//!
//! The sandbox: the script runs with a read-only view of the globals
//! (assignments fail with Redis's "Attempt to modify a readonly table",
//! unknown names with "Script attempted to access nonexistent global
//! variable"); `loadfile`, `dofile`, `os` and `io` are not there.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{
    Function, HookTriggers, Lua, LuaOptions, LuaString, MultiValue, StdLib, Table, Value, Variadic,
    VmState,
};

use crate::protocol::reply::format_double;
use crate::protocol::{OwnedArgs, Reply};

/// The chunk name Redis gives scripts (errors read `user_script:1: ...`).
const CHUNK_NAME: &str = "@user_script";

/// Builds the table an error becomes in Lua (`{err = "..."}`), with where
/// it was raised added by the error handler.
const ERROR_HANDLER: &str = r#"
local dbg = debug
return function(err)
  -- The innermost frame of the script itself: where Redis reports it.
  local i
  for level = 2, 20 do
    local info = dbg.getinfo(level, 'nSl')
    if info == nil then break end
    if info.source == '@user_script' then i = info break end
  end
  if type(err) == 'userdata' then
    -- An error raised from Rust, wrapped by the binding (which adds a
    -- prefix and a traceback): redis.call's (the command's own error
    -- reply), or a library's argument error (marked), which Lua would
    -- have prefixed with the script's position.
    local text = tostring(err):gsub('^runtime error: ', '')
    local cut = text:find('\nstack traceback:', 1, true)
    if cut then text = text:sub(1, cut - 1) end
    if text:sub(1, 1) == '\1' then
      local where = i and (i.short_src .. ':' .. i.currentline .. ': ') or ''
      text = 'ERR ' .. where .. text:sub(2)
    end
    err = {err = text}
  elseif type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
"#;

/// Makes the read-only view of the globals a script runs in.
const SANDBOX: &str = r#"
local real = ...
local function deny() error('Attempt to modify a readonly table', 2) end
-- The libraries are read-only too, so no script can change them for the
-- next one.
local libraries = {}
for name, v in pairs(real) do
  if type(v) == 'table' and name ~= '_G' then
    local proxy = {}
    setmetatable(proxy, {__index = v, __newindex = deny, __metatable = false})
    libraries[name] = proxy
  end
end
local view = {}
setmetatable(view, {
  __index = function(_, name)
    if name == '_G' then return view end
    local lib = libraries[name]
    if lib ~= nil then return lib end
    local v = rawget(real, name)
    if v == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end
    return v
  end,
  __newindex = deny,
  __metatable = false,
})
return view
"#;

/// The most memory the interpreter may hold: a script cannot grow the
/// server without bound (it gets Lua's "not enough memory" error).
const LUA_MEMORY_LIMIT_BYTES: usize = 1 << 30;
/// How often (in VM instructions) a running script's clock is checked.
const HOOK_EVERY_INSTRUCTIONS: u32 = 100_000;
/// Deepest nesting of a script's reply (Redis: "reached lua stack limit").
const MAX_REPLY_DEPTH: usize = 1_000;

/// What the instruction hook reads while a script runs.
#[derive(Debug, Default)]
struct Guard {
    started: Cell<Option<Instant>>,
    /// `busy-reply-threshold`; zero: no limit.
    limit: Cell<Duration>,
    /// The script has run a write command (then it is never stopped, as
    /// Redis never kills a script that wrote).
    wrote: Cell<bool>,
}

/// The interpreter and the scripts it has compiled.
pub struct Scripting {
    lua: Lua,
    /// Compiled script functions by SHA-1 (hex), with their source size.
    scripts: HashMap<String, (Function, usize)>,
    error_handler: Function,
    sandbox: Table,
    guard: Rc<Guard>,
}

impl std::fmt::Debug for Scripting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scripting({} scripts)", self.scripts.len())
    }
}

/// What a script's call of a Redis command needs from the server: run it
/// and lend the raw reply (RESP2, or RESP3 after `redis.setresp(3)`), or
/// refuse it with Redis's message.
pub trait CommandRunner {
    fn run(&mut self, args: &OwnedArgs, resp3: bool) -> Result<&[u8], &'static str>;
    /// Whether any command run so far changed data.
    fn has_written(&self) -> bool;
}

impl Scripting {
    pub fn new() -> mlua::Result<Scripting> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
        // SAFETY: `debug` is loaded only for the error handler to read line
        // numbers (as Redis's handler does); it is removed from the globals
        // before any script can see it. No C module loader is enabled.
        let lua = unsafe { Lua::unsafe_new_with(libs, LuaOptions::default()) };
        let globals = lua.globals();
        for name in [
            "loadfile", "dofile", "os", "io", "require", "module", "package",
        ] {
            globals.raw_set(name, Value::Nil)?;
        }
        let redis = lua.create_table()?;
        install_library(&lua, &redis)?;
        globals.raw_set("redis", redis)?;
        globals.raw_set("bit", bit_library(&lua)?)?;
        let error_handler: Function = lua.load(ERROR_HANDLER).set_name("=handler").eval()?;
        // `debug` is for the error handler only, as in Redis's sandbox.
        globals.raw_set("debug", Value::Nil)?;
        let sandbox: Table = lua.load(SANDBOX).set_name("=sandbox").call(globals)?;
        lua.set_memory_limit(LUA_MEMORY_LIMIT_BYTES)?;
        // lapse cannot yet serve other clients while a script runs (Redis
        // answers them -BUSY and takes SCRIPT KILL), so a script past
        // `busy-reply-threshold` that has written nothing is stopped
        // rather than left to hold the server forever.
        let guard = Rc::new(Guard::default());
        let watch = guard.clone();
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY_INSTRUCTIONS),
            move |_, _| {
                let limit = watch.limit.get();
                let over = watch
                    .started
                    .get()
                    .is_some_and(|t| !limit.is_zero() && t.elapsed() > limit);
                if over && !watch.wrote.get() {
                    return Err(mlua::Error::runtime(format!(
                        "ERR Script ran longer than busy-reply-threshold ({} ms) without writing and was stopped",
                        limit.as_millis()
                    )));
                }
                Ok(VmState::Continue)
            },
        )?;
        Ok(Scripting {
            lua,
            scripts: HashMap::new(),
            error_handler,
            sandbox,
            guard,
        })
    }

    /// Compiles `body` if new and returns its SHA-1 (SCRIPT LOAD).
    pub fn load(&mut self, body: &[u8]) -> Result<String, String> {
        let sha = sha1_hex(body);
        if !self.scripts.contains_key(&sha) {
            let function = self
                .lua
                .load(body)
                .set_name(CHUNK_NAME)
                .into_function()
                .map_err(|e| {
                    format!(
                        "ERR Error compiling script (new function): {}",
                        compile_message(&e)
                    )
                })?;
            let env = self.sandbox.clone();
            let setfenv: Function = self
                .lua
                .globals()
                .raw_get("setfenv")
                .map_err(|e| e.to_string())?;
            setfenv
                .call::<()>((function.clone(), env))
                .map_err(|e| e.to_string())?;
            self.scripts.insert(sha.clone(), (function, body.len()));
        }
        Ok(sha)
    }

    /// `busy-reply-threshold` in ms (0: never stop a script).
    pub fn set_time_limit_ms(&self, ms: u64) {
        self.guard.limit.set(Duration::from_millis(ms));
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        std::str::from_utf8(sha).is_ok_and(|s| self.scripts.contains_key(&s.to_ascii_lowercase()))
    }

    pub fn flush(&mut self) {
        self.scripts.clear();
        self.lua.gc_collect().ok();
    }

    /// (scripts cached, bytes of their sources) for INFO.
    pub fn cache_stats(&self) -> (usize, usize) {
        (
            self.scripts.len(),
            self.scripts.values().map(|(_, n)| n).sum(),
        )
    }

    /// Runs the cached script `sha` with `keys` and `argv`, writing its
    /// result (or error) into `out`. `runner` executes the commands it
    /// calls. `false` if no script has that SHA.
    pub fn run(
        &mut self,
        sha: &str,
        keys: &[&[u8]],
        argv: &[&[u8]],
        runner: &mut dyn CommandRunner,
        out: &mut Reply,
    ) -> bool {
        let Some((function, _)) = self.scripts.get(sha).cloned() else {
            return false;
        };
        self.guard.started.set(Some(Instant::now()));
        self.guard.wrote.set(false);
        let outcome = self.call(&function, keys, argv, runner);
        self.guard.started.set(None);
        match outcome {
            Ok(Ok(value)) => lua_to_reply(&value, out),
            Ok(Err(failure)) => out.error(failure.reply(sha).as_bytes()),
            Err(err) => out.error(format!("ERR Error running script {sha}, {err}").as_bytes()),
        }
        true
    }

    fn call(
        &self,
        function: &Function,
        keys: &[&[u8]],
        argv: &[&[u8]],
        runner: &mut dyn CommandRunner,
    ) -> mlua::Result<Result<Value, Failure>> {
        let lua = &self.lua;
        let globals = lua.globals();
        globals.raw_set(
            "KEYS",
            lua.create_sequence_from(
                keys.iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?,
        )?;
        globals.raw_set(
            "ARGV",
            lua.create_sequence_from(
                argv.iter()
                    .map(|a| lua.create_string(a))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?,
        )?;
        let state = RefCell::new(RunState {
            runner,
            resp3: false,
            args: OwnedArgs::default(),
            guard: &self.guard,
        });
        let redis: Table = globals.raw_get("redis")?;
        lua.scope(|scope| {
            // Functions of C, as in Redis: a tail call `return
            // redis.call(...)` keeps the script's frame, so errors name
            // its line.
            let call = scope.create_function(|lua, args: Variadic<Value>| {
                match run_command(lua, &state, args)? {
                    Value::Table(t) if t.contains_key("err")? => {
                        let msg: LuaString = t.raw_get("err")?;
                        Err(mlua::Error::runtime(msg.to_string_lossy()))
                    }
                    value => Ok(value),
                }
            })?;
            let pcall = scope
                .create_function(|lua, args: Variadic<Value>| run_command(lua, &state, args))?;
            let setresp = scope.create_function(|_, version: Value| {
                let v = match version {
                    Value::Number(n) => n as i64,
                    Value::Integer(n) => n,
                    _ => 0,
                };
                if v != 2 && v != 3 {
                    return Err(mlua::Error::runtime("RESP version must be 2 or 3."));
                }
                state.borrow_mut().resp3 = v == 3;
                Ok(())
            })?;
            redis.raw_set("call", call)?;
            redis.raw_set("pcall", pcall)?;
            redis.raw_set("setresp", setresp)?;
            let xpcall: Function = globals.raw_get("xpcall")?;
            let outcome: mlua::Result<(bool, Value)> =
                xpcall.call((function.clone(), self.error_handler.clone()));
            for name in ["call", "pcall", "setresp"] {
                redis.raw_set(name, Value::Nil)?;
            }
            match outcome? {
                (true, value) => Ok(Ok(value)),
                (false, err) => Ok(Err(script_failure(&err))),
            }
        })
    }
}

/// A script that failed: Redis's message and where it was raised.
#[derive(Debug)]
pub struct Failure {
    message: String,
    at: Option<(String, i64)>,
}

impl Failure {
    /// The error reply: `<message> script: <sha>, on @user_script:<line>.`
    fn reply(&self, sha: &str) -> String {
        match &self.at {
            Some((source, line)) => {
                format!("{} script: {sha}, on {source}:{line}.", self.message)
            }
            None => self.message.clone(),
        }
    }
}

/// The error table the handler built (`{err=..., source=..., line=...}`).
fn script_failure(value: &Value) -> Failure {
    let Value::Table(t) = value else {
        return Failure {
            message: "ERR execution failure".into(),
            at: None,
        };
    };
    let message = t
        .raw_get::<LuaString>("err")
        .map(|s| String::from_utf8_lossy(&s.as_bytes()).into_owned())
        .unwrap_or_else(|_| "ERR execution failure".into());
    let source: Option<String> = t.raw_get::<Option<String>>("source").ok().flatten();
    let line = t.raw_get::<Option<f64>>("line").ok().flatten();
    Failure {
        message,
        at: source.zip(line.map(|l| l as i64)),
    }
}

/// What `redis.call` needs while a script runs.
struct RunState<'a> {
    runner: &'a mut dyn CommandRunner,
    /// `redis.setresp(3)` was called: replies come back as RESP3.
    resp3: bool,
    /// The arguments of the call being made (buffers reused call to call).
    args: OwnedArgs,
    guard: &'a Guard,
}

/// What `redis.call` and `redis.pcall` share: runs a command
/// and converts its reply; an error (the command's, or about the call
/// itself) comes back as an `{err = ...}` table.
fn run_command(
    lua: &Lua,
    state: &RefCell<RunState<'_>>,
    args: Variadic<Value>,
) -> mlua::Result<Value> {
    let fail = |msg: &str| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set("err", lua.create_string(msg)?)?;
        Ok(Value::Table(t))
    };
    if args.is_empty() {
        return fail("ERR Please specify at least one argument for this redis lib call");
    }
    let mut st = state.borrow_mut();
    let st = &mut *st;
    st.args.clear();
    for arg in args.iter() {
        match arg {
            Value::String(s) => st.args.push(&s.as_bytes()),
            // A number argument reaches the command as Redis prints it: %.17g.
            Value::Number(n) => st.args.push(format_double(*n).as_bytes()),
            Value::Integer(n) => st.args.push(n.to_string().as_bytes()),
            _ => return fail("ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    let converted = match st.runner.run(&st.args, st.resp3) {
        Ok(reply) => Ok(resp_to_lua(lua, reply)?.0),
        Err(msg) => Err(msg),
    };
    if st.runner.has_written() {
        st.guard.wrote.set(true);
    }
    match converted {
        Ok(value) => Ok(value),
        Err(msg) => fail(msg),
    }
}

fn compile_message(err: &mlua::Error) -> String {
    match err {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The `bit` library (LuaBitOp's API, as Redis ships it), in Rust so a
/// tail call keeps the script's frame for error positions. Arguments are
/// checked as `luaL_checknumber` does (numbers, and strings that convert).
fn bit_library(lua: &Lua) -> mlua::Result<Table> {
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
                numbers.push(check_number(name, i, args.get(i))?);
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

/// `luaL_checknumber`: the number, or Lua's message (marked for the error
/// handler to add the script's position).
fn check_number(function: &str, i: usize, v: Option<&Value>) -> mlua::Result<f64> {
    let got = match v {
        None => "no value",
        Some(Value::Number(n)) => return Ok(*n),
        Some(Value::Integer(n)) => return Ok(*n as f64),
        Some(Value::String(s)) => {
            if let Some(n) = s.to_str().ok().and_then(|t| t.trim().parse::<f64>().ok()) {
                return Ok(n);
            }
            "string"
        }
        Some(other) => other.type_name(),
    };
    Err(mlua::Error::runtime(format!(
        "\u{1}bad argument #{} to '{function}' (number expected, got {got})",
        i + 1
    )))
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

/// The SHA-1 of a script, lower-case hex (Redis's script names).
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// The `redis` library parts that need no command context.
fn install_library(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, msg: LuaString| {
            let t = lua.create_table()?;
            let text = msg.to_str()?.to_string();
            let text = text.strip_prefix('-').unwrap_or(&text);
            t.raw_set("err", text)?;
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, msg: LuaString| {
            let t = lua.create_table()?;
            t.raw_set("ok", msg)?;
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, s: LuaString| Ok(sha1_hex(&s.as_bytes())))?,
    )?;
    redis.raw_set("log", lua.create_function(|_, _args: MultiValue| Ok(()))?)?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, level)?;
    }
    for (name, value) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    // Effects replication is the only mode in Redis 7: these change nothing.
    redis.raw_set(
        "set_repl",
        lua.create_function(|_, _args: MultiValue| Ok(()))?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    redis.raw_set("debug", lua.create_function(|_, _args: MultiValue| Ok(()))?)?;
    redis.raw_set("REDIS_VERSION", crate::info::REDIS_COMPAT_VERSION)?;
    redis.raw_set(
        "REDIS_VERSION_NUM",
        version_num(crate::info::REDIS_COMPAT_VERSION),
    )?;
    Ok(())
}

/// `7.0.15` as 0x00070f.
fn version_num(v: &str) -> i64 {
    let mut parts = v.split('.').map(|p| p.parse::<i64>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// One RESP reply as a Lua value (Redis's RESP to Lua conversion) and the
/// bytes it took.
fn resp_to_lua(lua: &Lua, buf: &[u8]) -> mlua::Result<(Value, usize)> {
    let bad = || mlua::Error::external("bad reply from command");
    let end = buf.windows(2).position(|w| w == b"\r\n").ok_or_else(bad)?;
    let line = &buf[1..end];
    let text = std::str::from_utf8(line).map_err(|_| bad())?;
    let after = end + 2;
    let table = |key: &str, v: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(key, v)?;
        Ok(Value::Table(t))
    };
    Ok(match buf.first() {
        Some(b'+') => (table("ok", Value::String(lua.create_string(line)?))?, after),
        Some(b'-') => (
            table("err", Value::String(lua.create_string(line)?))?,
            after,
        ),
        Some(b':') => (
            Value::Number(text.parse::<i64>().map_err(|_| bad())? as f64),
            after,
        ),
        Some(b'$') | Some(b'=') => {
            let n: i64 = text.parse().map_err(|_| bad())?;
            if n < 0 {
                return Ok((Value::Boolean(false), after));
            }
            let body = buf.get(after..after + n as usize).ok_or_else(bad)?;
            let value = if buf[0] == b'=' {
                let t = lua.create_table()?;
                t.raw_set("format", lua.create_string(&body[..3.min(body.len())])?)?;
                t.raw_set(
                    "string",
                    lua.create_string(body.get(4..).unwrap_or_default())?,
                )?;
                let outer = lua.create_table()?;
                outer.raw_set("verbatim_string", t)?;
                Value::Table(outer)
            } else {
                Value::String(lua.create_string(body)?)
            };
            (value, after + n as usize + 2)
        }
        Some(b'*') | Some(b'~') | Some(b'>') => {
            let n: i64 = text.parse().map_err(|_| bad())?;
            if n < 0 {
                return Ok((Value::Boolean(false), after));
            }
            let items = lua.create_table()?;
            let mut at = after;
            for i in 1..=n {
                let (v, used) = resp_to_lua(lua, &buf[at..])?;
                at += used;
                if buf[0] == b'~' {
                    items.raw_set(v, true)?;
                } else {
                    items.raw_set(i, v)?;
                }
            }
            let value = if buf[0] == b'~' {
                table("set", Value::Table(items))?
            } else {
                Value::Table(items)
            };
            (value, at)
        }
        Some(b'%') => {
            let n: i64 = text.parse().map_err(|_| bad())?;
            let map = lua.create_table()?;
            let mut at = after;
            for _ in 0..n {
                let (k, used) = resp_to_lua(lua, &buf[at..])?;
                at += used;
                let (v, used) = resp_to_lua(lua, &buf[at..])?;
                at += used;
                map.raw_set(k, v)?;
            }
            (table("map", Value::Table(map))?, at)
        }
        Some(b'_') => (Value::Nil, after),
        Some(b'#') => (Value::Boolean(line == b"t"), after),
        Some(b',') => (
            table("double", Value::Number(text.parse().unwrap_or(0.0)))?,
            after,
        ),
        Some(b'(') => (
            table("big_number", Value::String(lua.create_string(line)?))?,
            after,
        ),
        _ => return Err(bad()),
    })
}

/// A script's result as the reply to its caller (Redis's Lua to RESP
/// conversion, in the caller's protocol).
fn lua_to_reply(value: &Value, out: &mut Reply) {
    lua_to_reply_nested(value, out, 0);
}

fn lua_to_reply_nested(value: &Value, out: &mut Reply, depth: usize) {
    if depth > MAX_REPLY_DEPTH {
        out.error(b"ERR reached lua stack limit");
        return;
    }
    match value {
        Value::Nil => out.null(),
        Value::Boolean(true) => out.bool(true),
        Value::Boolean(false) if out.resp3 => out.bool(false),
        Value::Boolean(false) => out.null(),
        Value::Integer(n) => out.int(*n),
        Value::Number(n) => out.int(number_to_i64(*n)),
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Table(t) => table_to_reply(t, out, depth),
        _ => out.null(),
    }
}

/// C's `(long long)` of a Lua number, saturating where C is undefined.
fn number_to_i64(n: f64) -> i64 {
    if n.is_nan() {
        0
    } else {
        n as i64
    }
}

fn table_to_reply(t: &Table, out: &mut Reply, depth: usize) {
    let field = |name: &str| t.raw_get::<Value>(name).unwrap_or(Value::Nil);
    if let Value::String(err) = field("err") {
        out.error(&err.as_bytes());
        return;
    }
    if let Value::String(ok) = field("ok") {
        out.buf.push(b'+');
        out.buf.extend(
            ok.as_bytes()
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        out.buf.extend_from_slice(b"\r\n");
        return;
    }
    if let Value::Number(d) = field("double") {
        out.double(d);
        return;
    }
    if let Value::Table(map) = field("map") {
        let pairs: Vec<(Value, Value)> =
            map.pairs::<Value, Value>().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in pairs {
            lua_to_reply_nested(&k, out, depth + 1);
            lua_to_reply_nested(&v, out, depth + 1);
        }
        return;
    }
    if let Value::Table(set) = field("set") {
        let members: Vec<Value> = set
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| k)
            .collect();
        out.set(members.len());
        for m in members {
            lua_to_reply_nested(&m, out, depth + 1);
        }
        return;
    }
    if let Value::String(big) = field("big_number") {
        if out.resp3 {
            out.buf.push(b'(');
            out.buf.extend_from_slice(&big.as_bytes());
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(&big.as_bytes());
        }
        return;
    }
    // An array: elements 1..n up to the first nil.
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    out.array(items.len());
    for v in &items {
        lua_to_reply_nested(v, out, depth + 1);
    }
}
