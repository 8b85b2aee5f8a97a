//! `desync publish`: an agent that keeps some ranks' recorders in a directory for one
//! `desync watch --dir` to judge (docs/watch.md, "Above one watcher"). Text mode prints one
//! line per poll on stderr; JSON mode one object per poll on stdout.

use std::io::Write;

use anyhow::{Context, bail};
use desync_live::Flow;
use desync_live::publish::{PublishEvent, PublishOptions, Published};

use super::watch::{LiveArgs, MIN_INTERVAL, clock, json_line, seconds};
use crate::Outcome;
use crate::cli::{Format, PublishArgs};

pub fn run(args: &PublishArgs) -> anyhow::Result<Outcome> {
    let timeout = seconds("--timeout", args.timeout)?;
    if timeout.is_zero() {
        bail!("--timeout must be more than 0 seconds");
    }
    let options = PublishOptions {
        dir: args.output.clone(),
        interval: seconds("--interval", args.interval)?.max(MIN_INTERVAL),
        duration: args.duration.map(|d| seconds("--for", d)).transpose()?,
    };
    let workers = LiveArgs {
        store: args.store.as_deref(),
        workers: &args.workers,
        world_size: args.world_size,
        timeout,
        concurrency: args.concurrency,
    };
    let mut live = workers.live()?;
    if let Some(text) = &args.ranks {
        live = live.only_ranks(parse_ranks(text)?);
    }
    let mut last_problem = None;
    let mut published = 0usize;
    let format = args.format;
    desync_live::publish::publish(&mut live, &options, &mut |event| {
        let written = match event {
            PublishEvent::Published(poll) => {
                published += 1;
                match format {
                    Format::Json => json_line(&poll_json(poll)),
                    Format::Text => writeln!(std::io::stderr(), "{}", poll_line(poll)),
                }
            }
            PublishEvent::SourceDown(problem) => {
                last_problem = Some(problem.to_owned());
                match format {
                    Format::Json => json_line(&serde_json::json!({
                        "event": "source_down",
                        "error": problem,
                    })),
                    Format::Text => writeln!(std::io::stderr(), "workers down: {problem}"),
                }
            }
        };
        // A closed stdout (`| head`) ends the agent quietly.
        if written.is_err() { Flow::Stop } else { Flow::Continue }
    })
    .with_context(|| format!("--output {}", args.output.display()))?;
    if published == 0 {
        bail!("no poll could be published: {}", last_problem.as_deref().unwrap_or("?"));
    }
    Ok(Outcome::Clean)
}

/// `0-7`, `0-3,8,12-15`: ranks and inclusive ranges, separated by commas.
pub(crate) fn parse_ranks(text: &str) -> anyhow::Result<Vec<u32>> {
    const MOST: u32 = desync_core::load::limits::MAX_WORLD_SIZE;
    let rank = |s: &str| -> anyhow::Result<u32> {
        let r: u32 = s.trim().parse().with_context(|| format!("--ranks: `{s}` is not a rank"))?;
        if r >= MOST {
            bail!("--ranks: rank {r} is beyond the largest world desync reads ({MOST} ranks)");
        }
        Ok(r)
    };
    let mut ranks = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        match part.split_once('-') {
            Some((low, high)) => {
                let (low, high) = (rank(low)?, rank(high)?);
                if low > high {
                    bail!("--ranks: `{part}` runs backwards");
                }
                ranks.extend(low..=high);
            }
            None => ranks.push(rank(part)?),
        }
    }
    if ranks.is_empty() {
        bail!("--ranks names no rank: give ranks and ranges like 0-7 or 0-3,8");
    }
    Ok(ranks)
}

fn poll_line(p: &Published) -> String {
    let what = if p.active_only { "active entries" } else { "whole recorders" };
    let mut line = format!(
        "{} published {} rank(s), {what}, {:.1} kB in {} ms",
        clock(p.at),
        p.written,
        p.bytes as f64 / 1e3,
        p.took.as_millis()
    );
    if !p.unreachable.is_empty() {
        let ranks: Vec<u32> = p.unreachable.iter().map(|(r, _)| *r).collect();
        line.push_str(&format!("; unreachable {ranks:?}"));
    }
    if p.removed > 0 {
        line.push_str(&format!("; {} file(s) of gone ranks removed", p.removed));
    }
    for error in &p.write_errors {
        line.push_str(&format!("; not written: {error}"));
    }
    line
}

fn poll_json(p: &Published) -> serde_json::Value {
    serde_json::json!({
        "event": "published",
        "at": desync_live::watch::stamp(p.at),
        "took_ms": p.took.as_millis(),
        "written": p.written,
        "active_only": p.active_only,
        "bytes": p.bytes,
        "unreachable": p.unreachable.iter().map(|(r, why)| serde_json::json!({"rank": r, "error": why})).collect::<Vec<_>>(),
        "removed": p.removed,
        "write_errors": p.write_errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists() {
        assert_eq!(parse_ranks("0-3,8, 10-11").unwrap(), [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_ranks("5").unwrap(), [5]);
        for bad in ["", ",", "3-1", "a", "1-", "-2", "99999999999"] {
            assert!(parse_ranks(bad).is_err(), "{bad}");
        }
    }
}
