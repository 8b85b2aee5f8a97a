//! A pickle writer that follows the torch C++ pickler's rules.
//!
//! Role: produce bytes indistinguishable in style from what
//! `torch::jit::Pickler` (with `tag_aggregates = false`, as Flight Recorder's
//! `pickle_str` uses it) writes, so synthetic dumps exercise readers exactly
//! like real ones.
//!
//! Rules mirrored (`torch/csrc/jit/serialization/pickler.cpp`):
//! - `PROTO 2` first, `STOP` last;
//! - strings: `BINUNICODE`, memoized *by value*: the first occurrence is
//!   followed by `BINPUT`/`LONG_BINPUT`, every repeat is `BINGET`/`LONG_BINGET`;
//! - ints: `BININT1` (0..=255), `BININT2` (..=65535), `BININT` (i32), else
//!   `LONG1` with 8 bytes; floats `BINFLOAT` (big-endian); `NEWTRUE`/`NEWFALSE`;
//! - dict: `EMPTY_DICT MARK k v .. SETITEMS` (MARK/SETITEMS even when empty);
//!   list: `EMPTY_LIST MARK .. APPENDS`; tuple: `EMPTY_TUPLE`, `TUPLE1..3`,
//!   else `MARK .. TUPLE`;
//! - containers shared by reference (use count > 1, like FR's frame dicts and
//!   the top-level dict) are memoized *after* they are complete; the caller
//!   says so with [`Pickler::memoize`] and re-references with
//!   [`Pickler::memo_get`].
//!
//! Invariant: memo ids are assigned in write order starting at 0, shared by
//! strings and containers, exactly as the C++ pickler numbers them.

use rustc_hash::FxHashMap;

/// Streaming torch-style pickle writer into an in-memory buffer.
#[derive(Debug, Default)]
pub struct Pickler {
    buf: Vec<u8>,
    next_memo: u32,
    strings: FxHashMap<Box<str>, u32>,
}

