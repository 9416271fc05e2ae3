//! `redis.call` and `redis.pcall` as Lua C functions, as Redis has them:
//! the arguments are read straight off the Lua stack into the reused
//! argument buffer, and the command's reply is pushed straight back as
//! Lua values. (Through the binding's generic conversions, a value per
//! argument and per reply element, they took a tenth of a ten-command
//! script's time.)
//!
//! An error is raised as Redis 7.0 raises it: an `{err = "..."}` table,
//! which the error handler keeps and `pcall` turns into its text.
//!
//! These functions raise Lua errors, which unwind by `longjmp`: they do so
//! only from [`entry`], once every Rust value with a destructor is gone.
//! Between, a Lua API call could only fail inside an allocation, and that
//! cannot happen short of the process running out of memory: the script's
//! memory limit is lifted for the call (as for every call of the `redis`
//! library), and no script code runs inside one (scripts cannot make
//! finalizers: `newproxy` is not in the sandbox).

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use mlua::{ffi, Function, Lua};

use super::{Current, Unlimited};
use crate::protocol::reply::format_double;

/// The field of an error table whose error was counted in the error
/// statistics already (Redis's name for it).
pub(super) const COUNTED_FIELD_NAME: &str = "ignore_error_stats_update";
const COUNTED_FIELD: &[u8] = COUNTED_FIELD_NAME.as_bytes();

/// What the two functions reach through their upvalue: owned by the
/// `Scripting` that owns the interpreter, boxed so it does not move.
pub(super) struct CallContext {
    pub current: Rc<Current>,
    pub lua: Lua,
}

/// `redis.call` (`raise`: an error stops the script) or `redis.pcall`
/// (an error is returned as its `{err = ...}` table).
pub(super) fn create(lua: &Lua, context: &CallContext, raise: bool) -> mlua::Result<Function> {
    let function: ffi::lua_CFunction = if raise { redis_call } else { redis_pcall };
    let context = context as *const CallContext as *mut c_void;
    // SAFETY: pushes a C closure with one light userdata upvalue; the
    // context outlives the interpreter's use of it (see `CallContext`).
    unsafe {
        lua.exec_raw((), |state| {
            ffi::lua_pushlightuserdata(state, context);
            ffi::lua_pushcclosure(state, function, 1);
        })
    }
}

/// # Safety
///
/// `state` is the running script's Lua state, its upvalue 1 the
/// `CallContext` that `create` set (Lua calls it so).
unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe { entry(state, true) }
}

/// # Safety
///
/// As `redis_call`.
unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe { entry(state, false) }
}

/// # Safety
///
/// As `redis_call`.
unsafe fn entry(state: *mut ffi::lua_State, raise: bool) -> c_int {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        // SAFETY: the upvalue `create` set; see `CallContext`.
        let context =
            &*(ffi::lua_touserdata(state, ffi::lua_upvalueindex(1)) as *const CallContext);
        let failed = match catch_unwind(AssertUnwindSafe(|| call(state, context))) {
            Ok(failed) => failed,
            Err(panic) => {
                // Raised into Lua here, resumed once the script has returned.
                *context.current.panic.borrow_mut() = Some(panic);
                push_error(state, b"ERR internal error");
                true
            }
        };
        if failed && raise {
            // Nothing in this frame needs dropping: the jump may skip it.
            ffi::lua_error(state);
        }
        1
    }
}

