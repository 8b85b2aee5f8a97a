//! Compact rank sets: "0-5,7" for people, sorted vectors for code.

use std::fmt;

/// A sorted, deduplicated set of global ranks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RankSet(Vec<u32>);

impl RankSet {
    pub fn new(mut ranks: Vec<u32>) -> Self {
        ranks.sort_unstable();
        ranks.dedup();
        Self(ranks)
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, rank: u32) -> bool {
        self.0.binary_search(&rank).is_ok()
    }

    pub fn into_vec(self) -> Vec<u32> {
        self.0
    }

    /// For sentences: the whole set while it is short, else its size and how it starts
    /// (`472 ranks: 0-1,3-8,10-21,…`). Lists, tables and JSON keep the whole set.
    pub fn brief(&self) -> Brief<'_> {
        Brief(self)
    }
}

/// See [`RankSet::brief`].
pub struct Brief<'r>(&'r RankSet);

/// Characters of a rank list a sentence shows before it shortens it.
const BRIEF_CHARS: usize = 40;

impl fmt::Display for Brief<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        if text.len() <= BRIEF_CHARS {
            return f.write_str(&text);
        }
        let cut = text[..BRIEF_CHARS].rfind(',').unwrap_or(BRIEF_CHARS);
        write!(f, "{} ranks: {},…", self.0.len(), &text[..cut])
    }
}

impl FromIterator<u32> for RankSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        Self::new(iter.into_iter().collect())
    }
}

impl fmt::Display for RankSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_ranks(&self.0))
    }
}

/// Formats sorted ranks as ranges: `[0,1,2,3,5,7,8]` -> `"0-3,5,7-8"`.
pub fn format_ranks(ranks: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < ranks.len() {
        let start = ranks[i];
        let mut end = start;
        while i + 1 < ranks.len() && ranks[i + 1] == end + 1 {
            i += 1;
            end = ranks[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brief_sets_shorten_only_when_long() {
        assert_eq!(RankSet::new(vec![0, 1, 2, 5]).brief().to_string(), "0-2,5");
        let scattered = RankSet::new((0..200).filter(|r| r % 3 != 0).collect());
        let brief = scattered.brief().to_string();
        assert!(brief.starts_with("133 ranks: 1-2,4-5,"), "{brief}");
        assert!(brief.ends_with(",…") && brief.len() < 60, "{brief}");
    }

    #[test]
    fn ranges_compress() {
        assert_eq!(format_ranks(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(format_ranks(&[4]), "4");
        assert_eq!(format_ranks(&[]), "");
        assert_eq!(RankSet::new(vec![3, 1, 2, 2]).to_string(), "1-3");
    }
}
