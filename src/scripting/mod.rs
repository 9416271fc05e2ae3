//! Lua scripting (EVAL): the interpreter, the script cache, the `redis`
//! library scripts call, and the conversions between Lua values and RESP,
//! as Redis 7.0 does them.
//!
//! Lua 5.1, as Redis embeds it, through mlua with its vendored build (a
//! maintained binding). Commands a script calls go through the same
//! dispatcher as a client's (`commands::call`), under the script's one
//! time snapshot, and their effects reach the propagation point wrapped
//! with the rest of the script's.
//!
//! `redis.call` and the rest are made once, with the interpreter: they
//! reach the command context of the script running now through
//! [`Current`], which holds it only while [`Scripting::run`] runs. (Made
//! per script, as scoped functions, they cost more than the script.)
//!
//! The sandbox: the script runs with a read-only view of the globals
//! (assignments fail with Redis's "Attempt to modify a readonly table",
//! unknown names with "Script attempted to access nonexistent global
//! variable"); `loadfile`, `dofile`, `os`, `io`, `newproxy`, `getfenv`,
//! `setfenv` and `print` are not there.

mod call;
mod convert;
pub mod libs;

use std::any::Any;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::ptr::NonNull;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{
    Function, HookTriggers, Lua, LuaOptions, LuaString, MultiValue, StdLib, Table, Value, Variadic,
    VmState,
};

use crate::protocol::reply::format_double;
use crate::protocol::{OwnedArgs, Reply};

use convert::{error_reply_text, lua_to_number, lua_to_reply};

/// The chunk name Redis gives scripts (errors read `user_script:1: ...`).
const CHUNK_NAME: &str = "@user_script";

/// Builds the table an error becomes in Lua (`{err = "..."}`), with where
/// it was raised added by the error handler.
const ERROR_HANDLER: &str = r#"
local dbg, raw_pcall = debug, pcall
-- An error raised from Rust, wrapped by the binding (which adds a prefix
-- and a traceback): redis.call's (the command's own error reply), or a
-- library's argument error (marked), which Lua would have prefixed with
-- the script's position. Its text, and whether it was marked.
local function rust_error(err)
  local text = tostring(err):gsub('^runtime error: ', '')
  local cut = text:find('\nstack traceback:', 1, true)
  if cut then text = text:sub(1, cut - 1) end
  if text:sub(1, 1) == '\1' then return text:sub(2), true end
  return text, false
end
local function handler(err)
  -- The innermost frame of the script itself: where Redis reports it.
  local i
  for level = 2, 20 do
    local info = dbg.getinfo(level, 'nSl')
    if info == nil then break end
    if info.source == '@user_script' or info.source == '@user_function' then i = info break end
  end
  if type(err) == 'userdata' then
    local text, marked = rust_error(err)
    if marked then
      local where = i and (i.short_src .. ':' .. i.currentline .. ': ') or ''
      text = 'ERR ' .. where .. text
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
-- pcall as scripts see it: an error from Rust comes back as its text, as
-- Redis 7.0's C functions raise strings.
local function caught(ok, ...)
  if ok then return ok, ... end
  local err = ...
  if type(err) == 'userdata' then
    err = rust_error(err)
  elseif type(err) == 'table' and (type(err.err) == 'string' or type(err.err) == 'number') then
    -- As Redis 7.0's pcall: an error table (redis.call's) gives its text.
    err = err.err
  end
  return false, err
end
local function script_pcall(f, ...) return caught(raw_pcall(f, ...)) end
return handler, script_pcall
"#;

/// Starts a script: sets KEYS and ARGV (EVAL) or passes them as the
/// function's two arguments (FCALL), and runs it under the error handler.
/// One call from Rust per script: every call into Lua from Rust costs.
const LAUNCHER: &str = r#"
local G, xpcall, handler = ...
return function(f, as_globals, keys, argv)
  if as_globals then
    if keys then
      rawset(G, 'KEYS', keys)
      rawset(G, 'ARGV', argv)
    end
    return xpcall(f, handler)
  end
  return xpcall(function() return f(keys, argv) end, handler)
end
"#;

