//! What a scalar means to kubectl: go-yaml v2's YAML 1.1 rules
//! (`resolve.go` and `decode.go`, go.yaml.in/yaml/v2 v2.4.4, which
//! sigs.k8s.io/yaml v1.6.0 and so kubectl 1.37 use), then how
//! sigs.k8s.io/yaml turns the value into JSON: `yes`, `on`, `y` are true,
//! `0400` is 256, `0x1F` 31, `1_000` 1000, `~` null; quoted, literal and
//! folded scalars are strings unless a tag says otherwise; a mapping's key
//! becomes a string as sigs.k8s.io/yaml writes it (`on:` is `"true"`).
//!
//! Go's number syntax (`strconv.ParseInt` with base 0, `ParseFloat`) and
//! its formatting (`encoding/json`'s floats, `FormatFloat(…, 'g', -1,
//! 32)` for a float key) are written out here: Rust's own parse other
//! strings (`+1`, `inf`) and print floats otherwise.

use std::borrow::Cow;

const TAG: &str = "tag:yaml.org,2002:";

/// A scalar as go-yaml v2 decodes it into `interface{}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar<'v> {
    Null,
    Bool(bool),
    Int(i64),
    /// Beyond `i64`, up to `u64::MAX`.
    Uint(u64),
    Float(f64),
    Str(Cow<'v, str>),
}

/// Why a tagged scalar cannot be what its tag says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch(pub String);

/// The value of a scalar: `tag` as libyaml resolved its handle
/// (`tag:yaml.org,2002:int`), `implicit` when it is plain and untagged
/// (or tagged `!`).
pub fn scalar<'v>(
    tag: Option<&str>,
    value: &'v str,
    implicit: bool,
) -> Result<Scalar<'v>, Mismatch> {
    let Some(tag) = tag.or(implicit.then_some("")) else {
        // Quoted, literal or folded, and untagged.
        return Ok(Scalar::Str(Cow::Borrowed(value)));
    };
    let short = tag.strip_prefix(TAG);
    match short {
        Some("binary") => return binary(value),
        Some("str" | "bool" | "int" | "float" | "null" | "timestamp") => {}
        _ if tag.is_empty() => {}
        // Any other tag (`!`, `!foo`, `!!map` on a scalar): its text.
        _ => return Ok(Scalar::Str(Cow::Borrowed(value))),
    }
    let (found, resolved) = match short {
        Some("str") => ("str", Scalar::Str(Cow::Borrowed(value))),
        _ => plain(value, short),
    };
    match short {
        None | Some("str") => Ok(resolved),
        Some(wanted) if wanted == found => Ok(resolved),
        Some("float") => match resolved {
            Scalar::Int(i) => Ok(Scalar::Float(i as f64)),
            _ => Err(mismatch(found, value, "float")),
        },
        Some(wanted) => Err(mismatch(found, value, wanted)),
    }
}

fn mismatch(found: &str, value: &str, wanted: &str) -> Mismatch {
    Mismatch(format!("cannot decode !!{found} `{value}` as a !!{wanted}"))
}

/// `!!binary`: base64, as Go's standard decoder reads it (line breaks
/// ignored), into a string whose bytes that are not UTF-8 JSON writes as
/// U+FFFD.
fn binary(value: &str) -> Result<Scalar<'_>, Mismatch> {
    match crate::refusals::base64(value) {
        Some(bytes) => Ok(Scalar::Str(Cow::Owned(
            String::from_utf8_lossy(&bytes).into_owned(),
        ))),
        None => Err(Mismatch(
            "!!binary value contains invalid base64 data".to_string(),
        )),
    }
}

/// A plain scalar, or one tagged with a resolvable tag: `(tag found,
/// value)`. `wanted` is the tag asked for (`None` when untagged).
fn plain<'v>(value: &'v str, wanted: Option<&str>) -> (&'static str, Scalar<'v>) {
    let string = ("str", Scalar::Str(Cow::Borrowed(value)));
    if let Some(known) = known(value) {
        return known;
    }
    match value.as_bytes().first() {
        // The hint of go-yaml's table: only these may be anything else.
        Some(b'.') => match go_parse_float(value) {
            Some(f) => ("float", Scalar::Float(f)),
            None => string,
        },
        Some(b'+' | b'-' | b'0'..=b'9') => {
            if matches!(wanted, None | Some("timestamp")) && is_timestamp(value) {
                return ("timestamp", Scalar::Str(Cow::Borrowed(value)));
            }
            let digits = value.replace('_', "");
            if let Some(i) = go_parse_int(&digits) {
                return ("int", Scalar::Int(i));
            }
            if let Some(u) = go_parse_uint(&digits) {
                return ("int", Scalar::Uint(u));
            }
            if yaml_style_float(&digits)
                && let Some(f) = go_parse_float(&digits)
            {
                return ("float", Scalar::Float(f));
            }
            string
        }
        _ => string,
    }
}

