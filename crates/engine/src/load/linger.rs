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
//! 1945; exact, one-sided, 5%) shows the pairs' growth of the cycle to be
//! under `LOSS_LIMIT`. Pairs cancel the drift of a server whose speed
//! wanders; a phase is the unit because responses within one are not
//! independent; ranks, because on a VM one phase in a few is far off (a
//! stall), which would widen a t-test's bound past any use. A probe runs
//! every `PERIOD_PHASES`, since a server's state changes within a run.

use std::time::{Duration, Instant};

use crate::measure::stats::ProbeCounts;

/// How long each phase lasts. Phases are counted from the run's start, the
/// same for every worker, so that all hold together: a saturated server's
/// queue absorbs one worker's hold only if the others do not refill it.
const PHASE: Duration = Duration::from_millis(100);
/// Pairs of phases (without and with holding) in one probe: with 6, the
/// signed-rank test can pass with one pair on the wrong side, if it is one
/// of the two nearest the limit.
const PROBE_PAIRS: usize = 6;
/// The signed-rank test's one-sided level.
const ALPHA: f64 = 0.05;
/// Phases from one probe's start to the next: a pause, the probe's, a
/// pause, and then its decision's. The probe's phases with holding are a
/// tenth of them, so probing costs a server with room to spare at most a
/// tenth of what holding would.
const PERIOD_PHASES: u64 = 60;
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
    /// and the one after, in which the probe's last responses come in.
    Pause,
    /// Phase `index` of a probe (`holding_phase` says whether it holds).
    Probe { index: usize },
    /// The probe's decision's phases (taken at the first of them).
    Keep,
}

fn slot(phase: u64) -> Slot {
    match (phase % PERIOD_PHASES) as usize {
        0 => Slot::Pause,
        i if i <= 2 * PROBE_PAIRS => Slot::Probe { index: i - 1 },
        i if i == 2 * PROBE_PAIRS + 1 => Slot::Pause,
        _ => Slot::Keep,
    }
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
    /// The last period decided.
    decided: Option<u64>,
    holding: bool,
    pub counts: ProbeCounts,
}

impl Probe {
    pub(crate) fn new(start: Instant) -> Self {
        let phases = [Phase::default(); 2 * PROBE_PAIRS];
        Self { start, period: 0, phases, decided: None, holding: false, counts: ProbeCounts::default() }
    }

    /// The period `at` falls in, its slot there, and how far into its
    /// phase, as a share.
    fn place(&self, at: Instant) -> (u64, Slot, f64) {
        let (since, phase) = (at.saturating_duration_since(self.start).as_nanos(), PHASE.as_nanos());
        let n = (since / phase) as u64;
        (n / PERIOD_PHASES, slot(n), (since % phase) as f64 / phase as f64)
    }

    /// Whether a wait at `now` may hold responses, given the recent mean
    /// response time.
    pub(crate) fn holds(&mut self, now: Instant, recent_response_s: f64) -> bool {
        let slow = recent_response_s > PHASE.as_secs_f64() * MAX_RESPONSE_SHARE;
        match self.place(now) {
            (_, Slot::Probe { index }, _) => holding_phase(index) && !slow,
            (_, Slot::Pause, _) => false,
            (period, Slot::Keep, _) => {
                if self.decided != Some(period) {
                    self.decided = Some(period);
                    self.decide(period);
                }
                self.holding && !slow
            }
        }
    }

    fn decide(&mut self, period: u64) {
        // Each pair's growth of the cycle with holding, as a share of it.
        let growth: Option<Vec<f64>> = match self.period == period {
            true => (0..PROBE_PAIRS)
                .map(|pair| {
                    let (a, b) = (self.phases[2 * pair].cycle_s()?, self.phases[2 * pair + 1].cycle_s()?);
                    let (off, on) = if holding_phase(2 * pair) { (b, a) } else { (a, b) };
                    Some(1.0 - off / on - LOSS_LIMIT)
                })
                .collect(),
            false => None,
        };
        self.holding = growth.as_ref().is_some_and(|g| signed_rank_p_below(g) < ALPHA);
        self.counts.probes += u64::from(growth.is_some());
        self.counts.held += u64::from(self.holding);
    }

    /// The phase of the current probe that `at` falls in (a new probe's
    /// first moment starts it afresh).
    fn phase_at(&mut self, at: Instant) -> Option<(&mut Phase, f64)> {
        let (period, slot, within) = self.place(at);
        let Slot::Probe { index } = slot else { return None };
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
    /// `hold(on)` (`on`: in a phase with holding). Returns what it decided
    /// on the first wait after.
    fn run(every: Duration, response: impl Fn(bool, u32) -> Duration, hold: impl Fn(bool) -> Duration) -> Probe {
        let start = Instant::now();
        let mut p = Probe::new(start);
        let end = PHASE * (2 * PROBE_PAIRS as u32 + 1);
        let mut k = 0;
        while every * k < end {
            let sent = start + every * k;
            let on = p.holds(sent, 0.001);
            let got = sent + response(on, k);
            p.response(sent, got, got + hold(on));
            k += 1;
        }
        p.holds(start + PHASE * (2 * PROBE_PAIRS as u32 + 2), 0.001);
        p
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
    fn phases_alternate_then_decide_then_keep() {
        let kinds: Vec<Slot> = (0..PERIOD_PHASES + 2).map(slot).collect();
        let last = 2 * PROBE_PAIRS;
        assert_eq!(kinds[0], Slot::Pause);
        assert_eq!(kinds[1], Slot::Probe { index: 0 });
        assert_eq!(kinds[last], Slot::Probe { index: last - 1 });
        assert_eq!(kinds[last + 1], Slot::Pause);
        assert_eq!(kinds[last + 2], Slot::Keep);
        assert_eq!(kinds[PERIOD_PHASES as usize - 1], Slot::Keep);
        assert_eq!(kinds[PERIOD_PHASES as usize], Slot::Pause);
        assert_eq!(kinds[PERIOD_PHASES as usize + 1], Slot::Probe { index: 0 });
    }

    #[test]
    fn a_saturated_server_absorbs_the_hold() {
        // Its queue is the response time: what the hold adds, R loses.
        let p = run(MS / 10, |on, _| if on { MS * 9 } else { MS * 10 }, |on| if on { MS } else { MS / 100 });
        assert_eq!((p.holding, p.counts), (true, ProbeCounts { probes: 1, held: 1 }));
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
        p.holding = true;
        let keep = p.start + PHASE * (2 * PROBE_PAIRS as u32 + 3);
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
