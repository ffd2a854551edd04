//! Which requests of a closed-loop load an agent makes when several share
//! it. Request k of the whole load is pass k / n over the workload's n
//! entries, at position k % n; it belongs to agent (k % n + k / n) mod K.
//! Within a pass the positions are dealt out in turn, so a log replayed
//! once is shared line by line; each pass shifts the deal by one, so every
//! agent goes through the whole list whatever n and K have in common, and
//! over any K passes each agent makes exactly n requests. An agent that is
//! faster than the others therefore does not skew the mix of URLs.

use crate::config::split;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deal {
    pub index: u64,
    pub count: u64,
    /// The workload's entries: a pass's length.
    pub n: u64,
}

impl Deal {
    pub(crate) fn whole() -> Deal {
        Deal { index: 0, count: 1, n: 1 }
    }

    /// The position (mod count) this agent takes in pass `pass`.
    fn residue(&self, pass: u64) -> u64 {
        (self.index + self.count - pass % self.count) % self.count
    }

    fn in_pass(&self, pass: u64) -> u64 {
        split(self.n, self.count, self.residue(pass))
    }

    /// The whole load's number of this agent's `t`-th request.
    pub(crate) fn request(&self, t: u64) -> u64 {
        if self.count == 1 {
            return t;
        }
        let (period, mut rem) = (t / self.n, t % self.n);
        for j in 0..self.count {
            let pass = period * self.count + j;
            let c = self.in_pass(pass);
            if rem < c {
                return pass * self.n + self.residue(pass) + rem * self.count;
            }
            rem -= c;
        }
        unreachable!("any `count` passes hold n requests of each agent")
    }

    /// How many of the whole load's first `limit` requests are this agent's.
    pub(crate) fn share_of(&self, limit: u64) -> u64 {
        if self.count == 1 {
            return limit;
        }
        let (passes, rem) = (limit / self.n, limit % self.n);
        let periods = passes / self.count;
        let partial: u64 = (periods * self.count..passes).map(|p| self.in_pass(p)).sum();
        periods * self.n + partial + split(rem, self.count, self.residue(passes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(k: u64, n: u64, count: u64) -> u64 {
        (k % n + k / n) % count
    }

    #[test]
    fn agents_share_every_prefix_of_the_load_exactly() {
        for n in 1..8 {
            for count in 1..6 {
                for limit in 0..70 {
                    let mut all = Vec::new();
                    for index in 0..count {
                        let d = Deal { index, count, n };
                        let mine: Vec<u64> = (0..d.share_of(limit)).map(|t| d.request(t)).collect();
                        assert!(mine.windows(2).all(|w| w[0] < w[1]), "in order: {d:?} {mine:?}");
                        assert!(mine.iter().all(|&k| owner(k, n, count) == index && k < limit), "{d:?} {mine:?}");
                        all.extend(mine);
                    }
                    all.sort();
                    assert_eq!(all, (0..limit).collect::<Vec<_>>(), "n {n} count {count} limit {limit}");
                }
            }
        }
    }

    #[test]
    fn every_agent_goes_through_the_whole_list() {
        // 4 URLs and 2 agents: dealt k mod 2, each would see only 2 URLs.
        for index in 0..2 {
            let d = Deal { index, count: 2, n: 4 };
            let mut urls: Vec<u64> = (0..4).map(|t| d.request(t) % 4).collect();
            urls.sort();
            assert_eq!(urls, vec![0, 1, 2, 3]);
        }
        // A log replayed once is dealt line by line.
        let d = Deal { index: 1, count: 3, n: 10 };
        assert_eq!((0..d.share_of(10)).map(|t| d.request(t)).collect::<Vec<_>>(), vec![1, 4, 7]);
    }
}