/// Makes the read-only view of the globals a script runs in. Lookups go
/// through tables only (view -> libraries -> globals), so a script's
/// `redis.call` or `KEYS[1]` costs no function call; only a name found
/// nowhere reaches the function that raises Redis's error.
const SANDBOX: &str = r#"
local real, load_redis = ...
local raw_setmetatable, raw_getmetatable, raw_rawset = setmetatable, getmetatable, rawset
local raw_loadstring, raw_load = loadstring, load
-- Every table a script may not change (as Redis's read-only tables):
-- setmetatable and rawset refuse them, getmetatable hides their proxies.
local protected = raw_setmetatable({}, {__mode = 'k'})
local function deny() error('Attempt to modify a readonly table', 2) end
local function missing(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end
local function read_only(t)
  local proxy = raw_setmetatable({}, {__index = t, __newindex = deny, __metatable = false})
  protected[proxy] = true
  return proxy
end
-- The libraries are read-only too, so no script can change them for the
-- next one.
local front = {}
for name, v in pairs(real) do
  if type(v) == 'table' and name ~= '_G' then front[name] = read_only(v) end
end
raw_setmetatable(real, {__index = missing, __metatable = false})
raw_setmetatable(front, {__index = real})
local view = {}
front['_G'] = view
raw_setmetatable(view, {__index = front, __newindex = deny, __metatable = false})
protected[view] = true
-- Library functions see the same globals when called; while their
-- library loads, only `redis` with the loading API.
raw_setmetatable(load_redis, {__index = missing, __metatable = false})
local load_front = raw_setmetatable({redis = read_only(load_redis)}, {__index = missing})
local function_meta = {__index = front, __newindex = deny, __metatable = false}
local function_view = raw_setmetatable({}, function_meta)
protected[function_view] = true
-- What getmetatable shows: the globals' and strings' metatables, read-only.
local globals_meta = read_only({__index = read_only(front)})
local string_meta = read_only({__index = front['string']})
local function refuse() error('Attempt to modify a readonly table', 0) end
real.setmetatable = function(t, mt)
  if protected[t] then refuse() end
  return raw_setmetatable(t, mt)
end
real.rawset = function(t, k, v)
  if protected[t] then refuse() end
  return raw_rawset(t, k, v)
end
real.getmetatable = function(v)
  if v == view or v == function_view then return globals_meta end
  if type(v) == 'string' then return string_meta end
  if protected[v] then return nil end
  return raw_getmetatable(v)
end
-- Lua source only, as Redis's Lua parses every chunk as text: precompiled
-- bytecode is not verified by Lua 5.1 and could break out of the VM.
real.loadstring = function(text, name)
  if type(text) == 'string' and text:byte(1) == 27 then
    return nil, "[string \"?\"]:1: unexpected symbol near '<\\27>'"
  end
  return raw_loadstring(text, name)
end
real.load = function(reader, name)
  if type(reader) ~= 'function' then return raw_load(reader, name) end
  local parts = {}
  while true do
    local part = reader()
    if part == nil or part == '' then break end
    if type(part) ~= 'string' then return nil, 'reader function must return a string' end
    parts[#parts + 1] = part
  end
  return real.loadstring(table.concat(parts), name or '=(load)')
end
return view, function_view, function_meta, front, load_front
"#;

/// The most memory the interpreter may hold while a script runs: a script
/// cannot grow the server without bound (it gets Lua's "not enough
/// memory" error). Armed only around the script itself: with a limit set,
/// every call into Lua from Rust must be protected, which costs more than
/// a short script.
const LUA_MEMORY_LIMIT_BYTES: usize = 1 << 30;

/// How often (in VM instructions) a running script's clock is checked.
/// Redis checks every 100,000; lapse every 10,000, so that a loop of a few
/// instructions around a costly library call (`string.rep` of 100 KB: a
/// third of a millisecond) is still seen within a second (Redis: ten).
/// A hook call costs ~470 machine instructions (mlua's trampoline): 0.1%
/// of a loop of pure Lua at this count, 1% at 1,000 (callgrind).
const HOOK_EVERY_INSTRUCTIONS: u32 = 10_000;

/// Scripts between two steps of the garbage collector (Redis's
/// `LUA_GC_CYCLE_PERIOD`; each step is of this many kilobytes).
const GC_CYCLE_PERIOD: u32 = 50;

/// What a killed script raises (on every line from then on, so `pcall`
/// cannot swallow it).
const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// What a script's call of a Redis command needs from the server.
pub trait CommandRunner {
    /// Runs the command and lends its raw reply (RESP2, or RESP3 after
    /// `redis.setresp(3)`), or refuses it with Redis's message.
    fn run(&mut self, args: &OwnedArgs, resp3: bool) -> Result<&[u8], Cow<'static, str>>;
    /// Whether any command run so far changed data.
    fn has_written(&self) -> bool;
    /// Whether the script's user may run this command with these
    /// arguments (`redis.acl_check_cmd`); `None` if there is no such
    /// command.
    fn acl_allows(&mut self, args: &OwnedArgs) -> Option<bool>;
    /// Called from time to time once the script has run past
    /// `busy-reply-threshold`: serve the other clients what may be
    /// served meanwhile (-BUSY, SCRIPT KILL). `true`: stop the script.
    fn while_busy(&mut self, script: &RunningScript) -> bool;
}

/// What the clients served while a script is busy may learn of it.
#[derive(Debug, Clone, Copy)]
pub struct RunningScript {
    /// EVAL (killed by SCRIPT KILL) rather than FCALL (FUNCTION KILL).
    pub eval: bool,
    /// It has written: it cannot be killed.
    pub wrote: bool,
    /// How long it has run (FUNCTION STATS).
    pub duration_ms: u64,
}

/// The script running now, as `redis.call` and the instruction hook see
/// it.
#[derive(Default)]
struct Current {
    /// The running script's command context, set only inside
    /// [`Scripting::run`] (its lifetime erased: see [`Current::with_runner`]).
    runner: Cell<Option<NonNull<dyn CommandRunner>>>,
    /// The runner is lent out right now (never twice at once).
    lent: Cell<bool>,
    /// `redis.setresp(3)` was called: replies come back as RESP3.
    resp3: Cell<bool>,
    /// The arguments of the call being made (buffers reused call to call).
    args: RefCell<OwnedArgs>,
    /// When the running script started, in `clock::ticks`.
    started: Cell<Option<u64>>,
    /// Scripts run since the collector last took a step.
    runs_since_gc: Cell<u32>,
    /// `busy-reply-threshold` in `clock::ticks`; zero: never busy.
    limit_ticks: Cell<u64>,
    eval: Cell<bool>,
    /// The script has run a write command (then it cannot be killed).
    wrote: Cell<bool>,
    /// Past the threshold: other clients are being told -BUSY.
    timed_out: Cell<bool>,
    killed: Cell<bool>,
    /// While FUNCTION LOAD runs a library: what it registered so far.
    registered: RefCell<Option<Vec<LibraryFunction>>>,
    /// While FUNCTION LOAD runs a library: when it must have finished.
    load_deadline: Cell<Option<Instant>>,
    /// A panic inside `redis.call`, raised into Lua as an error there and
    /// resumed once the script has returned.
    panic: RefCell<Option<Box<dyn Any + Send>>>,
}

impl Current {
    /// Lends the running script's command context to `f`; `None` when no
    /// script runs or the context is already lent (a nested call).
    fn with_runner<R>(&self, f: impl FnOnce(&mut dyn CommandRunner) -> R) -> Option<R> {
        let ptr = self.runner.get()?;
        if self.lent.replace(true) {
            return None;
        }
        struct GiveBack<'a>(&'a Cell<bool>);
        impl Drop for GiveBack<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _back = GiveBack(&self.lent);
        // SAFETY: `runner` is set from a `&mut dyn CommandRunner` that
        // `Scripting::run` holds for the whole time it is set, uses for
        // nothing else meanwhile, and clears (also on unwinding) before
        // that borrow ends; `lent` makes this the only reference to it.
        // Everything runs on the event loop's one thread.
        Some(f(unsafe { &mut *ptr.as_ptr() }))
    }

    fn running(&self) -> RunningScript {
        let elapsed = self
            .started
            .get()
            .map_or(0, |at| crate::clock::ticks().saturating_sub(at));
        RunningScript {
            eval: self.eval.get(),
            wrote: self.wrote.get(),
            duration_ms: crate::clock::ticks_to_us(elapsed) / 1000,
        }
    }
}

/// Clears [`Current::runner`] when a run ends, however it ends.
struct Lend<'a>(&'a Current);

impl Drop for Lend<'_> {
    fn drop(&mut self) {
        self.0.runner.set(None);
        self.0.started.set(None);
    }
}

