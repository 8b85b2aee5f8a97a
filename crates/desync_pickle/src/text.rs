//! Argument decoders for the text opcodes of protocol 0 and for LONG bytes.
//!
//! Role: turn the newline-terminated arguments of INT/LONG/FLOAT/STRING/
//! UNICODE/PUT/GET into values, following what Python's `pickle.py` does
//! with them (`int(x, 0)`, `float(x)`, `codecs.escape_decode`,
//! `raw-unicode-escape`). Invariants: pure functions, no panics on any input,
//! and no work or allocation super-linear in the argument length (decimal
//! literals longer than Python's default 4300-digit limit are refused, so
//! big-number conversion stays cheap).

/// Python's default `sys.int_info.default_max_str_digits`.
const MAX_INT_DIGITS: usize = 4300;

/// An integer parsed from text: fits `i64`, or little-endian two's
/// complement bytes (minimal length) when it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextInt {
    Small(i64),
    Big(Vec<u8>),
}

/// Parses an integer literal the way `int(x, 0)` does for the forms picklers
/// write: surrounding ASCII whitespace, optional sign, optional `0x`/`0o`/`0b`
/// prefix, digits with single `_` separators. Leading zeros are accepted
/// (Python refuses them with base 0; being lenient loses nothing here).
pub(crate) fn parse_int(text: &[u8]) -> Option<TextInt> {
    let mut s = text.trim_ascii();
    let negative = match s.first() {
        Some(b'-') => {
            s = &s[1..];
            true
        }
        Some(b'+') => {
            s = &s[1..];
            false
        }
        _ => false,
    };
    let mut base = 10u32;
    if s.len() >= 2 && s[0] == b'0' {
        let prefix_base = match s[1] {
            b'x' | b'X' => Some(16),
            b'o' | b'O' => Some(8),
            b'b' | b'B' => Some(2),
            _ => None,
        };
        if let Some(b) = prefix_base {
            base = b;
            s = &s[2..];
            // `int("0x_ff", 0)` is valid: one underscore may follow the prefix.
            if s.first() == Some(&b'_') {
                s = &s[1..];
            }
        }
    }
    if s.is_empty() || s.len() > MAX_INT_DIGITS * 2 {
        return None;
    }
    // Magnitude as little-endian u32 limbs; starts as one limb so that the
    // common small case never reallocates.
    let mut limbs: Vec<u32> = vec![0];
    let mut digits = 0usize;
    let mut prev_underscore = true; // forbids a leading '_'
    for &c in s {
        if c == b'_' {
            if prev_underscore {
                return None;
            }
            prev_underscore = true;
            continue;
        }
        prev_underscore = false;
        let d = (c as char).to_digit(base)?;
        digits += 1;
        if digits > MAX_INT_DIGITS {
            return None;
        }
        let mut carry = u64::from(d);
        for limb in &mut limbs {
            let v = u64::from(*limb) * u64::from(base) + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            limbs.push(carry as u32);
        }
    }
    if prev_underscore {
        // Trailing underscore (or no digits at all).
        return None;
    }
    Some(from_magnitude(negative, &limbs))
}

fn from_magnitude(negative: bool, limbs: &[u32]) -> TextInt {
    let mut mag: Vec<u8> = limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
    while mag.len() > 1 && mag.last() == Some(&0) {
        mag.pop();
    }
    if mag.len() <= 8 {
        let mut buf = [0u8; 8];
        buf[..mag.len()].copy_from_slice(&mag);
        let m = u64::from_le_bytes(buf);
        if !negative && i64::try_from(m).is_ok() {
            return TextInt::Small(m as i64);
        }
        if negative && m <= 1u64 << 63 {
            return TextInt::Small((m as i64).wrapping_neg());
        }
    }
    if negative {
        // Two's complement: invert and add one over the magnitude's width.
        let mut carry = true;
        for b in &mut mag {
            let (v, c) = (!*b).overflowing_add(u8::from(carry));
            *b = v;
            carry = c;
        }
        if mag.last().is_some_and(|b| b & 0x80 == 0) {
            mag.push(0xff);
        }
    } else if mag.last().is_some_and(|b| b & 0x80 != 0) {
        mag.push(0);
    }
    TextInt::Big(mag)
}

