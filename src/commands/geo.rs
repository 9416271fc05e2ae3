//! Geo commands on sorted sets whose scores are 52-bit geohashes: GEOADD
//! (a ZADD of computed scores, propagated as that ZADD), GEODIST, GEOHASH,
//! GEOPOS, and the searches GEORADIUS, GEORADIUSBYMEMBER (and their _RO
//! forms), GEOSEARCH and GEOSEARCHSTORE, all through one `search_generic`
//! as Redis's `georadiusGeneric`. The geometry is `crate::geohash`'s.

use super::aggregate::{read, store_result, ZSET};
use super::zsets::{zadd_generic, AddFlags};
use super::{float_arg, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, StrEncoding};
use crate::float::LongDouble;
use crate::geohash::{self, Search, Shape};
use crate::protocol::{Args, Reply};
use crate::value::{Value, ZSet, ZSetRef};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("geoadd", geoadd),
    ("geodist", geodist),
    ("geohash", geohash_cmd),
    ("geopos", geopos),
    ("georadius", georadius),
    ("georadius_ro", georadius_ro),
    ("georadiusbymember", georadiusbymember),
    ("georadiusbymember_ro", georadiusbymember_ro),
    ("geosearch", geosearch),
    ("geosearchstore", geosearchstore),
];

/// A longitude and latitude at `args[at..at + 2]`, with Redis's errors.
fn lon_lat(args: &Args, at: usize) -> Result<(f64, f64), CmdError> {
    let longitude = float_arg(&args[at])?;
    let latitude = float_arg(&args[at + 1])?;
    if !geohash::valid(longitude, latitude) {
        return Err(CmdError::owned(format!(
            "ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}"
        )));
    }
    Ok((longitude, latitude))
}