/// The interpreter and the scripts it has compiled.
pub struct Scripting {
    lua: Lua,
    /// Compiled script functions by SHA-1 (hex), with their source size.
    scripts: HashMap<String, CachedScript, foldhash::fast::RandomState>,
    /// The body and SHA-1 of the last script EVAL ran: a client repeating
    /// one script is spared hashing it each time.
    last_eval: (Vec<u8>, String),
    launcher: Function,
    sandbox: Table,
    current: Rc<Current>,
    /// What `redis.call` and `redis.pcall` reach (they hold its address).
    _call_context: Box<call::CallContext>,
    /// Function libraries by name, and each function's library (by the
    /// function's name in lower case).
    libraries: BTreeMap<String, Library>,
    function_library: HashMap<String, String>,
    /// The globals library functions run in; its metatable's `__index` is
    /// `front` when they run and `load_front` while their library loads.
    function_view: Table,
    function_meta: Table,
    front: Table,
    load_front: Table,
}

/// A compiled EVAL script.
#[derive(Debug, Clone)]
struct CachedScript {
    function: Function,
    /// Bytes of its source (INFO's `used_memory_scripts`).
    size: usize,
    /// The flags of its `#!lua flags=...` line; `None` without one (Redis's
    /// compatibility mode: EVAL_RO refuses only the writes it tries).
    flags: Option<u8>,
}

/// The bit of a flag's name in [`SCRIPT_FLAGS`] order.
fn flag_bit(name: &[u8]) -> Option<u8> {
    SCRIPT_FLAGS
        .iter()
        .position(|n| n.as_bytes() == name)
        .map(|i| 1 << i)
}

/// Bits of [`SCRIPT_FLAGS`] named in a comma-separated list, or the first
/// unknown name.
fn parse_flags(list: &str) -> Result<u8, String> {
    // `flags=` alone declares none (Redis splits "" into no parts).
    if list.is_empty() {
        return Ok(0);
    }
    list.split(',').try_fold(0, |flags, name| {
        flag_bit(name.as_bytes())
            .map(|bit| flags | bit)
            .ok_or_else(|| name.to_string())
    })
}

/// An EVAL script's `#!lua [flags=...]` first line: its flags and length
/// (the line is skipped, its newline kept, so line numbers stay), or
/// `None` when the script has none.
fn eval_shebang(body: &[u8]) -> Result<Option<(u8, usize)>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let end = body
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("ERR Invalid script shebang")?;
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().ok_or("ERR Invalid engine in script shebang")?;
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = 0;
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        flags |= parse_flags(list)
            .map_err(|name| format!("ERR Unexpected flag in script shebang: {name}"))?;
    }
    Ok(Some((flags, end)))
}

/// The flags an EVAL script's body declares on its `#!lua` line; `None`
/// without one (or with one that does not parse: the run will say why).
pub fn declared_flags(body: &[u8]) -> Option<u8> {
    eval_shebang(body).ok().flatten().map(|(flags, _)| flags)
}

/// What FUNCTION RESTORE does with the libraries already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    Flush,
    Append,
    Replace,
}

/// The flags a function may declare (Redis's `scripts_flags_def`, in its
/// order; FUNCTION LIST shows them so).
pub const SCRIPT_FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// The bits of `no-writes`, `allow-oom` and `allow-stale` in
/// [`LibraryFunction::flags`] (their places in [`SCRIPT_FLAGS`]).
pub const FLAG_NO_WRITES: u8 = 1;

pub const FLAG_ALLOW_OOM: u8 = 1 << 1;

pub const FLAG_ALLOW_STALE: u8 = 1 << 2;

/// `no-cluster` and `allow-cross-slot-keys`.
pub const FLAG_NO_CLUSTER: u8 = 1 << 3;

pub const FLAG_ALLOW_CROSS_SLOT: u8 = 1 << 4;

/// How long a library's code may run while it loads (Redis: 500 ms).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// A function a library registered.
#[derive(Debug, Clone)]
pub struct LibraryFunction {
    pub name: String,
    pub description: Option<Vec<u8>>,
    /// Bits of [`SCRIPT_FLAGS`].
    pub flags: u8,
    callback: Function,
}

/// A library FUNCTION LOAD made: its code and its functions.
#[derive(Debug, Clone)]
pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<LibraryFunction>,
}

impl std::fmt::Debug for Scripting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scripting({} scripts)", self.scripts.len())
    }
}

/// The instruction hook: see [`interrupt`].
fn hook(current: Rc<Current>) -> impl Fn(&Lua, &mlua::debug::Debug<'_>) -> mlua::Result<VmState> {
    move |lua, _| match interrupt(lua, &current) {
        Some(stop) => Err(mlua::Error::runtime(stop)),
        None => Ok(VmState::Continue),
    }
}

