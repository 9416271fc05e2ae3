//! SORT and SORT_RO (Redis's `sort.c`): the elements of a list, set or
//! sorted set, ordered numerically or (ALPHA) as strings, by themselves or
//! by weights found through a `BY` pattern, cut by LIMIT, replied or
//! projected through `GET` patterns, or stored as a list.

use std::cmp::Ordering;

use super::aggregate::store_result;
use super::{c_str, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, StrEncoding};
use crate::protocol::Args;
use crate::value::list::End;
use crate::value::{List, Value, ValueRef};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[("sort", sort), ("sort_ro", sort_ro)];

fn sort(ctx: &mut Ctx, args: Args) -> CmdResult {
    sort_generic(ctx, &args, false)
}

fn sort_ro(ctx: &mut Ctx, args: Args) -> CmdResult {
    sort_generic(ctx, &args, true)
}

/// SORT's options, parsed before the key is looked up.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: (i64, i64),
    store: Option<&'a [u8]>,
    by: Option<&'a [u8]>,
    /// BY a pattern without `*`: nothing to sort by, the stored order.
    dont_sort: bool,
    gets: Vec<&'a [u8]>,
}

fn parse_options<'a>(ctx: &Ctx, args: &Args<'a>, read_only: bool) -> Result<Options<'a>, CmdError> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: (0, -1),
        store: None,
        by: None,
        dont_sort: false,
        gets: Vec::new(),
    };
    let full_access = ctx.server.acl.unrestricted_key_read(&ctx.session.user);
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        match &args[j] {
            a if is(a, "asc") => o.desc = false,
            a if is(a, "desc") => o.desc = true,
            a if is(a, "alpha") => o.alpha = true,
            a if is(a, "limit") && left >= 2 => {
                o.limit = (int_arg(&args[j + 1])?, int_arg(&args[j + 2])?);
                j += 2;
            }
            a if is(a, "store") && left >= 1 && !read_only => {
                o.store = Some(args.get(j + 1));
                j += 1;
            }
            a if is(a, "by") && left >= 1 => {
                let pattern = args.get(j + 1);
                o.by = Some(pattern);
                // A pattern without `*` names no per-element key: nothing
                // to sort by (and a later BY does not undo that, as in
                // Redis).
                if !c_str(pattern, usize::MAX).contains(&b'*') {
                    o.dont_sort = true;
                } else if !full_access {
                    return Err(CmdError::Static(
                        "ERR BY option of SORT denied due to insufficient ACL permissions.",
                    ));
                }
                j += 1;
            }
            a if is(a, "get") && left >= 1 => {
                if !full_access {
                    return Err(CmdError::Static(
                        "ERR GET option of SORT denied due to insufficient ACL permissions.",
                    ));
                }
                o.gets.push(args.get(j + 1));
                j += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
        j += 1;
    }
    Ok(o)
}

/// What SORT reads from the key: its elements (in stored order) and how.
enum Source {
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    ZSet(Vec<Vec<u8>>),
}

/// The elements at `key` (an absent key is an empty list), a packed
/// sorted set turned into a skiplist on the way as Redis does it.
fn load(ctx: &mut Ctx, key: &[u8]) -> Result<Source, CmdError> {
    let now_ms = ctx.now_ms;
    let source = match ctx.db().get(key, now_ms) {
        None => Source::List(Vec::new()),
        Some(ValueRef::List(l)) => Source::List(l.iter().map(<[u8]>::to_vec).collect()),
        Some(ValueRef::Set(s)) => Source::Set(s.iter().map(|m| m.to_vec()).collect()),
        Some(ValueRef::ZSet(z)) => {
            let packed = z.encoding() == "listpack";
            let members = z.iter_from(0, false).map(|e| e.member.to_vec()).collect();
            if packed {
                if let Some(Some(Value::ZSet(z))) = ctx.db().value_mut(key, now_ms) {
                    z.convert_to_tree();
                }
            }
            Source::ZSet(members)
        }
        Some(_) => return Err(CmdError::WrongType),
    };
    Ok(source)
}

/// Redis's `lookupKeyByPattern`: `#` is the element itself; otherwise the
/// first `*` is replaced by the element, and a `->field` suffix reads a
/// hash field instead of a string. Missing keys, fields and other types
/// are `None`.
fn by_pattern(ctx: &mut Ctx, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    // Redis reads the pattern as a C string for these tests.
    let text = c_str(pattern, usize::MAX);
    if text == b"#" {
        return Some(element.to_vec());
    }
    let star = text.iter().position(|&c| c == b'*')?;
    let arrow = text[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&f| f + 2 < text.len());
    let (key_end, field) = match arrow {
        Some(f) => (f, Some(&pattern[f + 2..])),
        None => (pattern.len(), None),
    };
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(element);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    let now_ms = ctx.now_ms;
    match (ctx.db().get(&key, now_ms)?, field) {
        (ValueRef::Hash(h), Some(field)) => h.get(field).map(|v| v.to_vec()),
        (ValueRef::Str(s), None) => Some(s.to_vec()),
        _ => None,
    }
}