/// Runs the command whose arguments are on the stack and pushes one
/// value: its reply converted, or an `{err = ...}` table (then `true`).
///
/// # Safety
///
/// `state` is the running script's Lua state, with the call's arguments
/// on its stack; `context` outlives the call.
unsafe fn call(state: *mut ffi::lua_State, context: &CallContext) -> bool {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        let current = &*context.current;
        let _unlimited = Unlimited::new(&context.lua);
        let fail = |message: &[u8]| {
            push_error(state, message);
            true
        };
        // A loop of slow commands runs few instructions between them: the
        // clock is also looked at here.
        if let Some(stop) = super::interrupt(&context.lua, &context.current) {
            return fail(stop.as_bytes());
        }
        let argc = ffi::lua_gettop(state);
        if argc == 0 {
            return fail(b"ERR Please specify at least one argument for this redis lib call");
        }
        let mut args = current.args.borrow_mut();
        args.clear();
        for i in 1..=argc {
            match ffi::lua_type(state, i) {
                // A number reaches the command as Redis prints it: %.17g.
                ffi::LUA_TNUMBER => {
                    args.push(format_double(ffi::lua_tonumber(state, i)).as_bytes())
                }
                ffi::LUA_TSTRING => args.push(stack_bytes(state, i)),
                _ => {
                    return fail(b"ERR Lua redis lib command arguments must be strings or integers")
                }
            }
        }
        // The arguments are copied: their room on the stack is the reply's
        // (a call with thousands of arguments, `unpack` of a big table).
        ffi::lua_settop(state, 0);
        let resp3 = current.resp3.get();
        // The command's error reply, or its refusal: counted in the error
        // statistics already, which the table says (Redis's
        // `ignore_error_stats_update`).
        let fail_counted = |message: &[u8]| {
            push_error(state, message);
            ffi::lua_pushboolean(state, 1);
            set_field(state, COUNTED_FIELD);
            true
        };
        let outcome = current.with_runner(|runner| {
            let failed = match runner.run(&args, resp3) {
                Ok([b'-', error @ ..]) => {
                    fail_counted(error.strip_suffix(b"\r\n").unwrap_or(error))
                }
                Ok(reply) => match push_reply(state, reply) {
                    Some(_) => false,
                    None => fail(b"ERR reply too deep or malformed for Lua"),
                },
                Err(message) => fail_counted(message.as_bytes()),
            };
            if !current.wrote.get() && runner.has_written() {
                current.wrote.set(true);
            }
            failed
        });
        outcome.unwrap_or_else(|| fail(b"ERR redis.call is only available while a script runs"))
    }
}

/// The string at `index` (which must be one).
///
/// # Safety
///
/// `state` is a live Lua state and `index` a valid stack index; the
/// slice lives as long as the value stays on the stack.
unsafe fn stack_bytes<'a>(state: *mut ffi::lua_State, index: c_int) -> &'a [u8] {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        let mut len = 0;
        let ptr = ffi::lua_tolstring(state, index, &mut len);
        if ptr.is_null() {
            return &[];
        }
        std::slice::from_raw_parts(ptr as *const u8, len)
    }
}

/// # Safety
///
/// `state` is a live Lua state with room for one more value on its stack.
unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        ffi::lua_pushlstring(state, bytes.as_ptr() as *const _, bytes.len());
    }
}

/// Sets `table[key] = <top of stack>` and pops it.
///
/// # Safety
///
/// `state` is a live Lua state with a table below the value on top of
/// its stack, and room for one more value.
unsafe fn set_field(state: *mut ffi::lua_State, key: &[u8]) {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        push_bytes(state, key);
        ffi::lua_insert(state, -2);
        ffi::lua_rawset(state, -3);
    }
}

/// `{err = message}`.
///
/// # Safety
///
/// `state` is a live Lua state with room for two more values on its stack.
unsafe fn push_error(state: *mut ffi::lua_State, message: &[u8]) {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        push_bytes(state, message);
        set_field(state, b"err");
    }
}

/// `{<key> = <top of stack>}`, replacing it.
///
/// # Safety
///
/// `state` is a live Lua state with a value on top of its stack and room for two more.
unsafe fn wrap(state: *mut ffi::lua_State, key: &[u8]) {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_insert(state, -2);
        set_field(state, key);
    }
}

