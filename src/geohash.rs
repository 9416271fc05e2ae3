//! Geohashes as Redis computes them, so that GEOADD's scores and every
//! search, distance and position equal redis-server's: 52-bit interleaved
//! hashes over longitude -180..180 and latitude -85.05112878..85.05112878
//! (Web Mercator's limits), the nine-box search around a shape, and the
//! haversine distance on a sphere of 6372797.560856 m.
//!
//! Pure arithmetic; the commands live in `commands::geo`.

pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Bits per coordinate of a stored score (26 * 2 = 52).
pub const STEP_MAX: u8 = 26;
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

/// A geohash of `step` bits per coordinate (latitude bits at even
/// positions, longitude at odd). Zero bits and step mean "no box".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hash {
    pub bits: u64,
    pub step: u8,
}

impl Hash {
    fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The cell a hash covers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

const WGS84: (Range, Range) = (
    Range {
        min: LONG_MIN,
        max: LONG_MAX,
    },
    Range {
        min: LAT_MIN,
        max: LAT_MAX,
    },
);

fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (u64::from(xlo), u64::from(ylo));
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (interleaved, interleaved >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// Whether Redis accepts the pair as a position.
pub fn valid(longitude: f64, latitude: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&longitude) && (LAT_MIN..=LAT_MAX).contains(&latitude)
}

/// `geohashEncode` over the given ranges; `None` outside them.
pub fn encode(ranges: (Range, Range), longitude: f64, latitude: f64, step: u8) -> Option<Hash> {
    if !valid(longitude, latitude) {
        return None;
    }
    let (long_range, lat_range) = ranges;
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    Some(Hash {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<Hash> {
    encode(WGS84, longitude, latitude, step)
}

/// The 52-bit score GEOADD stores for a position.
pub fn score_of(longitude: f64, latitude: f64) -> Option<f64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(|h| align52(h) as f64)
}

/// The hash moved to the top of 52 bits (a score).
pub fn align52(hash: Hash) -> u64 {
    hash.bits << (52 - u32::from(hash.step) * 2)
}

/// The cell of `hash` over the given ranges (`geohashDecode`).
pub fn decode(ranges: (Range, Range), hash: Hash) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let (long_range, lat_range) = ranges;
    let separated = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = separated as u32;
    let ilono = (separated >> 32) as u32;
    let cells = (1u64 << hash.step) as f64;
    Some(Area {
        latitude: Range {
            min: lat_range.min + (f64::from(ilato) / cells) * lat_scale,
            max: lat_range.min + ((f64::from(ilato) + 1.0) / cells) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (f64::from(ilono) / cells) * long_scale,
            max: long_range.min + ((f64::from(ilono) + 1.0) / cells) * long_scale,
        },
    })
}

/// C's `(uint64_t)` of a double as x86-64 computes it (a score that is
/// not a geohash still decodes to something, the same as in Redis).
fn c_to_u64(d: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d < TWO_63 {
        // Below -2^63 the CPU gives "integer indefinite", i64::MIN, as
        // Rust's saturation does.
        (d as i64) as u64
    } else if d - TWO_63 < TWO_63 {
        ((d - TWO_63) as i64 as u64) ^ (1 << 63)
    } else {
        // 2^64 and beyond, infinity, NaN: indefinite, then the top bit
        // flipped back.
        0
    }
}

/// C's `(long long)` of a double on x86-64: "integer indefinite"
/// (`i64::MIN`) when it does not fit.
pub fn c_to_i64(d: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d.is_nan() || !(-TWO_63..TWO_63).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// The position a stored score stands for: its cell's centre, clamped.
pub fn decode_score(score: f64) -> (f64, f64) {
    let hash = Hash {
        bits: c_to_u64(score),
        step: STEP_MAX,
    };
    let area = decode(WGS84, hash).unwrap_or_default();
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (longitude, latitude)
}

/// GEOHASH's 11-character string: the position re-encoded over the
/// standard -90..90 latitude range.
pub fn to_base32(score: f64) -> String {
    const ALPHABET: &[u8] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (longitude, latitude) = decode_score(score);
    let standard = (
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
    );
    let bits = encode(standard, longitude, latitude, STEP_MAX).map_or(0, |h| h.bits);
    (0..11)
        .map(|i| {
            let idx = if i == 10 {
                0
            } else {
                (bits >> (52 - (i + 1) * 5)) & 0x1f
            };
            char::from(ALPHABET[idx as usize])
        })
        .collect()
}

/// Moves `hash` one cell along the axis whose bits `axis` marks
/// (`geohash_move_x` with the odd bits, `geohash_move_y` with the even).
fn move_along(hash: &mut Hash, d: i8, axis: u64) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let mut v = hash.bits & axis;
    let other = hash.bits & !axis;
    let zz = (!axis).checked_shr(shift).unwrap_or(0);
    if d > 0 {
        v = v.wrapping_add(zz + 1);
    } else {
        v |= zz;
        v = v.wrapping_sub(zz + 1);
    }
    v &= axis.checked_shr(shift).unwrap_or(0);
    hash.bits = v | other;
}

const X_BITS: u64 = 0xaaaaaaaaaaaaaaaa;
const Y_BITS: u64 = 0x5555555555555555;

/// A search shape around a centre, in the unit of `conversion` (meters
/// per unit).
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    Radius(f64),
    /// Width, height.
    Box(f64, f64),
}

#[derive(Debug, Clone, Copy)]
pub struct Search {
    pub longitude: f64,
    pub latitude: f64,
    pub shape: Shape,
    pub conversion: f64,
}

/// `geohashEstimateStepsByRadius`.
fn steps_by_radius(mut range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

fn deg_rad(angle: f64) -> f64 {
    angle * D_R
}

fn rad_deg(angle: f64) -> f64 {
    angle / D_R
}

impl Search {
    /// Min longitude, min latitude, max longitude, max latitude of the
    /// shape's bounding box (`geohashBoundingBox`).
    fn bounds(&self) -> [f64; 4] {
        let (height, width) = match self.shape {
            Shape::Radius(r) => (r, r),
            Shape::Box(w, h) => (h / 2.0, w / 2.0),
        };
        let (height, width) = (height * self.conversion, width * self.conversion);
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude - lat_delta).cos());
        let long_delta = if self.latitude < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.longitude - long_delta,
            self.latitude - lat_delta,
            self.longitude + long_delta,
            self.latitude + lat_delta,
        ]
    }

    /// The nine boxes to scan, centre first, then north, south, east,
    /// west, north-east, north-west, south-east, south-west, the useless
    /// ones zeroed (`geohashCalculateAreasByShapeWGS84`).
    pub fn boxes(&self) -> [Hash; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius_meters = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
        } * self.conversion;
        let mut steps = steps_by_radius(radius_meters, self.latitude);
        let centre = |steps| encode_wgs84(self.longitude, self.latitude, steps).unwrap_or_default();
        let mut hash = centre(steps);
        let mut n = neighbors(hash);
        let cell = |h: Hash| decode(WGS84, h).unwrap_or_default();
        let decrease = cell(n[1]).latitude.max < max_lat
            || cell(n[2]).latitude.min > min_lat
            || cell(n[3]).longitude.max < max_lon
            || cell(n[4]).longitude.min > min_lon;
        if steps > 1 && decrease {
            steps -= 1;
            hash = centre(steps);
            n = neighbors(hash);
        }
        let area = cell(hash);
        if steps >= 2 {
            let zero = |n: &mut [Hash; 9], which: [usize; 3]| {
                which.iter().for_each(|&i| n[i] = Hash::default());
            };
            if area.latitude.min < min_lat {
                zero(&mut n, [2, 8, 7]);
            }
            if area.latitude.max > max_lat {
                zero(&mut n, [1, 5, 6]);
            }
            if area.longitude.min < min_lon {
                zero(&mut n, [4, 8, 6]);
            }
            if area.longitude.max > max_lon {
                zero(&mut n, [3, 7, 5]);
            }
        }
        n
    }

    /// The distance in meters from the centre to a position inside the
    /// shape, `None` outside it (`geoWithinShape`).
    pub fn distance_within(&self, longitude: f64, latitude: f64) -> Option<f64> {
        match self.shape {
            Shape::Radius(r) => {
                let d = distance(self.longitude, self.latitude, longitude, latitude);
                (d <= r * self.conversion).then_some(d)
            }
            Shape::Box(w, h) => {
                let (width_m, height_m) = (w * self.conversion, h * self.conversion);
                if lat_distance(latitude, self.latitude) > height_m / 2.0 {
                    return None;
                }
                if distance(longitude, latitude, self.longitude, latitude) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.longitude, self.latitude, longitude, latitude))
            }
        }
    }
}