/// One element being sorted, with what it is compared by.
struct Entry {
    element: Vec<u8>,
    score: f64,
    /// ALPHA with BY: the weight string (`None` when missing).
    weight: Option<Vec<u8>>,
}

/// C's `strcoll` in the C locale: bytes up to the first NUL.
fn strcoll(a: &[u8], b: &[u8]) -> Ordering {
    c_str(a, usize::MAX).cmp(c_str(b, usize::MAX))
}

fn sort_generic(ctx: &mut Ctx, args: &Args, read_only: bool) -> CmdResult {
    let mut o = parse_options(ctx, args, read_only)?;
    let source = load(ctx, &args[1])?;
    let (elements, ordered) = match source {
        Source::List(e) | Source::ZSet(e) => (e, true),
        Source::Set(e) => (e, false),
    };
    // A set's own order is its hash table's: where the result must be
    // reproducible (stored, or in a script) it is sorted as strings.
    if o.dont_sort && !ordered && (o.store.is_some() || ctx.session.in_script) {
        (o.dont_sort, o.alpha, o.by) = (false, true, None);
    }
    let len = elements.len() as i64;
    let start = o.limit.0.clamp(0, len);
    let count = o.limit.1.clamp(-1, len);
    let (mut start, mut end) = (
        start,
        if count < 0 {
            len - 1
        } else {
            start + count - 1
        },
    );
    if start >= len {
        (start, end) = (len - 1, len - 2);
    }
    end = end.min(len - 1);
    // The stored order (reversed by DESC) of a list or sorted set that
    // is not sorted: only the LIMIT's span is loaded.
    let elements: Vec<Vec<u8>> = if o.dont_sort && ordered {
        let span = if end >= start {
            (end - start + 1) as usize
        } else {
            0
        };
        let from = start as usize;
        end -= start;
        start = 0;
        if o.desc {
            elements.into_iter().rev().skip(from).take(span).collect()
        } else {
            elements.into_iter().skip(from).take(span).collect()
        }
    } else {
        elements
    };
    let mut entries: Vec<Entry> = elements
        .into_iter()
        .map(|element| Entry {
            element,
            score: 0.0,
            weight: None,
        })
        .collect();
    let mut bad_weight = false;
    if !o.dont_sort {
        for entry in &mut entries {
            let weight = match o.by {
                Some(pattern) => match by_pattern(ctx, pattern, &entry.element) {
                    Some(w) => w,
                    None => continue,
                },
                None => entry.element.clone(),
            };
            if o.alpha {
                if o.by.is_some() {
                    entry.weight = Some(weight);
                }
            } else {
                match crate::float::parse_sort_weight(&weight) {
                    Some(score) => entry.score = score,
                    None => bad_weight = true,
                }
            }
        }
        let store = o.store.is_some();
        let compare = |a: &Entry, b: &Entry| -> Ordering {
            let order = if !o.alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.element.cmp(&b.element))
            } else if o.by.is_some() {
                match (&a.weight, &b.weight) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) if store => x.cmp(y),
                    (Some(x), Some(y)) => strcoll(x, y),
                }
            } else if store {
                a.element.cmp(&b.element)
            } else {
                strcoll(&a.element, &b.element)
            };
            if o.desc {
                order.reverse()
            } else {
                order
            }
        };
        // Stable, as glibc's qsort (a merge sort) is.
        entries.sort_by(compare);
    }
    if bad_weight {
        return Err(CmdError::Static(
            "ERR One or more scores can't be converted into double",
        ));
    }
    let picked: Vec<Vec<u8>> = if end >= start {
        entries
            .into_iter()
            .skip(start as usize)
            .take((end - start + 1) as usize)
            .map(|e| e.element)
            .collect()
    } else {
        Vec::new()
    };
    reply_or_store(ctx, &o, picked)
}

/// The output: each element, or for each the values its GET patterns
/// name (null when missing; an empty string when stored).
fn reply_or_store(ctx: &mut Ctx, o: &Options, picked: Vec<Vec<u8>>) -> CmdResult {
    let mut rows: Vec<Option<Vec<u8>>> = Vec::new();
    if o.gets.is_empty() {
        rows.extend(picked.into_iter().map(Some));
    } else {
        for element in &picked {
            for pattern in &o.gets {
                rows.push(by_pattern(ctx, pattern, element));
            }
        }
    }
    let Some(dest) = o.store else {
        let out = ctx.out();
        out.array(rows.len());
        for row in &rows {
            match row {
                Some(v) => out.bulk(v),
                None => out.null(),
            }
        }
        return Ok(());
    };
    let count = rows.len();
    let limits = ctx.server.config.list_limits();
    let result = (count > 0).then(|| {
        let mut list = List::default();
        for row in &rows {
            list.push(End::Right, row.as_deref().unwrap_or_default(), limits);
        }
        Value::List(list)
    });
    store_result(
        ctx,
        dest,
        result,
        StrEncoding::Auto,
        (EventClass::LIST, "sortstore"),
    );
    ctx.out().int(count as i64);
    Ok(())
}