impl Pickler {
    /// A writer with `PROTO 2` already written.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// Like [`Pickler::new`] with a buffer capacity hint.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes.max(2));
        buf.extend_from_slice(&[0x80, 2]);
        Pickler { buf, next_memo: 0, strings: FxHashMap::default() }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Always false: `PROTO 2` is written at creation.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Writes `STOP` and returns the pickle.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(b'.');
        self.buf
    }

    fn next_put(&mut self) -> u32 {
        let id = self.next_memo;
        self.next_memo += 1;
        if let Ok(small) = u8::try_from(id) {
            self.buf.extend_from_slice(&[b'q', small]);
        } else {
            self.buf.push(b'r');
            self.buf.extend_from_slice(&id.to_le_bytes());
        }
        id
    }

    /// Memoizes the value just written (`BINPUT`/`LONG_BINPUT`) and returns
    /// its memo id, for containers referenced again later.
    pub fn memoize(&mut self) -> u32 {
        self.next_put()
    }

    /// References a memoized value (`BINGET`/`LONG_BINGET`).
    pub fn memo_get(&mut self, id: u32) {
        if let Ok(small) = u8::try_from(id) {
            self.buf.extend_from_slice(&[b'h', small]);
        } else {
            self.buf.push(b'j');
            self.buf.extend_from_slice(&id.to_le_bytes());
        }
    }

    pub fn str(&mut self, s: &str) {
        if let Some(&id) = self.strings.get(s) {
            self.memo_get(id);
            return;
        }
        self.buf.push(b'X');
        // Strings over 4 GiB cannot occur in a dump; saturate rather than wrap.
        let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(s.as_bytes());
        let id = self.next_put();
        self.strings.insert(s.into(), id);
    }

    pub fn int(&mut self, v: i64) {
        if let Ok(b) = u8::try_from(v) {
            self.buf.extend_from_slice(&[b'K', b]);
        } else if let Ok(h) = u16::try_from(v) {
            self.buf.push(b'M');
            self.buf.extend_from_slice(&h.to_le_bytes());
        } else if let Ok(w) = i32::try_from(v) {
            self.buf.push(b'J');
            self.buf.extend_from_slice(&w.to_le_bytes());
        } else {
            self.buf.extend_from_slice(&[0x8a, 8]);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    pub fn float(&mut self, v: f64) {
        self.buf.push(b'G');
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn bool(&mut self, b: bool) {
        self.buf.push(if b { 0x88 } else { 0x89 });
    }

    pub fn none(&mut self) {
        self.buf.push(b'N');
    }

    /// `EMPTY_DICT MARK`; write keys and values, then [`Pickler::dict_end`].
    pub fn dict_begin(&mut self) {
        self.buf.extend_from_slice(b"}(");
    }

    /// `SETITEMS`.
    pub fn dict_end(&mut self) {
        self.buf.push(b'u');
    }

    /// `EMPTY_LIST MARK`; write items, then [`Pickler::list_end`].
    pub fn list_begin(&mut self) {
        self.buf.extend_from_slice(b"](");
    }

    /// `APPENDS`.
    pub fn list_end(&mut self) {
        self.buf.push(b'e');
    }

    /// Starts a tuple of `n` items (`MARK` only when `n > 3`).
    pub fn tuple_begin(&mut self, n: usize) {
        if n > 3 {
            self.buf.push(b'(');
        }
    }

    /// Ends a tuple of `n` items: `EMPTY_TUPLE`, `TUPLE1..3` or `TUPLE`.
    pub fn tuple_end(&mut self, n: usize) {
        self.buf.push(match n {
            0 => b')',
            1 => 0x85,
            2 => 0x86,
            3 => 0x87,
            _ => b't',
        });
    }

    /// A `[a, b, ..]` list of ints (sizes).
    pub fn int_list(&mut self, items: &[i64]) {
        self.list_begin();
        for &i in items {
            self.int(i);
        }
        self.list_end();
    }

    /// A list of strings (dtypes).
    pub fn str_list<S: AsRef<str>>(&mut self, items: &[S]) {
        self.list_begin();
        for s in items {
            self.str(s.as_ref());
        }
        self.list_end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_torch_bytes() {
        // The start of a real FR dump (torch 2.11): {'version': '2.10',
        // 'pg_config': {'0': {'name': '0', ...
        let mut p = Pickler::new();
        p.dict_begin();
        p.str("version");
        p.str("2.10");
        p.str("pg_config");
        p.dict_begin();
        p.str("0");
        p.dict_begin();
        p.str("name");
        p.str("0");
        p.dict_end();
        p.dict_end();
        p.dict_end();
        p.memoize();
        let b = p.finish();
        let expected: &[u8] = b"\x80\x02}(X\x07\x00\x00\x00versionq\x00X\x04\x00\x00\x002.10q\x01X\t\x00\x00\x00pg_configq\x02}(X\x01\x00\x00\x000q\x03}(X\x04\x00\x00\x00nameq\x04h\x03uuuq\x05.";
        assert_eq!(b, expected);
    }

    #[test]
    fn ints_and_tuples() {
        let mut p = Pickler::new();
        for v in [0, 255, 256, 65535, 65536, -1, i64::from(i32::MIN), 1 << 40] {
            p.int(v);
        }
        p.tuple_begin(2);
        p.none();
        p.bool(true);
        p.tuple_end(2);
        p.tuple_begin(4);
        for _ in 0..4 {
            p.bool(false);
        }
        p.tuple_end(4);
        let b = p.finish();
        let expected: &[u8] = b"\x80\x02K\x00K\xffM\x00\x01M\xff\xffJ\x00\x00\x01\x00J\xff\xff\xff\xffJ\x00\x00\x00\x80\x8a\x08\x00\x00\x00\x00\x00\x01\x00\x00N\x88\x86(\x89\x89\x89\x89t.";
        assert_eq!(b, expected);
    }

    #[test]
    fn long_memo_ids() {
        let mut p = Pickler::new();
        for i in 0..300 {
            p.str(&format!("s{i}"));
        }
        p.str("s299");
        let b = p.finish();
        // id 299 = 0x12b: LONG_BINPUT after its BINUNICODE, LONG_BINGET later.
        assert!(b.ends_with(b"s299r\x2b\x01\x00\x00j\x2b\x01\x00\x00."));
    }
}