/// Meters per unit (`extractUnitOrReply`).
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    match arg {
        u if is(u, "m") => Ok(1.0),
        u if is(u, "km") => Ok(1000.0),
        u if is(u, "ft") => Ok(0.3048),
        u if is(u, "mi") => Ok(1609.34),
        _ => Err(CmdError::Static(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

/// A non-negative number, `what` naming it in the error.
fn dimension(arg: &[u8], what: &'static str) -> Result<f64, CmdError> {
    crate::float::parse_f64(arg).ok_or(CmdError::Static(what))
}

/// `radius unit` at `args[at..]`: the radius shape and meters per unit.
fn radius_arg(args: &Args, at: usize) -> Result<(Shape, f64), CmdError> {
    let radius = dimension(&args[at], "ERR need numeric radius")?;
    if radius < 0.0 {
        return Err(CmdError::Static("ERR radius cannot be negative"));
    }
    Ok((Shape::Radius(radius), unit(&args[at + 1])?))
}

/// `width height unit` at `args[at..]`.
fn box_arg(args: &Args, at: usize) -> Result<(Shape, f64), CmdError> {
    let width = dimension(&args[at], "ERR need numeric width")?;
    let height = dimension(&args[at + 1], "ERR need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err(CmdError::Static("ERR height or width cannot be negative"));
    }
    Ok((Shape::Box(width, height), unit(&args[at + 2])?))
}

fn geoadd(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut first = 2;
    while first < args.len() {
        match &args[first] {
            a if is(a, "nx") => flags.nx = true,
            a if is(a, "xx") => flags.xx = true,
            a if is(a, "ch") => flags.ch = true,
            _ => break,
        }
        first += 1;
    }
    let rest = args.len() - first;
    if rest == 0 || !rest.is_multiple_of(3) || (flags.xx && flags.nx) {
        return Err(CmdError::Syntax);
    }
    let mut pairs: Vec<(f64, &[u8])> = Vec::with_capacity(rest / 3);
    for at in (first..args.len()).step_by(3) {
        let (longitude, latitude) = lon_lat(&args, at)?;
        let score = geohash::score_of(longitude, latitude).unwrap_or(0.0);
        pairs.push((score, &args[at + 2]));
    }
    // Redis runs (and propagates) it as the ZADD it amounts to.
    let scores: Vec<String> = pairs.iter().map(|(s, _)| (*s as u64).to_string()).collect();
    let mut zadd: Vec<&[u8]> = vec![b"zadd"];
    zadd.extend(args.iter().take(first).skip(1));
    for (score, (_, member)) in scores.iter().zip(&pairs) {
        zadd.push(score.as_bytes());
        zadd.push(member);
    }
    ctx.propagate_as(&zadd);
    zadd_generic(ctx, &args[1], flags, &pairs)
}

/// Redis's `addReplyDoubleDistance`: four decimals, rounded half to even
/// (`fixedpoint_d2string` with `llrint`).
fn distance_text(d: f64) -> String {
    let scaled = (d * 10000.0).round_ties_even() as i64;
    let (sign, value) = if scaled < 0 {
        ("-", scaled.unsigned_abs())
    } else {
        ("", scaled as u64)
    };
    format!("{sign}{}.{:04}", value / 10000, value % 10000)
}

/// A coordinate as `addReplyHumanLongDouble` writes it.
fn coordinate(out: &mut Reply, value: f64) {
    out.double_text(&LongDouble::from_f64(value).to_human_string());
}

fn geodist(ctx: &mut Ctx, args: Args) -> CmdResult {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => unit(&args[4])?,
        _ => return Err(CmdError::Syntax),
    };
    let Some(z) = read(ctx, &args[1], &ZSET)? else {
        ctx.out().null();
        return Ok(());
    };
    let positions = (z.score(&args[2]), z.score(&args[3]));
    let out = ctx.out();
    match positions {
        (Some(a), Some(b)) => {
            let ((lon1, lat1), (lon2, lat2)) = (geohash::decode_score(a), geohash::decode_score(b));
            let d = geohash::distance(lon1, lat1, lon2, lat2) / to_meters;
            out.bulk(distance_text(d).as_bytes());
        }
        _ => out.null(),
    }
    Ok(())
}

fn geohash_cmd(ctx: &mut Ctx, args: Args) -> CmdResult {
    let z = read(ctx, &args[1], &ZSET)?;
    let hashes: Vec<Option<String>> = args
        .iter()
        .skip(2)
        .map(|m| z.and_then(|z| z.score(m)).map(geohash::to_base32))
        .collect();
    let out = ctx.out();
    out.array(hashes.len());
    for h in hashes {
        match h {
            Some(h) => out.bulk(h.as_bytes()),
            None => out.null(),
        }
    }
    Ok(())
}

fn geopos(ctx: &mut Ctx, args: Args) -> CmdResult {
    let z = read(ctx, &args[1], &ZSET)?;
    let positions: Vec<Option<(f64, f64)>> = args
        .iter()
        .skip(2)
        .map(|m| z.and_then(|z| z.score(m)).map(geohash::decode_score))
        .collect();
    let out = ctx.out();
    out.array(positions.len());
    for p in positions {
        match p {
            Some((longitude, latitude)) => {
                out.array(2);
                coordinate(out, longitude);
                coordinate(out, latitude);
            }
            None => out.null_array(),
        }
    }
    Ok(())
}

/// Which search command runs (`georadiusGeneric`'s flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// GEORADIUS: a centre given as longitude and latitude.
    Coords { store: bool },
    /// GEORADIUSBYMEMBER: a centre given as a member.
    Member { store: bool },
    /// GEOSEARCH, GEOSEARCHSTORE.
    Search { store: bool },
}

fn georadius(ctx: &mut Ctx, args: Args) -> CmdResult {
    search_generic(ctx, &args, Variant::Coords { store: true })
}

fn georadius_ro(ctx: &mut Ctx, args: Args) -> CmdResult {
    search_generic(ctx, &args, Variant::Coords { store: false })
}

fn georadiusbymember(ctx: &mut Ctx, args: Args) -> CmdResult {
    search_generic(ctx, &args, Variant::Member { store: true })
}

fn georadiusbymember_ro(ctx: &mut Ctx, args: Args) -> CmdResult {
    search_generic(ctx, &args, Variant::Member { store: false })
}

fn geosearch(ctx: &mut Ctx, args: Args) -> CmdResult {
    search_generic(ctx, &args, Variant::Search { store: false })
}

fn geosearchstore(ctx: &mut Ctx, args: Args) -> CmdResult {
    search_generic(ctx, &args, Variant::Search { store: true })
}

/// A search's options after the fixed arguments.
#[derive(Default)]
struct Options<'a> {
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    any: bool,
    /// Some(true) ascending, Some(false) descending.
    ascending: Option<bool>,
    count: usize,
    store: Option<&'a [u8]>,
    store_dist: bool,
    /// GEOSEARCH's centre and shape, once given.
    centre: Option<(f64, f64)>,
    from_member: bool,
    from_lon_lat: bool,
    shape: Option<(Shape, f64)>,
}

