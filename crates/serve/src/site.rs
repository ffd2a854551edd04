//! `--site-from-log`: every path of a real access log answered with the
//! status and size that log recorded, so a replay meets the site it came from.

use std::collections::HashMap;

use corebench_accesslog::{parse_line, Skip};

pub(crate) struct Site {
    /// Request target (path and query) → (status, body bytes); the first
    /// time a target appears in the log decides.
    pages: HashMap<String, (u16, u64)>,
    pub lines: u64,
    pub skipped: Vec<(&'static str, u64)>,
}

impl Site {
    pub(crate) fn load(path: &str) -> Result<Site, String> {
        let data = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let mut pages = HashMap::new();
        let mut skipped: HashMap<&'static str, u64> = HashMap::new();
        let mut lines = 0;
        for raw in data.split(|&b| b == b'\n') {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.is_empty() {
                continue;
            }
            lines += 1;
            let parsed = std::str::from_utf8(raw).map_err(|_| Skip::Malformed).and_then(parse_line);
            match parsed {
                Ok(e) => {
                    pages.entry(e.target.to_string()).or_insert((e.status, e.bytes.unwrap_or(0)));
                }
                Err(why) => *skipped.entry(why.reason()).or_default() += 1,
            }
        }
        if pages.is_empty() {
            return Err(format!("{path}: none of its {lines} lines is a Common or Combined Log Format request"));
        }
        let mut skipped: Vec<_> = skipped.into_iter().collect();
        skipped.sort();
        Ok(Site { pages, lines, skipped })
    }

    pub(crate) fn paths(&self) -> usize {
        self.pages.len()
    }

    pub(crate) fn get(&self, target: &str) -> Option<(u16, u64)> {
        self.pages.get(target).copied()
    }
}