/// Reads little-endian two's complement bytes (LONG1/LONG4 payload) as an
/// `i64`, or `None` when the value does not fit. Empty means 0.
pub(crate) fn le_to_i64(bytes: &[u8]) -> Option<i64> {
    let Some(&last) = bytes.last() else {
        return Some(0);
    };
    let fill = if last & 0x80 != 0 { 0xff } else { 0 };
    let mut buf = [fill; 8];
    if bytes.len() <= 8 {
        buf[..bytes.len()].copy_from_slice(bytes);
    } else {
        // Longer encodings fit only if every byte past the eighth is pure
        // sign extension of the eighth byte's top bit.
        let ext = if bytes[7] & 0x80 != 0 { 0xff } else { 0 };
        if bytes[8..].iter().any(|&b| b != ext) {
            return None;
        }
        buf.copy_from_slice(&bytes[..8]);
    }
    Some(i64::from_le_bytes(buf))
}

/// Parses a FLOAT argument (`repr(float)` text, also `inf`/`nan`).
pub(crate) fn parse_float(text: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(text.trim_ascii()).ok()?;
    s.parse::<f64>().ok()
}

/// Parses a PUT/GET argument: a non-negative decimal memo index.
pub(crate) fn parse_index(text: &[u8]) -> Option<u64> {
    match parse_int(text)? {
        TextInt::Small(v) => u64::try_from(v).ok(),
        TextInt::Big(_) => None,
    }
}

