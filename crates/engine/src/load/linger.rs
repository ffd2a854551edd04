//! Whether a closed loop may hold responses (`linger = "auto"`): a probe
//! measures what holding costs the server, and the worker holds only where
//! it is shown to cost less than `LOSS_LIMIT` of the load.
//!
//! A closed loop's connection cycles between its request in flight (the
//! response time R, send to last byte) and the time its response waits for
//! the worker (the hold H, last byte to handling). Each connection's
//! throughput is 1 / (R + H): the interactive response time law of Denning
//! and Buzen's operational laws (Jain §33.5), with the hold as the think
//! time. Holding lengthens H.
//! A server with room to spare answers in the same R, so the cycle grows
//! and the load it is offered falls by as much. A saturated one answers
//! the others sooner by as much (past the knee of the asymptotic bounds,
//! R = N·D_max − Z: Jain, *The Art of Computer Systems Performance
//! Analysis*, §33.6), so its throughput stays; on the same machine it can
//! even rise, as the server pays for each wake-up of the generator.
//!
//! The probe alternates phases without and with holding, in pairs whose
//! order alternates too (ABBA: a server speeding up or slowing down favours
//! neither), and compares each pair's mean cycles (paired observations,
//! Jain §13.4.1): it holds only if Wilcoxon's signed-rank test (Wilcoxon
//! 1945; exact, one-sided) shows the pairs' growth of the cycle to be
//! under `LOSS_LIMIT`. Pairs cancel the drift of a server whose speed
//! wanders; a phase is the unit because responses within one are not
//! independent; ranks, because on a VM one phase in a few is far off (a
//! stall), which would widen a t-test's bound past any use. The test looks
//! twice (`LOOK_PAIRS`): after 6 pairs, and if those did not show holding
//! to be free, after 6 more, each look at half the level (Bonferroni), so
//! that a stall in the first pairs delays holding rather than forgoing it.
//! A probe runs every `PERIOD_PHASES`, since a server's state changes
//! within a run.

use std::time::{Duration, Instant};

use crate::measure::stats::ProbeCounts;

/// How long each phase lasts. Phases are counted from the run's start, the
/// same for every worker, so that all hold together: a saturated server's
/// queue absorbs one worker's hold only if the others do not refill it.
/// Short, so the first look comes 0.7 s into a run (a 5 s run loses a
/// seventh of what holding saves, against over a quarter with 100 ms), and
/// long enough for a server to settle in a quarter of one at 500
/// connections (`SETTLED_SHARE`; nginx answers them in about 10 ms here).
const PHASE: Duration = Duration::from_millis(50);
/// The pairs of phases (without and with holding) measured before each look
/// of the signed-rank test, counted from the probe's start. Six pairs let
/// the test at half of 5% pass only if every pair shows the growth under
/// the limit (p = 1/64); twelve let it pass with one pair in three on the
/// wrong side, if they are near the limit, or one far off (a stall), if
/// the others are far below it. At 500 connections to nginx on a 2-core VM
/// the first look held in 6 runs of 8 and the second in the other 2; the
/// first alone, at 5% and in 100 ms phases, had held in 4 of 6
/// (docs/benchmarks.md).
const LOOK_PAIRS: [usize; 2] = [6, 12];
/// All pairs a probe may measure.
const PROBE_PAIRS: usize = LOOK_PAIRS[LOOK_PAIRS.len() - 1];
/// The signed-rank test's one-sided level for the probe, split evenly over
/// its looks (Bonferroni): holding on a server that it costs load has at
/// most this chance per probe.
const ALPHA: f64 = 0.05;
/// Phases from one probe's start to the next: a pause, the probe's phases
/// and a pause after each look's, and then its decision's. A probe's
/// phases with holding are at most a tenth of them, so probing costs a
/// server with room to spare at most a tenth of what holding would.
const PERIOD_PHASES: u64 = 120;
/// The growth of the cycle, as a share of it, that holding may be shown to
/// stay under.
pub(crate) const LOSS_LIMIT: f64 = 0.01;
/// Requests sent early in a phase meet a server still settling from the
/// last one: only those sent after this share of the phase count.
const SETTLED_SHARE: f64 = 0.25;
/// Fewer responses than this in a phase decide nothing.
const MIN_SAMPLES: u64 = 8;
/// Responses slower than this share of a phase: no holding. Between it and
/// `SETTLED_SHARE` a phase's server settles after the requests counted have
/// begun, which dilutes only the fall in R that a saturated server shows
/// (so fewer holds), not the hold that one with room to spare adds.
const MAX_RESPONSE_SHARE: f64 = 0.5;