/// Pushes the RESP value at the start of `buf` as Redis converts a reply
/// for Lua (nil bulk and array as `false`, status as `{ok = ...}`, RESP3's
/// map, set, double and big number as tables); how many bytes it took.
/// `None` (nothing pushed) for a malformed reply, which commands never
/// give, or one nested deeper than the Lua stack allows.
///
/// # Safety
///
/// `state` is a live Lua state (the function checks the room it needs).
unsafe fn push_reply(state: *mut ffi::lua_State, buf: &[u8]) -> Option<usize> {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        let end = buf.windows(2).position(|w| w == b"\r\n")?;
        let line = &buf[1..end];
        let after = end + 2;
        let count = || -> Option<i64> { std::str::from_utf8(line).ok()?.parse().ok() };
        if ffi::lua_checkstack(state, 4) == 0 {
            return None;
        }
        let used = match buf.first()? {
            // Status, error and big number: their line, in a table.
            kind @ (b'+' | b'-' | b'(') => {
                push_bytes(state, line);
                wrap(
                    state,
                    match kind {
                        b'+' => b"ok",
                        b'-' => b"err",
                        _ => b"big_number",
                    },
                );
                after
            }
            b':' => {
                ffi::lua_pushnumber(state, count()? as f64);
                after
            }
            kind @ (b'$' | b'=') => {
                let n = count()?;
                if n < 0 {
                    ffi::lua_pushboolean(state, 0);
                    return Some(after);
                }
                let body = buf.get(after..after.checked_add(n as usize)?)?;
                if *kind == b'=' {
                    // {verbatim_string = {format = "txt", string = "..."}}
                    ffi::lua_createtable(state, 0, 2);
                    push_bytes(state, body.get(..3).unwrap_or(body));
                    set_field(state, b"format");
                    push_bytes(state, body.get(4..).unwrap_or_default());
                    set_field(state, b"string");
                    wrap(state, b"verbatim_string");
                } else {
                    push_bytes(state, body);
                }
                after + n as usize + 2
            }
            kind @ (b'*' | b'~' | b'>') => {
                let n = count()?;
                if n < 0 {
                    ffi::lua_pushboolean(state, 0);
                    return Some(after);
                }
                let set = *kind == b'~';
                // A set's table grows as Redis's does (not presized), so that
                // `pairs` walks it in Redis's order.
                let array = if set { 0 } else { n };
                ffi::lua_createtable(state, array.min(1 << 16) as c_int, 0);
                let filled = (|| {
                    let mut at = after;
                    for i in 1..=n {
                        at += push_reply(state, buf.get(at..)?)?;
                        if set {
                            ffi::lua_pushboolean(state, 1);
                            ffi::lua_rawset(state, -3);
                        } else {
                            ffi::lua_rawseti(state, -2, i);
                        }
                    }
                    Some(at)
                })();
                let at = popped_unless(state, filled)?;
                if set {
                    wrap(state, b"set");
                }
                at
            }
            b'%' => {
                let n = count()?;
                // Not presized either: `pairs` walks it in Redis's order.
                ffi::lua_createtable(state, 0, 0);
                let filled = (|| {
                    let mut at = after;
                    for _ in 0..n {
                        at += push_reply(state, buf.get(at..)?)?;
                        match buf.get(at..).and_then(|rest| push_reply(state, rest)) {
                            Some(used) => at += used,
                            None => {
                                ffi::lua_settop(state, -2);
                                return None;
                            }
                        }
                        ffi::lua_rawset(state, -3);
                    }
                    Some(at)
                })();
                let at = popped_unless(state, filled)?;
                wrap(state, b"map");
                at
            }
            b'_' => {
                ffi::lua_pushnil(state);
                after
            }
            // An attribute is not shown to scripts: its pairs are read and
            // dropped, and the reply that follows it is the value.
            b'|' => {
                let mut at = after;
                for _ in 0..count()?.max(0).saturating_mul(2) {
                    at += push_reply(state, buf.get(at..)?)?;
                    ffi::lua_settop(state, -2);
                }
                at + push_reply(state, buf.get(at..)?)?
            }
            b'#' => {
                ffi::lua_pushboolean(state, (line == b"t") as c_int);
                after
            }
            b',' => {
                let value = std::str::from_utf8(line).ok()?.parse().unwrap_or(0.0);
                ffi::lua_pushnumber(state, value);
                wrap(state, b"double");
                after
            }
            _ => return None,
        };
        Some(used)
    }
}

/// A container's filling: on failure, pops the container, so that a
/// failed conversion leaves the stack as it found it.
///
/// # Safety
///
/// `state` is a live Lua state holding what `filled`'s push left.
unsafe fn popped_unless(state: *mut ffi::lua_State, filled: Option<usize>) -> Option<usize> {
    // SAFETY: as the Safety section says; its callers keep it.
    unsafe {
        if filled.is_none() {
            ffi::lua_settop(state, -2);
        }
        filled
    }
}