/// `codecs.escape_decode`: the Python 2 `str` escapes used by the STRING
/// opcode. Returns `None` for the inputs Python rejects (bad `\x`, trailing
/// backslash).
pub(crate) fn escape_decode(src: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(src.len());
    let mut pos = 0;
    while pos < src.len() {
        let byte = src[pos];
        pos += 1;
        if byte != b'\\' {
            out.push(byte);
            continue;
        }
        let esc = *src.get(pos)?;
        pos += 1;
        match esc {
            b'\n' => {}
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut value = u32::from(esc - b'0');
                for _ in 0..2 {
                    match src.get(pos) {
                        Some(&digit @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(digit - b'0');
                            pos += 1;
                        }
                        _ => break,
                    }
                }
                out.push(value as u8); // Python keeps the low 8 bits too
            }
            b'x' => {
                let hi = (*src.get(pos)? as char).to_digit(16)?;
                let lo = (*src.get(pos + 1)? as char).to_digit(16)?;
                pos += 2;
                out.push((hi * 16 + lo) as u8);
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// `raw-unicode-escape` decoding (UNICODE opcode). Bytes are Latin-1 code
/// points except `\uXXXX` / `\UXXXXXXXX` after an odd run of backslashes.
/// Lone surrogates (valid in Python `str`, not in Rust) become U+FFFD; the
/// second value says whether that happened.
pub(crate) fn raw_unicode_escape_decode(s: &[u8]) -> Option<(String, bool)> {
    let mut out = String::with_capacity(s.len());
    let mut lossy = false;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c != b'\\' {
            out.push(char::from(c));
            i += 1;
            continue;
        }
        let run_start = i;
        while i < s.len() && s[i] == b'\\' {
            i += 1;
        }
        let run = i - run_start;
        let escape = run % 2 == 1 && matches!(s.get(i), Some(b'u' | b'U'));
        let literal = if escape { run - 1 } else { run };
        out.extend(std::iter::repeat_n('\\', literal));
        if !escape {
            continue;
        }
        let width = if s[i] == b'u' { 4 } else { 8 };
        i += 1;
        let hex = s.get(i..i + width)?;
        let mut v: u32 = 0;
        for &h in hex {
            v = v.checked_mul(16)? + (h as char).to_digit(16)?;
        }
        i += width;
        if v > 0x10_ffff {
            return None;
        }
        if let Some(ch) = char::from_u32(v) {
            out.push(ch);
        } else {
            out.push('\u{fffd}');
            lossy = true;
        }
    }
    Some((out, lossy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints() {
        assert_eq!(parse_int(b"0"), Some(TextInt::Small(0)));
        assert_eq!(parse_int(b" -42 "), Some(TextInt::Small(-42)));
        assert_eq!(parse_int(b"+7"), Some(TextInt::Small(7)));
        assert_eq!(parse_int(b"0x_ff"), Some(TextInt::Small(255)));
        assert_eq!(parse_int(b"0b101"), Some(TextInt::Small(5)));
        assert_eq!(parse_int(b"1_000"), Some(TextInt::Small(1000)));
        assert_eq!(parse_int(b"9223372036854775807"), Some(TextInt::Small(i64::MAX)));
        assert_eq!(parse_int(b"-9223372036854775808"), Some(TextInt::Small(i64::MIN)));
        // 2**63 and -(2**63)-1 need nine bytes.
        assert_eq!(
            parse_int(b"9223372036854775808"),
            Some(TextInt::Big(vec![0, 0, 0, 0, 0, 0, 0, 0x80, 0]))
        );
        assert_eq!(
            parse_int(b"-9223372036854775809"),
            Some(TextInt::Big(vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff]))
        );
        // 2**64 = 1 followed by 8 zero bytes.
        assert_eq!(
            parse_int(b"18446744073709551616"),
            Some(TextInt::Big(vec![0, 0, 0, 0, 0, 0, 0, 0, 1]))
        );
        for bad in [&b""[..], b"-", b"_1", b"1_", b"1__0", b"12a", b"0x", b"1.5"] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
        let long = vec![b'9'; MAX_INT_DIGITS + 1];
        assert_eq!(parse_int(&long), None);
    }

    #[test]
    fn le_bytes() {
        assert_eq!(le_to_i64(&[]), Some(0));
        assert_eq!(le_to_i64(&[0xff]), Some(-1));
        assert_eq!(le_to_i64(&[0x80, 0x00]), Some(128));
        assert_eq!(le_to_i64(&[0xff; 12]), Some(-1));
        assert_eq!(le_to_i64(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0]), None);
        assert_eq!(le_to_i64(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0]), Some(1));
    }

    #[test]
    fn escapes() {
        assert_eq!(escape_decode(br"a\nb\x41\101\\\'"), Some(b"a\nbAA\\'".to_vec()));
        assert_eq!(escape_decode(br"\q"), Some(b"\\q".to_vec()));
        assert_eq!(escape_decode(b"\\"), None);
        assert_eq!(escape_decode(br"\x4"), None);
        assert_eq!(
            raw_unicode_escape_decode(br"caf\xe9 \u20ac \U0001f600 \\u0041"),
            Some(("caf\\xe9 \u{20ac} \u{1f600} \\\\u0041".to_string(), false))
        );
        assert_eq!(raw_unicode_escape_decode(b"\xe9"), Some(("\u{e9}".to_string(), false)));
        assert_eq!(raw_unicode_escape_decode(br"\ud800"), Some(("\u{fffd}".to_string(), true)));
        assert_eq!(raw_unicode_escape_decode(br"\u12"), None);
        assert_eq!(raw_unicode_escape_decode(br"\U00110000"), None);
    }

    #[test]
    fn floats_and_indexes() {
        assert_eq!(parse_float(b"1.5"), Some(1.5));
        assert_eq!(parse_float(b" -2e-3 "), Some(-2e-3));
        assert!(parse_float(b"nan").is_some_and(f64::is_nan));
        assert_eq!(parse_float(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"x"), None);
        assert_eq!(parse_index(b"12"), Some(12));
        assert_eq!(parse_index(b"-1"), None);
    }
}