/// One phase's responses: the mean response time of the requests sent in
/// it, and the mean hold of the responses handled in it.
#[derive(Clone, Copy, Default)]
struct Phase {
    response_s: f64,
    responses: u64,
    hold_s: f64,
    holds: u64,
}

impl Phase {
    fn cycle_s(&self) -> Option<f64> {
        (self.responses >= MIN_SAMPLES && self.holds >= MIN_SAMPLES)
            .then(|| self.response_s / self.responses as f64 + self.hold_s / self.holds as f64)
    }
}

/// Where a moment falls in the probes' schedule.
#[derive(Debug, PartialEq)]
enum Slot {
    /// Neither holding nor measured: the phase before a probe, in which the
    /// server settles from what came before (the run's start, or holding),
    /// and the one after each look's phases, in which their last responses
    /// come in.
    Pause,
    /// Phase `index` of a probe (`holding_phase` says whether it holds),
    /// measured for look `look` (and those after it).
    Probe { index: usize, look: usize },
    /// The last look's decision's phases.
    Keep,
}

fn slot(phase: u64) -> Slot {
    let i = (phase % PERIOD_PHASES) as usize;
    let (mut start, mut before) = (1, 0);
    for (look, &pairs) in LOOK_PAIRS.iter().enumerate() {
        let phases = 2 * (pairs - before);
        match i {
            0 => return Slot::Pause,
            i if i < start + phases => return Slot::Probe { index: 2 * before + i - start, look },
            i if i == start + phases => return Slot::Pause,
            _ => (start, before) = (start + phases + 1, pairs),
        }
    }
    Slot::Keep
}

/// The phase of a period from which look `look` decides: the one after the
/// pause that follows its phases.
fn look_phase(look: usize) -> usize {
    1 + 2 * LOOK_PAIRS[look] + look + 1
}

/// Whether phase `index` of a probe holds: pairs alternate between
/// (without, with) and (with, without).
fn holding_phase(index: usize) -> bool {
    (index % 2 == 1) != ((index / 2) % 2 == 1)
}

/// The one-sided p-value of Wilcoxon's signed-rank test that the values'
/// median is below 0: the chance, over the 2^n equally likely sign
/// patterns of their ranks, of a sum of positive ranks no larger than
/// theirs (exact; average ranks for ties, a zero counted as negative).
/// `scipy.stats.wilcoxon(x, alternative="less", method="exact")`.
pub(crate) fn signed_rank_p_below(x: &[f64]) -> f64 {
    let n = x.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| x[a].abs().total_cmp(&x[b].abs()));
    let mut rank = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let tied = order[i..].iter().take_while(|&&k| x[k].abs() == x[order[i]].abs()).count();
        let average = i as f64 + (tied as f64 + 1.0) / 2.0;
        order[i..i + tied].iter().for_each(|&k| rank[k] = average);
        i += tied;
    }
    let positive: f64 = (0..n).filter(|&k| x[k] > 0.0).map(|k| rank[k]).sum();
    let sum = |signs: u32| (0..n).filter(|&k| signs >> k & 1 == 1).map(|k| rank[k]).sum::<f64>();
    let as_low = (0..1u32 << n).filter(|&signs| sum(signs) <= positive + 1e-9).count();
    as_low as f64 / f64::from(1u32 << n)
}