/// The hash itself, then its eight neighbours in Redis's order (north,
/// south, east, west, north-east, north-west, south-east, south-west).
fn neighbors(hash: Hash) -> [Hash; 9] {
    let moved = |dx: i8, dy: i8| {
        let mut h = hash;
        move_along(&mut h, dx, X_BITS);
        move_along(&mut h, dy, Y_BITS);
        h
    };
    [
        hash,
        moved(0, 1),
        moved(0, -1),
        moved(1, 0),
        moved(-1, 0),
        moved(1, 1),
        moved(-1, 1),
        moved(1, -1),
        moved(-1, -1),
    ]
}

/// The score range `[min, max)` holding every position inside `hash`.
pub fn score_range(hash: Hash) -> (f64, f64) {
    let min = align52(hash);
    let max = align52(Hash {
        bits: hash.bits + 1,
        step: hash.step,
    });
    (min as f64, max as f64)
}

fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// The haversine distance in meters (`geohashGetDistance`).
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let (lon1r, lon2r) = (deg_rad(lon1d), deg_rad(lon2d));
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let (lat1r, lat2r) = (deg_rad(lat1d), deg_rad(lat2d));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_and_positions_match_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo" in redis-server:
        // score 3479099956230698, GEOPOS 13.36138933897018433
        // 38.11555639549629859, GEOHASH sqc8b49rny0.
        let score = score_of(13.361389, 38.115556).unwrap();
        assert_eq!(score, 3479099956230698.0);
        let (lon, lat) = decode_score(score);
        assert_eq!((lon, lat), (13.361389338970184, 38.1155563954963));
        assert_eq!(to_base32(score), "sqc8b49rny0");
    }

    #[test]
    fn distance_matches_redis() {
        // GEODIST Sicily Palermo Catania: 166274.1516 m.
        let (a, b) = (
            decode_score(score_of(13.361389, 38.115556).unwrap()),
            decode_score(score_of(15.087269, 37.502669).unwrap()),
        );
        let d = distance(a.0, a.1, b.0, b.1);
        assert!((d - 166274.1516).abs() < 0.0001, "{d}");
    }

    #[test]
    fn interleaving_round_trips() {
        let bits = interleave64(0x1234567, 0x2abcdef);
        let back = deinterleave64(bits);
        assert_eq!((back as u32, (back >> 32) as u32), (0x1234567, 0x2abcdef));
    }

    #[test]
    fn out_of_range_positions_are_refused() {
        assert!(score_of(181.0, 0.0).is_none());
        assert!(score_of(0.0, 86.0).is_none());
        assert!(score_of(-180.0, -85.05112878).is_some());
    }
}
