//! Redis's glob-style pattern matching (`stringmatchlen`), used by KEYS,
//! SCAN MATCH and CONFIG GET.
//!
//! `*` any run, `?` any byte, `[abc]`, `[^abc]`, `[a-z]` classes, `\x` a
//! literal x. Matching uses the single-backtrack-point algorithm, so it is
//! O(len(pattern) * len(text)) with no recursion: no pattern can make it
//! blow the stack or take exponential time.

/// Whether `text` matches `pattern`; `nocase` folds ASCII case.
pub fn matches(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where to resume after the last `*`: (pattern index after it, text index).
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            while p < pattern.len() && pattern[p] == b'*' {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            star = Some((p, t));
            continue;
        }
        if let Some(next_p) = match_one(pattern, p, text[t], nocase) {
            p = next_p;
            t += 1;
            continue;
        }
        match star {
            Some((sp, st)) => {
                p = sp;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches one text byte against the pattern token at `p` (not `*`).
/// Returns the index after the token if it matches.
fn match_one(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<usize> {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    match *pattern.get(p)? {
        b'?' => Some(p + 1),
        b'[' => match_class(pattern, p + 1, c, nocase),
        b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], c).then_some(p + 2),
        lit => eq(lit, c).then_some(p + 1),
    }
}

/// Matches `c` against a class whose body starts at `p` (after `[`).
/// An unterminated class ends at the end of the pattern, as in Redis.
fn match_class(pattern: &[u8], mut p: usize, c: u8, nocase: bool) -> Option<usize> {
    let fold = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = fold(c);
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let mut matched = false;
    while p < pattern.len() && pattern[p] != b']' {
        if pattern[p] == b'\\' && p + 1 < pattern.len() {
            p += 1;
            matched |= fold(pattern[p]) == c;
        } else if p + 2 < pattern.len() && pattern[p + 1] == b'-' {
            let (mut lo, mut hi) = (fold(pattern[p]), fold(pattern[p + 2]));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            matched |= (lo..=hi).contains(&c);
            p += 2;
        } else {
            matched |= fold(pattern[p]) == c;
        }
        p += 1;
    }
    let next = (p + 1).min(pattern.len());
    (matched != negate).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn redis_glob_cases() {
        let yes: &[(&str, &str)] = &[
            ("*", ""),
            ("*", "anything"),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("h[b-a]llo", "hbllo"),
            ("h\\*llo", "h*llo"),
            ("*a*b*c*", "xxaxxbxxcxx"),
            ("user:*", "user:1"),
            ("a[b", "ab"),
        ];
        let no: &[(&str, &str)] = &[
            ("h?llo", "hllo"),
            ("h[^e]llo", "hello"),
            ("h[a-b]llo", "hcllo"),
            ("h\\*llo", "hello"),
            ("*a*b*c*", "xxaxxcxxbxx"),
            ("abc", "abcd"),
            ("", "a"),
        ];
        for (p, t) in yes {
            assert!(matches(p.as_bytes(), t.as_bytes(), false), "{p} ~ {t}");
        }
        for (p, t) in no {
            assert!(!matches(p.as_bytes(), t.as_bytes(), false), "{p} !~ {t}");
        }
        assert!(matches(b"HZ", b"hz", true));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let text = vec![b'a'; 10_000];
        let pattern = "*a".repeat(50) + "b";
        assert!(!matches(pattern.as_bytes(), &text, false));
    }
}