/// One worker's probes.
pub(crate) struct Probe {
    start: Instant,
    /// The period whose probe `phases` measure.
    period: u64,
    phases: [Phase; 2 * PROBE_PAIRS],
    /// The period whose looks `looked` counts.
    deciding: u64,
    looked: usize,
    /// Whether a look of period `deciding` found holding free: its probe
    /// stops there, and the worker holds until the next.
    holding: bool,
    /// Whether a look of period `deciding` had the responses to decide.
    measured: bool,
    pub counts: ProbeCounts,
}

impl Probe {
    pub(crate) fn new(start: Instant) -> Self {
        let phases = [Phase::default(); 2 * PROBE_PAIRS];
        Self {
            start,
            period: 0,
            phases,
            deciding: 0,
            looked: 0,
            holding: false,
            measured: false,
            counts: ProbeCounts::default(),
        }
    }

    /// The phase `at` falls in, counted from the run's start, and how far
    /// into it, as a share.
    fn place(&self, at: Instant) -> (u64, f64) {
        let (since, phase) = (at.saturating_duration_since(self.start).as_nanos(), PHASE.as_nanos());
        ((since / phase) as u64, (since % phase) as f64 / phase as f64)
    }

    /// Whether a wait at `now` may hold responses, given the recent mean
    /// response time.
    pub(crate) fn holds(&mut self, now: Instant, recent_response_s: f64) -> bool {
        let slow = recent_response_s > PHASE.as_secs_f64() * MAX_RESPONSE_SHARE;
        let (phase, _) = self.place(now);
        self.look(phase);
        let hold = match slot(phase) {
            _ if self.holding => true,
            Slot::Probe { index, .. } => holding_phase(index),
            Slot::Pause | Slot::Keep => false,
        };
        hold && !slow
    }

    /// Takes the looks of `phase`'s period that are due and not yet taken,
    /// unless one already found holding free.
    fn look(&mut self, phase: u64) {
        let (period, i) = (phase / PERIOD_PHASES, (phase % PERIOD_PHASES) as usize);
        if period != self.deciding {
            (self.deciding, self.looked, self.holding, self.measured) = (period, 0, false, false);
        }
        while !self.holding && self.looked < LOOK_PAIRS.len() && i >= look_phase(self.looked) {
            self.decide(period, self.looked);
            self.looked += 1;
        }
    }

    fn decide(&mut self, period: u64, look: usize) {
        // Each pair's growth of the cycle with holding, as a share of it.
        let growth: Option<Vec<f64>> = match self.period == period {
            true => (0..LOOK_PAIRS[look])
                .map(|pair| {
                    let (a, b) = (self.phases[2 * pair].cycle_s()?, self.phases[2 * pair + 1].cycle_s()?);
                    let (off, on) = if holding_phase(2 * pair) { (b, a) } else { (a, b) };
                    Some(1.0 - off / on - LOSS_LIMIT)
                })
                .collect(),
            false => None,
        };
        let level = ALPHA / LOOK_PAIRS.len() as f64;
        self.holding = growth.as_ref().is_some_and(|g| signed_rank_p_below(g) < level);
        self.measured |= growth.is_some();
        // A probe counts once, at the look that ends it.
        if self.measured && (self.holding || look + 1 == LOOK_PAIRS.len()) {
            self.counts.probes += 1;
            self.counts.held += u64::from(self.holding);
        }
    }

    /// The phase of the current probe that `at` falls in (a new probe's
    /// first moment starts it afresh).
    fn phase_at(&mut self, at: Instant) -> Option<(&mut Phase, f64)> {
        let (phase, within) = self.place(at);
        let (period, Slot::Probe { index, .. }) = (phase / PERIOD_PHASES, slot(phase)) else { return None };
        if period > self.period {
            (self.period, self.phases) = (period, [Phase::default(); 2 * PROBE_PAIRS]);
        }
        (period == self.period).then(|| (&mut self.phases[index], within))
    }