/// Looks up from a running script, every `HOOK_EVERY_INSTRUCTIONS` and
/// before each `redis.call`: past `busy-reply-threshold` it lets the other
/// clients be served (-BUSY, SCRIPT KILL); the error to raise when the
/// script must stop (killed, or its library's load ran out of time).
fn interrupt(lua: &Lua, current: &Rc<Current>) -> Option<&'static str> {
    if current
        .load_deadline
        .get()
        .is_some_and(|d| Instant::now() > d)
    {
        return Some("ERR FUNCTION LOAD timeout");
    }
    if current.killed.get() {
        return Some(KILLED);
    }
    let started = current.started.get()?;
    if !current.timed_out.get() {
        let limit = current.limit_ticks.get();
        let elapsed = crate::clock::ticks().saturating_sub(started);
        if limit == 0 || elapsed < limit {
            return None;
        }
        tracing::warn!(
            "Slow script detected: still in execution after {} milliseconds. You can try killing the script using the {} command.",
            crate::clock::ticks_to_us(elapsed) / 1000,
            if current.eval.get() { "SCRIPT KILL" } else { "FUNCTION KILL" }
        );
        current.timed_out.set(true);
    }
    let running = current.running();
    if current.with_runner(|r| r.while_busy(&running)) == Some(true) {
        tracing::warn!("Lua script killed by user with SCRIPT KILL.");
        current.killed.set(true);
        // From now on every line raises it again: a `pcall` around the
        // loop cannot keep the script alive.
        if let Err(e) = lua.set_global_hook(HookTriggers::EVERY_LINE, hook(current.clone())) {
            tracing::warn!("cannot hook every line of the killed script: {e}");
        }
        return Some(KILLED);
    }
    None
}

fn count_hook() -> HookTriggers {
    HookTriggers::new().every_nth_instruction(HOOK_EVERY_INSTRUCTIONS)
}