/// One match: member, distance (meters, then the unit), score, position.
struct Point {
    member: Vec<u8>,
    dist: f64,
    score: f64,
    longitude: f64,
    latitude: f64,
}

/// A member's position, or Redis's error for a member not there.
fn member_position(z: ZSetRef<'_>, member: &[u8]) -> Result<(f64, f64), CmdError> {
    z.score(member)
        .map(geohash::decode_score)
        .ok_or(CmdError::Static(
            "ERR could not decode requested zset member",
        ))
}

/// Parses the options from `args[from..]` in Redis's order of checks
/// (GEOSEARCH's FROMMEMBER is resolved against `z` as it is met).
fn parse_options<'a>(
    args: &Args<'a>,
    from: usize,
    variant: Variant,
    z: Option<ZSetRef<'_>>,
) -> Result<Options<'a>, CmdError> {
    let mut o = Options::default();
    let geosearch = matches!(variant, Variant::Search { .. });
    let keyword_store = matches!(
        variant,
        Variant::Coords { store: true } | Variant::Member { store: true }
    );
    let mut i = from;
    while i < args.len() {
        let (arg, left) = (&args[i], args.len() - i - 1);
        match arg {
            a if is(a, "withdist") => o.with_dist = true,
            a if is(a, "withhash") => o.with_hash = true,
            a if is(a, "withcoord") => o.with_coord = true,
            a if is(a, "any") => o.any = true,
            a if is(a, "asc") => o.ascending = Some(true),
            a if is(a, "desc") => o.ascending = Some(false),
            a if is(a, "count") && left >= 1 => {
                let count = int_arg(&args[i + 1])?;
                if count <= 0 {
                    return Err(CmdError::Static("ERR COUNT must be > 0"));
                }
                o.count = usize::try_from(count).unwrap_or(usize::MAX);
                i += 1;
            }
            a if (is(a, "store") || is(a, "storedist")) && left >= 1 && keyword_store => {
                o.store = Some(args.get(i + 1));
                o.store_dist = is(a, "storedist");
                i += 1;
            }
            a if is(a, "storedist") && variant == (Variant::Search { store: true }) => {
                o.store_dist = true;
            }
            a if is(a, "frommember") && left >= 1 && geosearch && !o.from_lon_lat => {
                if let Some(z) = z {
                    o.centre = Some(member_position(z, &args[i + 1])?);
                }
                o.from_member = true;
                i += 1;
            }
            a if is(a, "fromlonlat") && left >= 2 && geosearch && !o.from_member => {
                o.centre = Some(lon_lat(args, i + 1)?);
                o.from_lon_lat = true;
                i += 2;
            }
            a if is(a, "byradius")
                && left >= 2
                && geosearch
                && !matches!(o.shape, Some((Shape::Box(..), _))) =>
            {
                o.shape = Some(radius_arg(args, i + 1)?);
                i += 2;
            }
            a if is(a, "bybox")
                && left >= 3
                && geosearch
                && !matches!(o.shape, Some((Shape::Radius(_), _))) =>
            {
                o.shape = Some(box_arg(args, i + 1)?);
                i += 3;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    Ok(o)
}

/// `georadiusGeneric`: every search command, in Redis's order of checks.
fn search_generic(ctx: &mut Ctx, args: &Args, variant: Variant) -> CmdResult {
    let src = if variant == (Variant::Search { store: true }) {
        2
    } else {
        1
    };
    let z = read(ctx, &args[src], &ZSET)?;
    let mut centre = None;
    let mut shape = None;
    let options_at = match variant {
        Variant::Coords { .. } => {
            centre = Some(lon_lat(args, 2)?);
            shape = Some(radius_arg(args, 4)?);
            6
        }
        Variant::Member { .. } => {
            if let Some(z) = z {
                centre = Some(member_position(z, &args[2])?);
                shape = Some(radius_arg(args, 3)?);
            }
            5
        }
        Variant::Search { .. } => src + 1,
    };
    let mut o = parse_options(args, options_at, variant, z)?;
    if variant == (Variant::Search { store: true }) {
        o.store = Some(args.get(1));
    }
    if o.store.is_some() && (o.with_dist || o.with_hash || o.with_coord) {
        let what = match variant {
            Variant::Search { .. } => "GEOSEARCHSTORE",
            _ => "STORE option in GEORADIUS",
        };
        return Err(CmdError::owned(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    if let Variant::Search { .. } = variant {
        // The command's name as typed, for the errors.
        let name = String::from_utf8_lossy(super::c_str(&args[0], usize::MAX));
        if !o.from_lon_lat && !o.from_member {
            return Err(CmdError::owned(format!(
                "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
            )));
        }
        if o.shape.is_none() {
            return Err(CmdError::owned(format!(
                "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
            )));
        }
        centre = o.centre;
        shape = o.shape;
    }
    if o.any && o.count == 0 {
        return Err(CmdError::Static(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    let (Some(z), Some((longitude, latitude)), Some((shape, conversion))) = (z, centre, shape)
    else {
        // No source: an empty result (a STORE deletes its destination).
        return reply_or_store(ctx, &o, variant, Vec::new(), 1.0);
    };
    let search = Search {
        longitude,
        latitude,
        shape,
        conversion,
    };
    let limit = if o.any { o.count } else { 0 };
    let mut points = points_in_boxes(z, &search, limit);
    if o.count != 0 && o.ascending.is_none() && !o.any {
        o.ascending = Some(true);
    }
    if let Some(ascending) = o.ascending {
        // Stable, as glibc's qsort (a merge sort) keeps equal distances.
        points.sort_by(|a, b| {
            let order = a
                .dist
                .partial_cmp(&b.dist)
                .unwrap_or(std::cmp::Ordering::Equal);
            if ascending {
                order
            } else {
                order.reverse()
            }
        });
    }
    if o.count != 0 {
        points.truncate(o.count);
    }
    reply_or_store(ctx, &o, variant, points, conversion)
}

/// Every member inside the search's shape, box by box in Redis's order
/// (a box equal to the previous one skipped), stopping at `limit` (ANY).
fn points_in_boxes(z: ZSetRef<'_>, search: &Search, limit: usize) -> Vec<Point> {
    let boxes = search.boxes();
    let mut points = Vec::new();
    let mut last: Option<usize> = None;
    for (i, hash) in boxes.iter().enumerate() {
        if hash.bits == 0 && hash.step == 0 {
            continue;
        }
        if last.is_some_and(|l| boxes[l] == *hash) {
            continue;
        }
        if limit != 0 && points.len() >= limit {
            break;
        }
        let (min, max) = geohash::score_range(*hash);
        let start = z.count_before(|e| e.score < min);
        for e in z.iter_from(start, false) {
            if e.score >= max {
                break;
            }
            let (longitude, latitude) = geohash::decode_score(e.score);
            if let Some(dist) = search.distance_within(longitude, latitude) {
                points.push(Point {
                    member: e.member.to_vec(),
                    dist,
                    score: e.score,
                    longitude,
                    latitude,
                });
            }
            if limit != 0 && points.len() >= limit {
                break;
            }
        }
        last = Some(i);
    }
    points
}

fn reply_or_store(
    ctx: &mut Ctx,
    o: &Options,
    variant: Variant,
    points: Vec<Point>,
    conversion: f64,
) -> CmdResult {
    let Some(dest) = o.store else {
        let out = ctx.out();
        let extras =
            usize::from(o.with_dist) + usize::from(o.with_hash) + usize::from(o.with_coord);
        out.array(points.len());
        for p in &points {
            if extras > 0 {
                out.array(extras + 1);
            }
            out.bulk(&p.member);
            if o.with_dist {
                out.bulk(distance_text(p.dist / conversion).as_bytes());
            }
            if o.with_hash {
                out.int(geohash::c_to_i64(p.score));
            }
            if o.with_coord {
                out.array(2);
                coordinate(out, p.longitude);
                coordinate(out, p.latitude);
            }
        }
        return Ok(());
    };
    let count = points.len();
    let result = (!points.is_empty()).then(|| {
        let limits = ctx.server.config.zset_limits();
        let mut z = ZSet::Tree(Box::default());
        for p in &points {
            let score = if o.store_dist {
                p.dist / conversion
            } else {
                p.score
            };
            z.insert(&p.member, score, limits);
        }
        z.pack_if_fit(limits);
        Value::ZSet(z)
    });
    let event = match variant {
        Variant::Search { .. } => "geosearchstore",
        _ => "georadiusstore",
    };
    store_result(
        ctx,
        dest,
        result,
        StrEncoding::Auto,
        (EventClass::ZSET, event),
    );
    ctx.out().int(count as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_have_four_decimals_rounded_half_even() {
        assert_eq!(distance_text(166274.15156960033), "166274.1516");
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(0.00004), "0.0000");
        assert_eq!(distance_text(1.5), "1.5000");
        assert_eq!(distance_text(-2.25), "-2.2500");
    }
}