    /// A response to a request sent at `sent`, whose last byte came at
    /// `end`, handled at `now`.
    pub(crate) fn response(&mut self, sent: Instant, end: Instant, now: Instant) {
        if let Some((p, within)) = self.phase_at(sent) {
            if within >= SETTLED_SHARE {
                p.response_s += end.saturating_duration_since(sent).as_secs_f64();
                p.responses += 1;
            }
        }
        if let Some((p, _)) = self.phase_at(now) {
            p.hold_s += now.saturating_duration_since(end).as_secs_f64();
            p.holds += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feeds a probe a closed loop's responses for its probe phases: each
    /// `every` a request, answered in `response(on)`, handled after
    /// `hold(on)` (`on`: in a phase with holding). Returns the probe, after
    /// the first wait past its last look, and whether each phase held.
    fn run_phases(
        every: Duration,
        response: impl Fn(bool, u32) -> Duration,
        hold: impl Fn(bool) -> Duration,
    ) -> (Probe, Vec<bool>) {
        let start = Instant::now();
        let mut p = Probe::new(start);
        let last = look_phase(LOOK_PAIRS.len() - 1) as u32;
        let (end, mut held) = (PHASE * last, vec![false; last as usize + 1]);
        let mut k = 0;
        while every * k < end {
            let sent = start + every * k;
            let on = p.holds(sent, 0.001);
            held[(every * k).as_nanos() as usize / PHASE.as_nanos() as usize] |= on;
            let got = sent + response(on, k);
            p.response(sent, got, got + hold(on));
            k += 1;
        }
        held[last as usize] = p.holds(start + PHASE * last, 0.001);
        (p, held)
    }

    fn run(every: Duration, response: impl Fn(bool, u32) -> Duration, hold: impl Fn(bool) -> Duration) -> Probe {
        run_phases(every, response, hold).0
    }

    #[test]
    fn a_response_from_the_last_probe_does_not_count_in_the_next() {
        let start = Instant::now();
        let mut p = Probe::new(start);
        let period = PHASE * PERIOD_PHASES as u32;
        // Sent in the first probe's phase 1, handled in the second probe's 0.
        p.response(start + PHASE * 5 / 2, start + PHASE * 3, start + period + PHASE * 3 / 2);
        assert_eq!((p.period, p.phases[1].responses, p.phases[0].holds), (1, 0, 1));
    }

    #[test]
    fn phases_alternate_then_look_twice_then_keep() {
        let kinds: Vec<Slot> = (0..PERIOD_PHASES + 2).map(slot).collect();
        let probe = |index, look| Slot::Probe { index, look };
        assert_eq!(kinds[..2], [Slot::Pause, probe(0, 0)]);
        assert_eq!(kinds[12..15], [probe(11, 0), Slot::Pause, probe(12, 1)]);
        assert_eq!(kinds[25..28], [probe(23, 1), Slot::Pause, Slot::Keep]);
        assert_eq!((look_phase(0), look_phase(1)), (14, 27));
        assert_eq!(kinds[PERIOD_PHASES as usize - 1], Slot::Keep);
        assert_eq!(kinds[PERIOD_PHASES as usize..], [Slot::Pause, probe(0, 0)]);
        let holding = (0..2 * PROBE_PAIRS).filter(|&i| holding_phase(i)).count() as u64;
        assert!(holding * 10 <= PERIOD_PHASES, "probing holds {holding} phases of {PERIOD_PHASES}");
    }

    #[test]
    fn a_saturated_server_absorbs_the_hold() {
        // Its queue is the response time: what the hold adds, R loses.
        let (p, held) =
            run_phases(MS / 10, |on, _| if on { MS * 9 } else { MS * 10 }, |on| if on { MS } else { MS / 100 });
        assert_eq!((p.holding, p.counts), (true, ProbeCounts { probes: 1, held: 1 }));
        assert!(held[look_phase(0)..].iter().all(|&h| h), "the first look holds, and the probe stops: {held:?}");
    }

    #[test]
    fn a_stall_in_the_first_pairs_delays_holding() {
        // Saturated, but a stall makes the first pair's phase with holding
        // 60% slower: the first look cannot pass, the second does.
        let stalled = |k: u32| (MS / 10 * k).as_nanos() / PHASE.as_nanos() == 2;
        let response = |on, k| match (on, stalled(k)) {
            (_, true) => MS * 16,
            (true, _) => MS * 9,
            _ => MS * 10,
        };
        let (p, held) = run_phases(MS / 10, response, |on| if on { MS } else { MS / 100 });
        assert_eq!((p.holding, p.counts), (true, ProbeCounts { probes: 1, held: 1 }));
        let second: Vec<bool> = (2 * LOOK_PAIRS[0]..2 * PROBE_PAIRS).map(holding_phase).collect();
        assert_eq!(held[look_phase(0)..look_phase(0) + second.len()], second, "the second look's pairs alternate");
        assert!(held[look_phase(1)], "and then it holds");
    }

    /// A probe whose first pairs' cycles grew by `growth` (less the limit).
    fn probe_with(growth: &[f64]) -> Probe {
        let mut p = Probe::new(Instant::now());
        for (pair, g) in growth.iter().enumerate() {
            let phase = |cycle_s: f64| Phase { response_s: cycle_s * 10.0, responses: 10, hold_s: 0.0, holds: 10 };
            let (off, on) = (phase(1.0), phase(1.0 / (1.0 - g - LOSS_LIMIT)));
            let (a, b) = if holding_phase(2 * pair) { (on, off) } else { (off, on) };
            (p.phases[2 * pair], p.phases[2 * pair + 1]) = (a, b);
        }
        p
    }

    #[test]
    fn each_look_tests_at_half_the_level() {
        // Five pairs of six well under the limit and one just over: Wilcoxon's
        // p is 2/64, under 5% but not under half of it.
        let growth = [-0.1, -0.2, -0.15, 0.001, -0.3, -0.12];
        assert!((signed_rank_p_below(&growth) - 2.0 / 64.0).abs() < 1e-12);
        let mut p = probe_with(&growth);
        p.decide(0, 0);
        assert_eq!((p.holding, p.measured, p.counts), (false, true, ProbeCounts::default()));
        // Twelve pairs, two over the limit (ranks 3 and 12): p is 131/4096
        // (scipy.stats.wilcoxon(..., alternative="less", method="exact")).
        let mut growth: Vec<f64> = (1..=12).map(|k| -0.02 * f64::from(k)).collect();
        (growth[2], growth[11]) = (0.06, 0.24);
        assert!((signed_rank_p_below(&growth) - 131.0 / 4096.0).abs() < 1e-12);
        let mut p = probe_with(&growth);
        p.decide(0, 1);
        assert_eq!((p.holding, p.counts), (false, ProbeCounts { probes: 1, held: 0 }));
    }

    #[test]
    fn each_period_probes_afresh() {
        let mut p = probe_with(&[-0.1; PROBE_PAIRS]);
        let at = |period: u64, phase: usize| p.start + PHASE * (period * PERIOD_PHASES + phase as u64) as u32;
        let (first, pause, next) = (at(0, look_phase(0)), at(1, 0), at(1, look_phase(0)));
        let last = at(1, look_phase(1));
        assert!(p.holds(first, 0.001), "the first look holds");
        assert!(!p.holds(pause, 0.001), "the next period starts with a pause");
        // No responses in the second period: the first's phases decide nothing.
        assert!(!p.holds(next, 0.001) && !p.holds(last, 0.001));
        assert_eq!(p.counts, ProbeCounts { probes: 1, held: 1 });
    }

    #[test]
    fn a_server_with_room_to_spare_does_not() {
        // The same response time either way: the cycle grows by the hold.
        let p = run(MS / 10, |_, _| MS * 10, |on| if on { MS / 2 } else { MS / 100 });
        assert_eq!((p.holding, p.counts), (false, ProbeCounts { probes: 1, held: 0 }));
    }

    #[test]
    fn noise_that_hides_the_cost_decides_against_holding() {
        // On average the cycle does not grow, but pairs disagree by ±10%:
        // the test cannot show the growth to be under 1%.
        let phase_of = |k: u32| (MS / 10 * k).as_nanos() / PHASE.as_nanos();
        let noisy = |_: bool, k: u32| if phase_of(k) % 3 == 0 { MS * 11 } else { MS * 9 };
        let p = run(MS / 10, noisy, |_| MS / 100);
        assert_eq!((p.holding, p.counts), (false, ProbeCounts { probes: 1, held: 0 }));
    }

    #[test]
    fn too_few_responses_decide_nothing() {
        let p = run(MS * 20, |on, _| if on { MS * 9 } else { MS * 10 }, |_| MS);
        assert_eq!((p.holding, p.counts), (false, ProbeCounts { probes: 0, held: 0 }));
    }

    /// The mean response time of a closed network of `n` connections, one
    /// queueing centre of demand `d_s` (the server's CPU) and a delay
    /// centre of `delay_s` (a sleep, the network), each connection's think
    /// time `z_s`: exact mean value analysis (Reiser and Lavenberg 1980;
    /// Jain §34.1).
    fn mva_response_s(n: u32, d_s: f64, delay_s: f64, z_s: f64) -> f64 {
        let (mut queue, mut r) = (0.0, 0.0);
        for k in 1..=n {
            r = d_s * (1.0 + queue) + delay_s;
            queue = f64::from(k) / (r + z_s) * (r - delay_s);
        }
        r
    }

    #[test]
    fn the_probe_decides_as_mean_value_analysis_predicts() {
        // 50 connections, 20 µs of server CPU per request, a 10 µs wake-up;
        // holding adds 10% of the response time to the think time.
        let (n, d, wake) = (50, 20e-6, 10e-6);
        for (delay, holds) in [(0.0, true), (0.005, false)] {
            let off = mva_response_s(n, d, delay, wake);
            let hold = wake + 0.1 * off;
            let on = mva_response_s(n, d, delay, hold);
            // The throughput holding costs, by the interactive response time law.
            let loss = 1.0 - (f64::from(n) / (on + hold)) / (f64::from(n) / (off + wake));
            assert_eq!(loss < LOSS_LIMIT, holds, "delay {delay} s: MVA's loss {loss}");
            let secs = Duration::from_secs_f64;
            let p = run(MS / 20, |h, _| secs(if h { on } else { off }), |h| secs(if h { hold } else { wake }));
            assert_eq!(p.holding, holds, "delay {delay} s: R {off} s without holding, {on} s with");
        }
    }

    #[test]
    fn slow_responses_never_hold() {
        let mut p = Probe::new(Instant::now());
        (p.holding, p.looked) = (true, 1);
        let keep = p.start + PHASE * (look_phase(1) as u32 + 1);
        assert!(!p.holds(keep, PHASE.as_secs_f64()));
        assert!(!p.holds(p.start + PHASE * 2, PHASE.as_secs_f64()), "not even in a probe's phase with holding");
    }

    #[test]
    fn the_signed_rank_test_agrees_with_scipy() {
        // scipy.stats.wilcoxon(x, alternative="less", method="exact").pvalue, scipy 1.x.
        let cases: [([f64; 6], f64); 5] = [
            ([-0.1, -0.2, -0.05, -0.3, -0.15, -0.08], 0.015625),
            ([-0.1, -0.2, 0.01, -0.3, -0.15, -0.08], 0.03125),
            ([-0.1, -0.2, 0.03, -0.3, -0.15, -0.08], 0.03125),
            ([0.02, 0.03, 0.01, 0.04, -0.01, 0.05], 0.984375),
            ([-0.72, -0.148, -0.087, 0.108, -0.05, -0.06], 0.109375),
        ];
        for (x, p) in cases {
            assert!((signed_rank_p_below(&x) - p).abs() < 1e-12, "{x:?}: {} against {p}", signed_rank_p_below(&x));
        }
    }

    #[test]
    fn pairs_alternate_their_order() {
        let on: Vec<bool> = (0..8).map(holding_phase).collect();
        assert_eq!(on, [false, true, true, false, false, true, true, false]);
    }
}