impl Scripting {
    pub fn new() -> mlua::Result<Scripting> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
        // SAFETY: `debug` is loaded only for the error handler to read line
        // numbers (as Redis's handler does); it is removed from the globals
        // before any script can see it. No C module loader is enabled.
        let lua = unsafe { Lua::unsafe_new_with(libs, LuaOptions::default()) };
        let globals = lua.globals();
        // As redis-server 7.0.15 as Debian ships it (whose Lua lacks
        // `newproxy`, `getfenv`, `setfenv` and `print` too). Without
        // `newproxy` a script cannot make a finalizer (`__gc`), so no Lua
        // code runs inside an allocation (see `call`).
        for name in [
            "loadfile", "dofile", "os", "io", "require", "module", "package", "newproxy",
            "getfenv", "setfenv", "print",
        ] {
            globals.raw_set(name, Value::Nil)?;
        }
        let current = Rc::new(Current::default());
        let call_context = Box::new(call::CallContext {
            current: current.clone(),
            lua: lua.clone(),
        });
        let redis = lua.create_table()?;
        install_library(&lua, &redis, &current, &call_context)?;
        globals.raw_set("redis", redis)?;
        globals.raw_set("bit", libs::bit_library(&lua)?)?;
        let math: Table = globals.raw_get("math")?;
        libs::install_random(&lua, &math)?;
        globals.raw_set("cjson", libs::cjson(&lua)?)?;
        globals.raw_set("cmsgpack", libs::cmsgpack(&lua)?)?;
        globals.raw_set("struct", libs::struct_library(&lua)?)?;
        let (error_handler, script_pcall): (Function, Function) =
            lua.load(ERROR_HANDLER).set_name("=handler").eval()?;
        let xpcall: Function = globals.raw_get("xpcall")?;
        let launcher: Function = lua.load(LAUNCHER).set_name("=launcher").call((
            globals.clone(),
            xpcall,
            error_handler,
        ))?;
        // `debug` is for the error handler only, as in Redis's sandbox.
        globals.raw_set("debug", Value::Nil)?;
        globals.raw_set("pcall", script_pcall)?;
        let load_redis = lua.create_table()?;
        install_load_library(&lua, &load_redis, &current)?;
        let (sandbox, function_view, function_meta, front, load_front): (
            Table,
            Table,
            Table,
            Table,
            Table,
        ) = lua
            .load(SANDBOX)
            .set_name("=sandbox")
            .call((globals, load_redis))?;
        lua.set_global_hook(count_hook(), hook(current.clone()))?;
        Ok(Scripting {
            lua,
            scripts: HashMap::default(),
            last_eval: (Vec::new(), String::new()),
            launcher,
            sandbox,
            current,
            _call_context: call_context,
            libraries: BTreeMap::new(),
            function_library: HashMap::new(),
            function_view,
            function_meta,
            front,
            load_front,
        })
    }

    /// Compiles `body` if new and returns its SHA-1 (SCRIPT LOAD, EVAL).
    pub fn load(&mut self, body: &[u8]) -> Result<String, String> {
        if self.last_eval.0 == body && self.scripts.contains_key(&self.last_eval.1) {
            return Ok(self.last_eval.1.clone());
        }
        let sha = sha1_hex(body);
        if !self.scripts.contains_key(&sha) {
            let shebang = eval_shebang(body)?;
            let skip = shebang.map_or(0, |(_, len)| len);
            let function = self
                .lua
                .load(&body[skip..])
                .set_name(CHUNK_NAME)
                // Source only: bytecode is not verified (see SANDBOX).
                .set_mode(mlua::chunk::ChunkMode::Text)
                .into_function()
                .map_err(|e| {
                    format!(
                        "ERR Error compiling script (new function): {}",
                        compile_message(&e)
                    )
                })?;
            self.set_env(&function, &self.sandbox)
                .map_err(|e| e.to_string())?;
            self.scripts.insert(
                sha.clone(),
                CachedScript {
                    function,
                    size: body.len(),
                    flags: shebang.map(|(flags, _)| flags),
                },
            );
        }
        self.last_eval = (body.to_vec(), sha.clone());
        Ok(sha)
    }

    /// `busy-reply-threshold` in ms (0: never busy).
    pub fn set_time_limit_ms(&self, ms: u64) {
        let ticks = ms
            .saturating_mul(1000)
            .saturating_mul(crate::clock::ticks_per_us());
        self.current.limit_ticks.set(ticks);
    }

    /// The flags a cached script declared (`None`: no shebang line).
    pub fn script_flags(&self, sha: &str) -> Option<u8> {
        self.scripts.get(sha).and_then(|s| s.flags)
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        std::str::from_utf8(sha).is_ok_and(|s| self.scripts.contains_key(&s.to_ascii_lowercase()))
    }

    pub fn flush(&mut self) {
        self.scripts.clear();
        self.last_eval = (Vec::new(), String::new());
        self.lua.gc_collect().ok();
    }

    /// Bytes the Lua VM holds (INFO `used_memory_lua`).
    pub fn vm_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// (scripts cached, bytes of their sources) for INFO.
    pub fn cache_stats(&self) -> (usize, usize) {
        (
            self.scripts.len(),
            self.scripts.values().map(|s| s.size).sum(),
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
    ) -> Option<Result<(), ScriptError>> {
        let function = self.scripts.get(sha).map(|s| s.function.clone())?;
        let outcome = self.launch(&function, true, keys, argv, runner);
        let lua_resp3 = self.current.resp3.get();
        Some(reply_outcome(outcome, "script", sha, (out, lua_resp3)))
    }

    /// Runs the library function `name` with `keys` and `argv` (FCALL).
    /// `false` if there is no such function.
    pub fn call_function(
        &mut self,
        name: &str,
        keys: &[&[u8]],
        argv: &[&[u8]],
        runner: &mut dyn CommandRunner,
        out: &mut Reply,
    ) -> Option<Result<(), ScriptError>> {
        let function = self.function(name)?;
        let (callback, name) = (function.callback.clone(), function.name.clone());
        let outcome = self.launch(&callback, false, keys, argv, runner);
        let lua_resp3 = self.current.resp3.get();
        Some(reply_outcome(outcome, "function", &name, (out, lua_resp3)))
    }

    /// A function by name, whatever its case (Redis's functions dict
    /// compares names case-insensitively).
    pub fn function(&self, name: &str) -> Option<&LibraryFunction> {
        let key = name.to_ascii_lowercase();
        let library = self.libraries.get(self.function_library.get(&key)?)?;
        library
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }

    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    pub fn library_count(&self) -> usize {
        self.libraries.len()
    }

    pub fn function_count(&self) -> usize {
        self.function_library.len()
    }

    /// FUNCTION DELETE: `false` if there is no such library.
    pub fn delete_library(&mut self, name: &str) -> bool {
        let Some(library) = self.libraries.remove(name) else {
            return false;
        };
        for f in &library.functions {
            self.function_library.remove(&f.name.to_ascii_lowercase());
        }
        true
    }

    pub fn flush_functions(&mut self) {
        self.libraries.clear();
        self.function_library.clear();
        self.lua.gc_collect().ok();
    }

    /// FUNCTION DUMP: every library's code in Redis's payload.
    pub fn dump_functions(&self) -> Vec<u8> {
        let mut body = Vec::new();
        self.write_functions(&mut body);
        crate::persistence::rdb::dump_payload(body)
    }

    /// Each library as an RDB `FUNCTION2` record (in a DUMP payload and in
    /// an RDB file alike).
    /// Each library's source, as FUNCTION LOAD took it (an AOF base
    /// without the RDB preamble loads them back that way).
    pub fn library_codes(&self) -> impl Iterator<Item = &[u8]> {
        self.libraries
            .values()
            .map(|library| library.code.as_slice())
    }

    pub fn write_functions(&self, out: &mut Vec<u8>) {
        for library in self.libraries.values() {
            out.push(crate::persistence::rdb::OPCODE_FUNCTION2);
            crate::persistence::rdb::write_string(out, &library.code);
        }
    }

    /// FUNCTION RESTORE: loads the libraries of a DUMP payload, after
    /// dropping every library (`Restore::Flush`), or beside them (failing
    /// on a name taken, or replacing it). All or nothing.
    pub fn restore_functions(&mut self, payload: &[u8], how: Restore) -> Result<(), String> {
        let body = crate::persistence::rdb::payload_body(payload, false)
            .ok_or("ERR DUMP payload version or checksum are wrong")?;
        let mut reader = crate::persistence::rdb::Reader::new(body);
        let mut codes = Vec::new();
        while reader.remaining() > 0 {
            if reader.byte() != Some(crate::persistence::rdb::OPCODE_FUNCTION2) {
                return Err("ERR given type is not a function".into());
            }
            let code = reader
                .string(payload.len().saturating_mul(256))
                .ok_or("ERR Failed loading library payload")?;
            codes.push(code);
        }
        self.restore_codes(&codes, how)
    }

    /// Loads library sources (a DUMP payload's, an RDB file's) as
    /// `restore_functions` does: all or nothing.
    pub fn restore_codes(&mut self, codes: &[Vec<u8>], how: Restore) -> Result<(), String> {
        let saved = (self.libraries.clone(), self.function_library.clone());
        let outcome = self.restore_libraries(codes, how);
        if outcome.is_err() {
            (self.libraries, self.function_library) = saved;
        }
        outcome
    }

    fn restore_libraries(&mut self, codes: &[Vec<u8>], how: Restore) -> Result<(), String> {
        if how == Restore::Flush {
            self.libraries.clear();
            self.function_library.clear();
        }
        let mut restored = Vec::new();
        for code in codes {
            let name = library_name(code)?;
            if restored.contains(&name) {
                return Err(format!("ERR Library '{name}' already exists"));
            }
            if self.libraries.contains_key(&name) {
                if how == Restore::Append {
                    return Err(format!("ERR Library {name} already exists"));
                }
                self.delete_library(&name);
            }
            self.load_library(code, false)?;
            restored.push(name);
        }
        Ok(())
    }

    /// FUNCTION LOAD: runs the library's code so it registers its
    /// functions; the library's name, or Redis's error.
    pub fn load_library(&mut self, code: &[u8], replace: bool) -> Result<String, String> {
        let name = library_name(code)?;
        if self.libraries.contains_key(&name) && !replace {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        // The shebang line is not Lua: it is cut, its newline kept so line
        // numbers match Redis's.
        let body = &code[code.iter().position(|&b| b == b'\n').unwrap_or(code.len())..];
        let chunk = self
            .lua
            .load(body)
            .set_name("@user_function")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .into_function()
            .map_err(|e| format!("ERR Error compiling function: {}", compile_message(&e)))?;
        let registered = self.run_library_code(&chunk).map_err(|e| e.to_string())?;
        let functions = match registered {
            Ok(functions) => functions,
            Err(failure) => {
                return Err(format!(
                    "ERR Error registering functions: {}",
                    failure.message
                ))
            }
        };
        if functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        for f in &functions {
            if self
                .function_library
                .get(&f.name.to_ascii_lowercase())
                .is_some_and(|lib| *lib != name)
            {
                return Err(format!("ERR Function {} already exists", f.name));
            }
        }
        self.delete_library(&name);
        for f in &functions {
            let key = f.name.to_ascii_lowercase();
            self.function_library.insert(key, name.clone());
        }
        self.libraries.insert(
            name.clone(),
            Library {
                name: name.clone(),
                code: code.to_vec(),
                functions,
            },
        );
        Ok(name)
    }

    /// Runs a library's chunk with the loading API as its globals, under
    /// the load time limit: the functions it registered.
    fn run_library_code(
        &self,
        chunk: &Function,
    ) -> mlua::Result<Result<Vec<LibraryFunction>, Failure>> {
        self.set_env(chunk, &self.function_view)?;
        self.function_meta
            .raw_set("__index", self.load_front.clone())?;
        *self.current.registered.borrow_mut() = Some(Vec::new());
        self.current
            .load_deadline
            .set(Some(Instant::now() + LOAD_TIMEOUT));
        let outcome = self.call_armed((chunk.clone(), true, Value::Nil, Value::Nil));
        self.current.load_deadline.set(None);
        let registered = self
            .current
            .registered
            .borrow_mut()
            .take()
            .unwrap_or_default();
        self.function_meta.raw_set("__index", self.front.clone())?;
        Ok(outcome?.map(|_| registered))
    }

    /// Gives a compiled chunk the globals it runs with.
    fn set_env(&self, function: &Function, env: &Table) -> mlua::Result<()> {
        function.set_environment(env.clone()).map(|_| ())
    }

    /// Calls the launcher, the memory limit armed only meanwhile (see
    /// `LUA_MEMORY_LIMIT_BYTES`): the script's value or its failure.
    fn call_armed(&self, args: impl mlua::IntoLuaMulti) -> mlua::Result<Result<Value, Failure>> {
        self.lua.set_memory_limit(LUA_MEMORY_LIMIT_BYTES)?;
        let outcome: mlua::Result<(bool, Value)> = self.launcher.call(args);
        self.lua.set_memory_limit(0)?;
        if self.current.killed.replace(false) {
            // Back from the every-line hook the kill set.
            self.lua
                .set_global_hook(count_hook(), hook(self.current.clone()))?;
        }
        // A step of the collector every 50 scripts, as Redis takes one
        // (LUA_GC_CYCLE_PERIOD), so garbage does not wait for Lua's own
        // cycle (Redis's suite expects under 100 KB after 10,000 scripts).
        let runs = self.current.runs_since_gc.get() + 1;
        self.current.runs_since_gc.set(runs % GC_CYCLE_PERIOD);
        if runs == GC_CYCLE_PERIOD {
            // SAFETY: one collector step in the interpreter's own state;
            // `exec_raw` runs it protected.
            unsafe {
                self.lua.exec_raw::<()>((), |state| {
                    mlua::ffi::lua_gc(state, mlua::ffi::LUA_GCSTEP, GC_CYCLE_PERIOD as i32);
                })?;
            }
        }
        if self.lua.used_memory() > LUA_MEMORY_LIMIT_BYTES / 4 {
            // What a script that ran into the limit (or near it) left is
            // garbage: not kept until Lua's own collector gets to it.
            self.lua.gc_collect()?;
        }
        if let Some(panic) = self.current.panic.take() {
            std::panic::resume_unwind(panic);
        }
        Ok(match outcome? {
            (true, value) => Ok(value),
            (false, err) => Err(script_failure(&err)),
        })
    }

    /// A Lua array of strings (KEYS, ARGV).
    fn string_array(&self, items: &[&[u8]]) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(items.len(), 0)?;
        for (i, item) in items.iter().enumerate() {
            t.raw_set(i + 1, self.lua.create_string(item)?)?;
        }
        Ok(t)
    }

    /// Runs `function` (a script's chunk with KEYS and ARGV as globals, or
    /// a library function given them as arguments) with `runner` lent to
    /// the `redis` library for the duration.
    fn launch(
        &self,
        function: &Function,
        as_globals: bool,
        keys: &[&[u8]],
        argv: &[&[u8]],
        runner: &mut dyn CommandRunner,
    ) -> mlua::Result<Result<Value, Failure>> {
        let current = &*self.current;
        let runner: *mut (dyn CommandRunner + '_) = runner;
        // SAFETY: only the lifetime is erased; `Lend` clears the pointer
        // before this function returns (see `Current::with_runner`).
        let runner: *mut (dyn CommandRunner + 'static) = unsafe { std::mem::transmute(runner) };
        current.runner.set(NonNull::new(runner));
        let _lend = Lend(current);
        current.resp3.set(false);
        current.eval.set(as_globals);
        current.wrote.set(false);
        current.timed_out.set(false);
        current.killed.set(false);
        current.started.set(Some(crate::clock::ticks()));
        let keys = self.string_array(keys)?;
        let argv = self.string_array(argv)?;
        self.call_armed((function.clone(), as_globals, keys, argv))
    }
}

/// A script's failure as its caller gets it: the error reply, and whether
/// the error statistics counted it already.
#[derive(Debug)]
pub struct ScriptError {
    pub message: Vec<u8>,
    pub counted: bool,
}

/// A script's result as the reply to its caller, or its failure; `what`
/// and `name` say which script, for a failure of the interpreter itself;
/// `lua_resp3`: the protocol the script chose (`redis.setresp`). A script
/// that returns an error table (`redis.error_reply`) fails too.
fn reply_outcome(
    outcome: mlua::Result<Result<Value, Failure>>,
    what: &str,
    name: &str,
    (out, lua_resp3): (&mut Reply, bool),
) -> Result<(), ScriptError> {
    match outcome {
        Ok(Ok(Value::Table(t))) if matches!(t.raw_get::<Value>("err"), Ok(Value::String(_))) => {
            let message = t.raw_get::<LuaString>("err").map(|m| m.as_bytes().to_vec());
            Err(ScriptError {
                message: message.unwrap_or_default(),
                counted: t.raw_get::<bool>(call::COUNTED_FIELD_NAME).unwrap_or(false),
            })
        }
        Ok(Ok(value)) => {
            lua_to_reply(&value, out, lua_resp3);
            Ok(())
        }
        Ok(Err(failure)) => Err(ScriptError {
            message: failure.reply(name).into_bytes(),
            counted: failure.counted,
        }),
        Err(err) => Err(ScriptError {
            message: format!("ERR Error running {what} {name}, {err}").into_bytes(),
            counted: false,
        }),
    }
}

/// A script that failed: Redis's message and where it was raised.
#[derive(Debug)]
pub struct Failure {
    message: String,
    at: Option<(String, i64)>,
    /// Counted in the error statistics already (the error of a command the
    /// script ran).
    counted: bool,
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
        // Lua skips the handler for its own failures: out of memory
        // (`LUA_MEMORY_LIMIT_BYTES`) or an error inside the handler.
        let message = match value {
            Value::String(text) => format!("ERR {}", text.to_string_lossy()),
            _ => "ERR execution failure".into(),
        };
        return Failure {
            message,
            at: None,
            counted: false,
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
        counted: t.raw_get::<bool>(call::COUNTED_FIELD_NAME).unwrap_or(false),
    }
}

/// Lifts the memory limit while Rust code works on the interpreter inside
/// a script's call (see `LUA_MEMORY_LIMIT_BYTES`), and sets it back.
struct Unlimited<'a>(&'a Lua);

impl<'a> Unlimited<'a> {
    fn new(lua: &'a Lua) -> Unlimited<'a> {
        lua.set_memory_limit(0).ok();
        Unlimited(lua)
    }
}

impl Drop for Unlimited<'_> {
    fn drop(&mut self) {
        self.0.set_memory_limit(LUA_MEMORY_LIMIT_BYTES).ok();
    }
}

fn compile_message(err: &mlua::Error) -> String {
    match err {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The SHA-1 of a script, lower-case hex (Redis's script names).
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// The `redis` library.
fn install_library(
    lua: &Lua,
    redis: &Table,
    current: &Rc<Current>,
    call_context: &call::CallContext,
) -> mlua::Result<()> {
    // Functions of C, as in Redis: a tail call `return redis.call(...)`
    // keeps the script's frame, so errors name its line.
    redis.raw_set("call", call::create(lua, call_context, true)?)?;
    redis.raw_set("pcall", call::create(lua, call_context, false)?)?;
    let cur = current.clone();
    redis.raw_set(
        "setresp",
        lua.create_function(move |_, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime(
                    "ERR redis.setresp() requires one argument.",
                ));
            }
            let v = lua_to_number(&args[0]);
            if v != 2.0 && v != 3.0 {
                return Err(mlua::Error::runtime("ERR RESP version must be 2 or 3."));
            }
            cur.resp3.set(v == 3.0);
            Ok(())
        })?,
    )?;
    // Both return (not raise) Redis's error for anything but one string.
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: Variadic<Value>| {
            let t = lua.create_table()?;
            match &args[..] {
                [Value::String(msg)] => {
                    t.raw_set("err", lua.create_string(error_reply_text(&msg.as_bytes()))?)?
                }
                _ => t.raw_set("err", "ERR wrong number or type of arguments")?,
            }
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: Variadic<Value>| {
            let t = lua.create_table()?;
            match &args[..] {
                [Value::String(msg)] => t.raw_set("ok", msg)?,
                _ => t.raw_set("err", "ERR wrong number or type of arguments")?,
            }
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, args: Variadic<Value>| {
            let [value] = &args[..] else {
                return Err(mlua::Error::runtime("ERR wrong number of arguments"));
            };
            // `lua_tolstring`: a number as Lua prints it, anything else "".
            let bytes = match value {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Integer(n) => n.to_string().into_bytes(),
                Value::Number(n) => crate::protocol::reply::format_g(*n, 14).into_bytes(),
                _ => Vec::new(),
            };
            Ok(sha1_hex(&bytes))
        })?,
    )?;
    let cur = current.clone();
    redis.raw_set(
        "acl_check_cmd",
        lua.create_function(move |_, args: Variadic<Value>| {
            if args.is_empty() {
                return Err(mlua::Error::runtime(
                    "ERR Please specify at least one argument for this redis lib call",
                ));
            }
            let mut command = OwnedArgs::default();
            for arg in args.iter() {
                match arg {
                    Value::String(s) => command.push(&s.as_bytes()),
                    Value::Integer(n) => command.push(format_double(*n as f64).as_bytes()),
                    Value::Number(n) => command.push(format_double(*n).as_bytes()),
                    _ => {
                        return Err(mlua::Error::runtime(
                            "ERR Lua redis lib command arguments must be strings or integers",
                        ))
                    }
                }
            }
            match cur.with_runner(|runner| runner.acl_allows(&command)) {
                Some(Some(allowed)) => Ok(allowed),
                Some(None) => Err(mlua::Error::runtime(
                    "ERR Invalid command passed to redis.acl_check_cmd()",
                )),
                None => Err(mlua::Error::runtime(
                    "ERR redis.acl_check_cmd can only be called inside a script invocation",
                )),
            }
        })?,
    )?;
    install_common(lua, redis)?;
    for (name, value) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    // Effects replication is the only mode in Redis 7: these change
    // nothing (set_repl checks its flags, as Redis does).
    redis.raw_set(
        "set_repl",
        lua.create_function(|_, args: Variadic<Value>| {
            let [flags] = &args[..] else {
                return Err(mlua::Error::runtime(
                    "ERR redis.set_repl() requires two arguments.",
                ));
            };
            if !(0.0..=3.0).contains(&lua_to_number(flags)) {
                return Err(mlua::Error::runtime(
                    "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            Ok(())
        })?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    redis.raw_set("debug", lua.create_function(|_, _args: MultiValue| Ok(()))?)?;
    Ok(())
}

/// What both the running API and the loading API of `redis` hold: `log`,
/// its levels and the version.
fn install_common(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set(
        "log",
        lua.create_function(|_, args: Variadic<Value>| {
            if args.len() < 2 {
                return Err(mlua::Error::runtime(
                    "ERR redis.log() requires two arguments or more.",
                ));
            }
            let level = match &args[0] {
                Value::Integer(n) => *n,
                Value::Number(n) => *n as i64,
                _ => {
                    return Err(mlua::Error::runtime(
                        "ERR First argument must be a number (log level).",
                    ))
                }
            };
            let text: Vec<String> = args[1..]
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.to_string_lossy(),
                    Value::Integer(n) => n.to_string(),
                    Value::Number(n) => format_double(*n),
                    _ => String::new(),
                })
                .collect();
            let text = text.join(" ");
            match level {
                0 => tracing::debug!(target: "lapse::script", "{text}"),
                1 => tracing::info!(target: "lapse::script", "{text}"),
                2 => tracing::info!(target: "lapse::script", "{text}"),
                3 => tracing::warn!(target: "lapse::script", "{text}"),
                _ => return Err(mlua::Error::runtime("ERR Invalid debug level.")),
            }
            Ok(())
        })?,
    )?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, level)?;
    }
    redis.raw_set("REDIS_VERSION", crate::REDIS_COMPAT_VERSION)?;
    redis.raw_set(
        "REDIS_VERSION_NUM",
        version_num(crate::REDIS_COMPAT_VERSION),
    )?;
    Ok(())
}

/// The `redis` a library sees while it loads: `register_function` and
/// the common parts.
fn install_load_library(lua: &Lua, redis: &Table, current: &Rc<Current>) -> mlua::Result<()> {
    install_common(lua, redis)?;
    let cur = current.clone();
    redis.raw_set(
        "register_function",
        lua.create_function(move |_, args: Variadic<Value>| {
            let function =
                registration(&args).map_err(|e| mlua::Error::runtime(format!("ERR {e}")))?;
            let mut registered = cur.registered.borrow_mut();
            let Some(list) = registered.as_mut() else {
                return Err(mlua::Error::runtime(
                    "ERR redis.register_function can only be called on FUNCTION LOAD command",
                ));
            };
            if list.iter().any(|f| f.name == function.name) {
                return Err(mlua::Error::runtime(
                    "ERR Function already exists in the library",
                ));
            }
            list.push(function);
            Ok(())
        })?,
    )?;
    Ok(())
}

const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `redis.register_function(name, callback)` or its named form
/// `{function_name=, callback=, flags=, description=}`.
fn registration(args: &[Value]) -> Result<LibraryFunction, &'static str> {
    let (name, callback, flags, description) = match args {
        [Value::Table(t)] => {
            let (mut name, mut callback, mut flags, mut description) = (None, None, 0u8, None);
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|_| "unknown argument given to redis.register_function")?;
                let Value::String(k) = k else {
                    return Err("named argument key given to redis.register_function is not a string");
                };
                let key = k.to_string_lossy().to_ascii_lowercase();
                match (key.as_str(), v) {
                    ("function_name", Value::String(s)) => name = Some(s.as_bytes().to_vec()),
                    ("function_name", _) => {
                        return Err("function_name argument given to redis.register_function must be a string")
                    }
                    ("description", Value::String(s)) => description = Some(s.as_bytes().to_vec()),
                    ("description", _) => {
                        return Err("description argument given to redis.register_function must be a string")
                    }
                    ("callback", Value::Function(f)) => callback = Some(f),
                    ("callback", _) => {
                        return Err("callback argument given to redis.register_function must be a function")
                    }
                    ("flags", Value::Table(list)) => {
                        for flag in list.sequence_values::<Value>() {
                            let bit = match flag {
                                Ok(Value::String(f)) => flag_bit(&f.as_bytes()),
                                _ => None,
                            };
                            flags |= bit.ok_or("unknown flag given")?;
                        }
                    }
                    ("flags", _) => {
                        return Err("flags argument to redis.register_function must be a table representing function flags")
                    }
                    _ => return Err("unknown argument given to redis.register_function"),
                }
            }
            let name = name.ok_or("redis.register_function must get a function name argument")?;
            let callback = callback.ok_or("redis.register_function must get a callback argument")?;
            (name, callback, flags, description)
        }
        [_] => return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
        [name, callback] => {
            let Value::Function(callback) = callback else {
                return Err("second argument to redis.register_function must be a function");
            };
            let Value::String(name) = name else {
                return Err("first argument to redis.register_function must be a string");
            };
            (name.as_bytes().to_vec(), callback.clone(), 0, None)
        }
        _ => return Err("wrong number of arguments to redis.register_function"),
    };
    if !valid_name(&name) {
        return Err(BAD_NAME);
    }
    Ok(LibraryFunction {
        name: String::from_utf8_lossy(&name).into_owned(),
        description,
        flags,
        callback,
    })
}

/// The library name from a library's `#!lua name=<name>` first line.
fn library_name(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    // Split as Redis splits it (`sdssplitargs`: quotes allowed).
    let parts = crate::protocol::request::split_line(&code[..end])
        .map_err(|_| "ERR Invalid library metadata".to_string())?;
    let parts: Vec<String> = parts
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let engine = parts.first().map_or("", |p| p.get(2..).unwrap_or(""));
    let mut name = None;
    for part in parts.iter().skip(1) {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case("name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(part[5..].to_string());
            continue;
        }
        return Err(format!("ERR Invalid metadata value given: {part}"));
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    if !valid_name(name.as_bytes()) {
        return Err(format!("ERR {BAD_NAME}"));
    }
    Ok(name)
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
