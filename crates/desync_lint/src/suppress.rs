//! Suppression comments: `# desync: ignore` silences every rule on its line,
//! `# desync: ignore[DSY001, DSY003]` the listed ones. Spacing and case around the words are
//! free (`#desync:ignore[dsy001]` works too), as with Ruff's `# noqa`.

use crate::rule::Rule;

/// True when `line` carries a comment that silences `rule`.
pub(crate) fn is_suppressed(line: &str, rule: Rule) -> bool {
    let mut rest = line;
    while let Some(hash) = rest.find('#') {
        rest = &rest[hash + 1..];
        match directive(rest) {
            Some(Directive::All) => return true,
            Some(Directive::Codes(list))
                if list.split(',').any(|c| c.trim().eq_ignore_ascii_case(rule.code())) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// A suppression comment: every rule, or the listed codes.
enum Directive<'a> {
    All,
    Codes(&'a str),
}

/// Parses `desync: ignore` or `desync: ignore[codes]` at the start of a comment.
fn directive(comment: &str) -> Option<Directive<'_>> {
    let rest = strip_word(comment.trim_start(), "desync")?;
    let rest = rest.trim_start().strip_prefix(':')?;
    let rest = strip_word(rest.trim_start(), "ignore")?;
    let rest = rest.trim_start();
    if let Some(list) = rest.strip_prefix('[') {
        let end = list.find(']')?;
        return Some(Directive::Codes(&list[..end]));
    }
    // `# desync: ignore` must end the directive: `ignored` is not it.
    match rest.chars().next() {
        None => Some(Directive::All),
        Some(c) if c.is_whitespace() || c == '#' => Some(Directive::All),
        Some(_) => None,
    }
}

fn strip_word<'a>(text: &'a str, word: &str) -> Option<&'a str> {
    let head = text.get(..word.len())?;
    head.eq_ignore_ascii_case(word).then(|| &text[word.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const R1: Rule = Rule::RankConditionalCollective;
    const R3: Rule = Rule::SwallowedException;

    #[test]
    fn directives() {
        assert!(is_suppressed("    if rank == 0:  # desync: ignore", R1));
        assert!(is_suppressed("    if rank == 0:  # desync: ignore[DSY001]", R1));
        assert!(is_suppressed("x  #desync:ignore[dsy003, DSY001]", R1));
        assert!(is_suppressed("x  # why: staged  # desync: ignore[DSY003] rest", R3));
        assert!(!is_suppressed("x  # desync: ignore[DSY003]", R1));
        assert!(!is_suppressed("x  # desync: ignored", R1));
        assert!(!is_suppressed("x  # desync: ignore[DSY001", R1));
        assert!(!is_suppressed("x = 1", R1));
        assert!(!is_suppressed("x  # noqa", R1));
    }
}
