//! `parse_records` against `parse`: the same values, the same errors.
//!
//! A record keeps only the values of its keys, so the two decodes are compared through one
//! rendering that shows a dict of record shape (first key one of the keys, none of them
//! repeated) by those keys only, whichever way it was decoded.

use desync_pickle::{Field, Kind, Value, parse, parse_records};
use proptest::prelude::*;

const HANG: &[u8] = include_bytes!("data/nccl_hang_rank_0");
const HEALTHY: &[u8] = include_bytes!("data/nccl_healthy.pkl");

/// The keys desync reads (not `thread_name`, `thread_id`: real entries have keys outside).
const KEYS: [&str; 8] = [
    "frames",
    "record_id",
    "pg_id",
    "process_group",
    "profiling_name",
    "duration_ms",
    "retired",
    "state",
];

fn field_text(f: Option<Field<'_>>, depth: u32) -> String {
    match f {
        None => "-".into(),
        Some(Field::None) => "None".into(),
        Some(Field::Bool(b)) => b.to_string(),
        Some(Field::Int(i)) => i.to_string(),
        Some(Field::Float(x)) => format!("{x:?}"),
        Some(Field::Value(v)) => render(v, depth + 1),
    }
}

fn record_shaped(v: Value<'_>) -> bool {
    let keys: Vec<_> = v.items().map(|(k, _)| k.as_str()).collect();
    let first_known = keys.first().copied().flatten().is_some_and(|k| KEYS.contains(&k));
    let repeated = KEYS.iter().any(|k| keys.iter().filter(|x| **x == Some(*k)).count() > 1);
    first_known && !repeated
}

fn render(v: Value<'_>, depth: u32) -> String {
    if depth > 12 {
        return "…".into();
    }
    match v.kind() {
        Kind::Record => {
            let fields: Vec<_> = (0..KEYS.len()).map(|i| field_text(v.field(i), depth)).collect();
            format!("R{}{fields:?}", v.len())
        }
        Kind::Dict if record_shaped(v) => {
            let fields: Vec<_> = KEYS
                .iter()
                .map(|k| {
                    let found = v.items().find(|(x, _)| x.as_str() == Some(k)).map(|(_, x)| x);
                    match found {
                        None => "-".into(),
                        Some(x)
                            if !matches!(
                                x.kind(),
                                Kind::List | Kind::Tuple | Kind::Set | Kind::Dict | Kind::Record
                            ) =>
                        {
                            format!("{x:?}")
                        }
                        Some(x) => render(x, depth + 1),
                    }
                })
                .collect();
            format!("R{}{fields:?}", v.len())
        }
        Kind::Dict => {
            let items: Vec<_> =
                v.items().map(|(k, x)| (render(k, depth + 1), render(x, depth + 1))).collect();
            format!("{items:?}")
        }
        Kind::List | Kind::Tuple | Kind::Set => {
            let items: Vec<_> = v.iter().map(|x| render(x, depth + 1)).collect();
            format!("{:?}{items:?}", v.kind())
        }
        _ => format!("{v:?}"),
    }
}

/// Both decodes of `bytes` agree: the same error, or the same rendering.
fn agree(bytes: &[u8]) -> Result<(), String> {
    match (parse(bytes), parse_records(bytes, &KEYS)) {
        (Err(a), Err(b)) if a == b => Ok(()),
        (Ok(a), Ok(b)) => {
            let (a, b) = (render(a.root(), 0), render(b.root(), 0));
            if a == b { Ok(()) } else { Err(format!("values differ:\n{a}\n{b}")) }
        }
        (a, b) => Err(format!("outcomes differ: {:?} vs {:?}", a.err(), b.err())),
    }
}

#[test]
fn real_entries_are_records_with_the_same_values() {
    for dump in [HANG, HEALTHY] {
        let generic = parse(dump).unwrap();
        let records = parse_records(dump, &KEYS).unwrap();
        let (g, r) =
            (generic.root().get("entries").unwrap(), records.root().get("entries").unwrap());
        assert!(r.len() > 0);
        for (dict, record) in g.iter().zip(r.iter()) {
            assert_eq!(record.kind(), Kind::Record);
            assert_eq!(record.len(), dict.len(), "pairs, other keys counted");
            let record_id = record.field(1).and_then(|f| f.as_i64());
            assert_eq!(record_id, dict.get("record_id").and_then(|v| v.as_i64()));
            assert_eq!(
                record.field(4).and_then(|f| f.as_str()),
                dict.get("profiling_name").and_then(|v| v.as_str())
            );
            assert!(matches!(record.field(1), Some(Field::Int(_))), "numbers read in place");
        }
        agree(dump).unwrap();
    }
}

#[test]
fn cut_dumps_fail_alike() {
    for cut in 0..HANG.len() {
        agree(&HANG[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
    }
}

#[test]
fn dicts_of_other_shapes_stay_dicts() {
    // {'state': 1, 'state': 2}: a repeated key.
    let repeated = b"\x80\x02}(X\x05\x00\x00\x00stateq\x00K\x01h\x00K\x02u.";
    assert_eq!(parse_records(repeated, &KEYS).unwrap().root().kind(), Kind::Dict);
    agree(repeated).unwrap();
    // {'other': 1, 'state': 2}: the first key is not one of the keys.
    let other = b"\x80\x02}(X\x05\x00\x00\x00otherK\x01X\x05\x00\x00\x00stateK\x02u.";
    assert_eq!(parse_records(other, &KEYS).unwrap().root().kind(), Kind::Dict);
    // [{'state': 1}, <APPEND to the record>]: an opcode the reader does not take inside.
    let odd = b"\x80\x02}(X\x05\x00\x00\x00state]K\x01au.";
    agree(odd).unwrap();
    assert_eq!(parse_records(odd, &KEYS).unwrap().root().kind(), Kind::Dict);
}

#[test]
fn a_record_changed_later_becomes_a_dict_again() {
    // r = {'state': 1}; memoized; then SETITEMS adds 'retired': True through the memo.
    let later =
        b"\x80\x02]}(X\x05\x00\x00\x00stateK\x01uq\x00ah\x00(X\x07\x00\x00\x00retired\x88u0.";
    agree(later).unwrap();
    let p = parse_records(later, &KEYS).unwrap();
    let r = p.root().index(0).unwrap();
    assert_eq!(r.kind(), Kind::Dict);
    assert_eq!(r.get("retired").and_then(|v| v.as_bool()), Some(true));
    assert_eq!(r.get("state").and_then(|v| v.as_i64()), Some(1));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn mutated_dumps_decode_alike(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = HANG.to_vec();
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        prop_assert!(agree(&bytes).is_ok(), "{}", agree(&bytes).unwrap_err());
    }
}
