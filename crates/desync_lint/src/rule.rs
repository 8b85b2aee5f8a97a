//! The rule catalogue: codes, names, one-line summaries and fix hints, and rule selection
//! (`--select`/`--ignore` take codes or code prefixes, like Ruff's).

use std::fmt;

/// A lint rule. Codes are stable: tools and suppression comments refer to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// DSY001: a collective that only some ranks reach, decided by the rank id.
    RankConditionalCollective,
    /// DSY002: a loop exit, skip or length decided by rank-local values, without agreement.
    LocalEarlyExit,
    /// DSY003: an `except` that swallows an error around or before a collective.
    SwallowedException,
    /// DSY004: collectives or process groups in a rank-dependent order.
    RankDependentOrder,
    /// DSY005: a gather whose tensor shape comes from rank-local data.
    RaggedGather,
    /// DSY006: a collective whose tensor dtype is chosen per rank.
    RankDependentDtype,
    /// DSY007: a collective under a test of a file each rank makes on its own, for a file only
    /// some ranks read.
    PerRankFileTest,
}

impl Rule {
    pub const ALL: [Rule; 7] = [
        Rule::RankConditionalCollective,
        Rule::LocalEarlyExit,
        Rule::SwallowedException,
        Rule::RankDependentOrder,
        Rule::RaggedGather,
        Rule::RankDependentDtype,
        Rule::PerRankFileTest,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Rule::RankConditionalCollective => "DSY001",
            Rule::LocalEarlyExit => "DSY002",
            Rule::SwallowedException => "DSY003",
            Rule::RankDependentOrder => "DSY004",
            Rule::RaggedGather => "DSY005",
            Rule::RankDependentDtype => "DSY006",
            Rule::PerRankFileTest => "DSY007",
        }
    }

    /// Kebab-case name, as SARIF's `rules[].name` and docs use it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::RankConditionalCollective => "rank-conditional-collective",
            Rule::LocalEarlyExit => "local-early-exit",
            Rule::SwallowedException => "swallowed-exception",
            Rule::RankDependentOrder => "rank-dependent-order",
            Rule::RaggedGather => "ragged-gather",
            Rule::RankDependentDtype => "rank-dependent-dtype",
            Rule::PerRankFileTest => "per-rank-file-test",
        }
    }

    pub fn summary(self) -> &'static str {
        match self {
            Rule::RankConditionalCollective => {
                "Collective reachable only under a rank-dependent condition"
            }
            Rule::LocalEarlyExit => {
                "Loop exit, skip or length decided by rank-local values skips a collective"
            }
            Rule::SwallowedException => "Exception handler swallows an error around a collective",
            Rule::RankDependentOrder => "Collectives or process groups in a rank-dependent order",
            Rule::RaggedGather => "Gather of a tensor whose shape comes from rank-local data",
            Rule::RankDependentDtype => "Collective tensor dtype chosen per rank",
            Rule::PerRankFileTest => {
                "Collective under a file test each rank answers alone, for a file only some \
                 ranks read"
            }
        }
    }

    /// How to fix it, shown under each finding.
    pub fn hint(self) -> &'static str {
        match self {
            Rule::RankConditionalCollective => {
                "issue the collective on every rank and keep only the side effect (print, save) \
                 under the rank check"
            }
            Rule::LocalEarlyExit => {
                "agree on the decision first: all_reduce a flag (op=MAX or MIN) on every rank and \
                 branch on the reduced value"
            }
            Rule::SwallowedException => {
                "re-raise, or make every rank take the same path: all_reduce an error flag before \
                 deciding to skip"
            }
            Rule::RankDependentOrder => {
                "issue collectives across process groups in one fixed order on every rank"
            }
            Rule::RaggedGather => {
                "pad to a common size first (all_gather the sizes, pad to the max, trim after), \
                 drop the ragged last batch, or use all_gather_object"
            }
            Rule::RankDependentDtype => {
                "choose the communication dtype once for the whole job (decide on rank 0 and \
                 broadcast it), not from per-rank state"
            }
            Rule::PerRankFileTest => {
                "test the file on the rank that reads it and broadcast the answer (or what it \
                 read, None when the file is missing), then branch on what every rank received"
            }
        }
    }

    /// The rule with this exact code (case-insensitive).
    pub fn from_code(code: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.code().eq_ignore_ascii_case(code.trim()))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A selector that matched no rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule selector `{0}` (rules are DSY001 to DSY006, or a prefix such as DSY00)")]
pub struct UnknownRule(pub String);

/// The rules matched by a comma-separated list of codes or prefixes (`DSY001,DSY003`, `DSY`,
/// `ALL`).
pub fn parse_selectors(list: &str) -> Result<Vec<Rule>, UnknownRule> {
    let mut rules = Vec::new();
    for selector in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let upper = selector.to_ascii_uppercase();
        let matched: Vec<Rule> = Rule::ALL
            .into_iter()
            .filter(|r| upper == "ALL" || r.code().starts_with(&upper))
            .collect();
        if matched.is_empty() {
            return Err(UnknownRule(selector.to_owned()));
        }
        rules.extend(matched);
    }
    rules.sort();
    rules.dedup();
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_selectors() {
        for rule in Rule::ALL {
            assert_eq!(Rule::from_code(rule.code()), Some(rule));
            assert_eq!(Rule::from_code(&rule.code().to_lowercase()), Some(rule));
        }
        assert_eq!(
            parse_selectors("DSY001, dsy003").unwrap(),
            [Rule::RankConditionalCollective, Rule::SwallowedException]
        );
        assert_eq!(parse_selectors("DSY").unwrap().len(), 7);
        assert_eq!(parse_selectors("ALL,DSY002").unwrap().len(), 7);
        assert_eq!(parse_selectors("").unwrap(), []);
        assert_eq!(parse_selectors("E501"), Err(UnknownRule("E501".into())));
    }
}
