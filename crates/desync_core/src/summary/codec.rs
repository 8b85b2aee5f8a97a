//! The byte level of a summary body: LEB128 varints, zigzag for signed values, length-prefixed
//! strings. Reading never panics and never trusts a count: every read checks what is left and
//! reports the byte offset where the body stopped making sense.

use super::SummaryError;

/// A growing byte buffer with the body's primitive encodings.
#[derive(Default)]
pub struct Out(pub Vec<u8>);

impl Out {
    pub fn u(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }

    /// Zigzag: small magnitudes of either sign stay short (-1 -> 1, 1 -> 2).
    pub fn i(&mut self, value: i64) {
        self.u(((value << 1) ^ (value >> 63)) as u64);
    }

    /// `None` as 0, `Some(v)` as v + 1 (wrapping: `u64::MAX` would collide, and FR counters
    /// never get there).
    pub fn opt_u(&mut self, value: Option<u64>) {
        self.u(value.map_or(0, |v| v.wrapping_add(1)));
    }

    pub fn str(&mut self, s: &str) {
        self.u(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    pub fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    pub fn raw(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// A nested section, length first, so a reader can hand it to its own cursor.
    pub fn section(&mut self, inner: &Out) {
        self.u(inner.0.len() as u64);
        self.raw(&inner.0);
    }
}

/// A cursor over a body (or one section of it); `base` is the section's offset in the body,
/// so errors name a position in the whole body.
pub struct In<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> In<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0, base: 0 }
    }

    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn corrupt(&self, what: impl Into<String>) -> SummaryError {
        SummaryError::Corrupt { offset: self.offset(), what: what.into() }
    }

    fn truncated(&self) -> SummaryError {
        SummaryError::Truncated { offset: self.offset() }
    }

    pub fn u(&mut self) -> Result<u64, SummaryError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let &b = self.bytes.get(self.pos).ok_or_else(|| self.truncated())?;
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.corrupt("varint longer than 64 bits"))
    }

    pub fn i(&mut self) -> Result<i64, SummaryError> {
        let z = self.u()?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    pub fn opt_u(&mut self) -> Result<Option<u64>, SummaryError> {
        Ok(self.u()?.checked_sub(1))
    }

    /// A count of items that each take at least one byte: larger than what is left means
    /// corruption, caught before anything is allocated for it.
    pub fn count(&mut self) -> Result<usize, SummaryError> {
        let n = self.u()?;
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(self.corrupt(format!("count {n} exceeds the {left} bytes left")));
        }
        Ok(n as usize)
    }

    /// A value that must fit in u32 (lines, ranks, table indices).
    pub fn u32(&mut self) -> Result<u32, SummaryError> {
        let v = self.u()?;
        u32::try_from(v).map_err(|_| self.corrupt(format!("{v} does not fit in 32 bits")))
    }

    pub fn str(&mut self) -> Result<&'a str, SummaryError> {
        let bytes = self.take_counted()?;
        std::str::from_utf8(bytes).map_err(|_| self.corrupt("string is not UTF-8"))
    }

    pub fn byte(&mut self) -> Result<u8, SummaryError> {
        let &b = self.bytes.get(self.pos).ok_or_else(|| self.truncated())?;
        self.pos += 1;
        Ok(b)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], SummaryError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| self.truncated())?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn take_counted(&mut self) -> Result<&'a [u8], SummaryError> {
        let n = self.u()?;
        let n = usize::try_from(n).map_err(|_| self.truncated())?;
        self.take(n)
    }

    /// The next section as its own cursor.
    pub fn section(&mut self) -> Result<In<'a>, SummaryError> {
        let bytes = self.take_counted()?;
        Ok(In { bytes, pos: 0, base: self.offset() - bytes.len() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip() {
        let values = [0i64, 1, -1, 63, -64, 64, 1 << 40, -(1 << 40), i64::MAX, i64::MIN];
        let mut out = Out::default();
        for v in values {
            out.i(v);
            out.u(v as u64);
            out.opt_u(Some(v as u64 & 0xffff));
        }
        out.opt_u(None);
        let mut r = In::new(&out.0);
        for v in values {
            assert_eq!(r.i().unwrap(), v);
            assert_eq!(r.u().unwrap(), v as u64);
            assert_eq!(r.opt_u().unwrap(), Some(v as u64 & 0xffff));
        }
        assert_eq!(r.opt_u().unwrap(), None);
        assert!(r.is_empty());
    }

    #[test]
    fn short_input_is_an_error_with_its_offset() {
        let mut out = Out::default();
        out.str("hello");
        let cut = &out.0[..4];
        let err = In::new(cut).str().unwrap_err();
        assert!(matches!(err, SummaryError::Truncated { offset: 1 }), "{err:?}");
        assert!(In::new(&[0xff; 11]).u().is_err());
    }
}