/// go-yaml's table of words: YAML 1.1's booleans and nulls, and the
/// floats that are not numbers.
fn known(value: &str) -> Option<(&'static str, Scalar<'static>)> {
    Some(match value {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            ("bool", Scalar::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            ("bool", Scalar::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => ("null", Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => ("float", Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            ("float", Scalar::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => ("float", Scalar::Float(f64::NEG_INFINITY)),
        "<<" => ("merge", Scalar::Str(Cow::Borrowed("<<"))),
        _ => return None,
    })
}

/// Whether `value` is the merge key: plain `<<` (or tagged `!!merge`).
pub fn is_merge(tag: Option<&str>, value: &str, implicit: bool) -> bool {
    value == "<<" && (implicit || tag == Some("tag:yaml.org,2002:merge"))
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, go-yaml's test
/// of a float written as YAML writes one.
fn yaml_style_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s).as_bytes();
    let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = digits(s);
    if i == 0 {
        if s.first() != Some(&b'.') || digits(&s[1..]) == 0 {
            return false;
        }
        i = 1 + digits(&s[1..]);
    } else if s.get(i) == Some(&b'.') {
        i += 1 + digits(&s[i + 1..]);
    }
    match s.get(i) {
        None => true,
        Some(b'e' | b'E') => {
            let rest = &s[i + 1..];
            let rest = rest
                .strip_prefix(b"-")
                .or(rest.strip_prefix(b"+"))
                .unwrap_or(rest);
            !rest.is_empty() && digits(rest) == rest.len()
        }
        _ => false,
    }
}

/// go-yaml's timestamps (`2006-1-2`, with a time after `T`, `t` or a
/// space): only the shape matters here, since a timestamp decoded into
/// `interface{}` stays the string it was, but a tag asking for an int
/// then finds a timestamp.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    // YYYY-M-D, then nothing, or a time.
    let rest = &s[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let mut parts = date.split('-');
    let (Some(month), Some(day), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let number = |s: &str, max: u32| {
        (1..=2).contains(&s.len())
            && s.bytes().all(|b| b.is_ascii_digit())
            && s.parse::<u32>().is_ok_and(|n| (1..=max).contains(&n))
    };
    if !number(month, 12) || !number(day, days_in(month, &s[..4])) {
        return false;
    }
    match time {
        None => true,
        Some(time) => clock(time, s[5..].contains(' ') && !s[5..].contains(['T', 't'])),
    }
}

fn days_in(month: &str, year: &str) -> u32 {
    let (month, year) = (
        month.parse::<u32>().unwrap_or(1),
        year.parse::<u32>().unwrap_or(1),
    );
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `15:4:5.999999999Z07:00` (after `T`), or `15:4:5.999999999` alone
/// after a space: Go's layouts in go-yaml's list.
fn clock(time: &str, space: bool) -> bool {
    let (clock, zone) = match space {
        true => (time, ""),
        false => match time.find(['Z', '+', '-']) {
            Some(at) => (&time[..at], &time[at..]),
            None => return false,
        },
    };
    let mut parts = clock.splitn(3, ':');
    let (Some(h), Some(m), Some(s)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let (s, fraction) = s.split_once('.').unwrap_or((s, ""));
    let field = |s: &str, max: u32| {
        (1..=2).contains(&s.len())
            && s.bytes().all(|b| b.is_ascii_digit())
            && s.parse::<u32>().is_ok_and(|n| n <= max)
    };
    let fraction_ok = fraction.len() <= 9 && fraction.bytes().all(|b| b.is_ascii_digit());
    let zone_ok = match zone {
        "" => space,
        "Z" => true,
        zone => {
            let z = zone.as_bytes();
            z.len() == 6 && z[3] == b':' && field(&zone[1..3], 23) && field(&zone[4..6], 59)
        }
    };
    field(h, 23) && field(m, 59) && field(s, 59) && fraction_ok && zone_ok
}

/// Go's `strconv.ParseUint(s, 0, 64)`: a `0x`, `0o` or `0b` prefix, or a
/// leading `0` for octal; no sign, no underscores (go-yaml took them out).
pub fn go_parse_uint(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (digits, base) = match s.as_bytes() {
        [b'0', p, _, ..] if p.eq_ignore_ascii_case(&b'x') => (&s[2..], 16),
        [b'0', p, _, ..] if p.eq_ignore_ascii_case(&b'o') => (&s[2..], 8),
        [b'0', p, _, ..] if p.eq_ignore_ascii_case(&b'b') => (&s[2..], 2),
        [b'0', ..] => (&s[1..], 8),
        _ => (s, 10),
    };
    parse_digits(digits, base)
}

/// Digits of `base`, none missing, within `u64`.
fn parse_digits(digits: &str, base: u32) -> Option<u64> {
    let mut n: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(base)?;
        n = n.checked_mul(base as u64)?.checked_add(d as u64)?;
    }
    // `0` alone leaves no digits after its prefix, and is 0; a prefix
    // without digits is no number.
    (!digits.is_empty() || base == 8).then_some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)`: a sign, then `ParseUint`'s forms.
pub fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint(rest)?;
    match negative {
        false => i64::try_from(u).ok(),
        true if u <= 1 << 63 => Some((u as i64).wrapping_neg()),
        true => None,
    }
}

/// Go's `strconv.ParseFloat(s, 64)` on what go-yaml gives it: a decimal
/// (go-yaml's regular expression, or a leading `.`); a value beyond the
/// range of `f64` is an error there, and the scalar stays a string.
fn go_parse_float(s: &str) -> Option<f64> {
    // The `.` hint hands the text as it is: Go reads decimals only here
    // (a hexadecimal float starts `0x`, `inf` is not reached).
    if !yaml_style_float(s) {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// How `encoding/json` writes a float: the shortest decimal that reads
/// back the same, in exponent form below 1e-6 and from 1e21. `None` for
/// NaN and the infinities, which it refuses (so kubectl refuses the
/// document: `json: unsupported value: +Inf`).
pub fn json_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes `1e21` and `1.5e-7`; Go `1e+21` and `1.5e-7`.
        let text = format!("{f:e}");
        return Some(match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                format!("{mantissa}e+{exponent}")
            }
            _ => text,
        });
    }
    Some(format!("{f}"))
}

/// Go's message for a float JSON cannot hold.
pub fn unsupported(f: f64) -> &'static str {
    match f {
        f if f.is_nan() => "NaN",
        f if f > 0.0 => "+Inf",
        _ => "-Inf",
    }
}

/// A mapping's key as sigs.k8s.io/yaml makes it a JSON object's key; an
/// error for the keys it cannot (null, an integer beyond `i64`).
pub fn key(scalar: &Scalar<'_>) -> Result<String, String> {
    Ok(match scalar {
        Scalar::Str(s) => s.to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Float(f) => float_key(*f),
        Scalar::Null => return Err("a key that is null (`~`, `null` or nothing)".to_string()),
        Scalar::Uint(u) => {
            return Err(format!(
                "a key that is an integer beyond a signed 64-bit one ({u})"
            ));
        }
    })
}

/// `strconv.FormatFloat(f, 'g', -1, 32)`, with go-yaml's names for the
/// floats that are not numbers: the shortest digits of the float32
/// nearest, in exponent form from an exponent of 6 or below -4.
fn float_key(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.to_string();
    }
    let single = f as f32;
    if single.is_infinite() {
        // Beyond float32: Go writes `+Inf`, which sigs.k8s.io/yaml names.
        return if single > 0.0 { ".inf" } else { "-.inf" }.to_string();
    }
    let sign = if single.is_sign_negative() { "-" } else { "" };
    if single == 0.0 {
        return format!("{sign}0");
    }
    // `1.234567e6`: the digits and the decimal exponent.
    let text = format!("{:e}", single.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let rest = &digits[1..];
        let point = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let (esign, e) = if exponent < 0 {
            ('-', -exponent)
        } else {
            ('+', exponent)
        };
        return format!("{sign}{}{point}e{esign}{e:02}", &digits[..1]);
    }
    // Plain: the point `exponent + 1` digits in.
    let point = exponent + 1;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        format!(
            "{}.{}",
            &digits[..point as usize],
            &digits[point as usize..]
        )
    };
    format!("{sign}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_value(text: &str) -> Scalar<'_> {
        scalar(None, text, true).unwrap()
    }

    /// Each class of plain scalar, as go-yaml v2 decodes it.
    #[test]
    fn plain_scalars_by_yaml_1_1() {
        use Scalar::*;
        let s = |t: &'static str| Str(Cow::Borrowed(t));
        for (text, expected) in [
            ("yes", Bool(true)),
            ("Y", Bool(true)),
            ("on", Bool(true)),
            ("OFF", Bool(false)),
            ("n", Bool(false)),
            ("yEs", s("yEs")),
            ("~", Null),
            ("", Null),
            ("Null", Null),
            ("0400", Int(256)),
            ("0755", Int(493)),
            ("08", Float(8.0)),
            ("0o17", Int(15)),
            ("0x1F", Int(31)),
            ("-0x1F", Int(-31)),
            ("0b101", Int(5)),
            ("-0b101", Int(-5)),
            ("1_000", Int(1000)),
            ("+12", Int(12)),
            ("-0", Int(0)),
            ("0", Int(0)),
            ("0x", s("0x")),
            ("9223372036854775807", Int(i64::MAX)),
            ("9223372036854775808", Uint(1 << 63)),
            ("18446744073709551616", Float(18446744073709551616.0)),
            ("1e3", Float(1000.0)),
            ("1.", Float(1.0)),
            (".5", Float(0.5)),
            ("+.5", Float(0.5)),
            ("1e400", s("1e400")),
            (".inf", Float(f64::INFINITY)),
            ("-.Inf", Float(f64::NEG_INFINITY)),
            ("inf", s("inf")),
            ("1.2.3", s("1.2.3")),
            ("2024-01-15", s("2024-01-15")),
            ("12:30", s("12:30")),
            ("1:20", s("1:20")),
            ("<<", s("<<")),
            ("-", s("-")),
            ("v1", s("v1")),
        ] {
            assert_eq!(plain_value(text), expected, "{text}");
        }
        // Quoted, literal or folded: a string, whatever it says.
        assert_eq!(scalar(None, "yes", false), Ok(s("yes")));
    }

    #[test]
    fn tags_ask_for_a_type() {
        use Scalar::*;
        let int = Some("tag:yaml.org,2002:int");
        assert_eq!(scalar(int, "0x10", false), Ok(Int(16)));
        assert_eq!(
            scalar(int, "1.5", true),
            Err(Mismatch(
                "cannot decode !!float `1.5` as a !!int".to_string()
            ))
        );
        assert_eq!(
            scalar(Some("tag:yaml.org,2002:float"), "2", true),
            Ok(Float(2.0))
        );
        assert_eq!(
            scalar(Some("tag:yaml.org,2002:str"), "yes", true),
            Ok(Str(Cow::Borrowed("yes")))
        );
        assert_eq!(scalar(Some("!"), "12", true), Ok(Str(Cow::Borrowed("12"))));
        assert_eq!(
            scalar(Some("!custom"), "on", false),
            Ok(Str(Cow::Borrowed("on")))
        );
        assert_eq!(
            scalar(Some("tag:yaml.org,2002:binary"), "aGk=\n", false),
            Ok(Str(Cow::Owned("hi".to_string())))
        );
        assert!(scalar(Some("tag:yaml.org,2002:binary"), "a", false).is_err());
        assert_eq!(
            scalar(Some("tag:yaml.org,2002:timestamp"), "2001-12-14", true),
            Ok(Str(Cow::Borrowed("2001-12-14")))
        );
        assert!(scalar(Some("tag:yaml.org,2002:null"), "x", true).is_err());
    }

    #[test]
    fn keys_as_sigs_yaml_writes_them() {
        use Scalar::*;
        for (scalar, key) in [
            (Bool(true), "true"),
            (Int(-3), "-3"),
            (Float(1.5), "1.5"),
            (Float(1000.0), "1000"),
            (Float(1234567.0), "1.234567e+06"),
            (Float(0.0001), "0.0001"),
            (Float(0.00001), "1e-05"),
            (Float(0.1), "0.1"),
            (Float(123456789.0), "1.2345679e+08"),
            (Float(f64::INFINITY), ".inf"),
            (Float(-0.0), "-0"),
        ] {
            assert_eq!(super::key(&scalar).unwrap(), key, "{scalar:?}");
        }
        assert!(super::key(&Null).is_err());
        assert!(super::key(&Uint(u64::MAX)).is_err());
    }

    #[test]
    fn floats_as_encoding_json_writes_them() {
        for (f, text) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (-0.0, "-0"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-7"),
            (123456.789, "123456.789"),
            (1e20, "100000000000000000000"),
        ] {
            assert_eq!(json_float(f).unwrap(), text);
        }
        assert_eq!(json_float(f64::NAN), None);
    }
}
