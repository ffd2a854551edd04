//! Whether a closed loop may hold responses (`linger = "auto"`): a probe
//! measures what holding costs the server, and the worker holds only where
//! it is shown to cost less than `LOSS_LIMIT` of the load.
//!
//! A closed loop's connection cycles between its request in flight (the
//! response time R, send to last byte) and the time its response waits for
//! the worker (the hold H, last byte to handling). Each connection's
//! throughput is 1 / (R + H): the response time law of Denning and Buzen's
//! operational laws, with the hold as the think time. Holding lengthens H.
//! A server with room to spare answers in the same R, so the cycle grows
//! and the load it is offered falls by as much. A saturated one answers
//! the others sooner by as much (past the knee of the asymptotic bounds,
//! R = N·D_max − Z: Jain, *The Art of Computer Systems Performance
//! Analysis*, §33.6), so its throughput stays; on the same machine it can
//! even rise, as the server pays for each wake-up of the generator.
//!
//! The probe alternates phases without and with holding, in pairs, and
//! compares each pair's mean cycles: a paired one-sided t-test (Jain §13.4.1,
//! paired observations; Student's t) holds only if the upper 95% bound of
//! the mean relative growth is under `LOSS_LIMIT`. Pairs cancel the drift of
//! a server whose speed wanders, and a phase is the unit because responses
//! within one are not independent. A probe runs every `PERIOD_PHASES`,
//! since a server's state changes within a run.

use std::time::{Duration, Instant};

use crate::measure::stats::ProbeCounts;

/// How long each phase lasts. Phases are counted from the run's start, the
/// same for every worker, so that all hold together: a saturated server's
/// queue absorbs one worker's hold only if the others do not refill it.
const PHASE: Duration = Duration::from_millis(100);
/// Pairs of phases (without, with holding) in one probe.
const PROBE_PAIRS: usize = 4;
/// Student's t, one-sided 95%, PROBE_PAIRS - 1 degrees of freedom
/// (scipy.stats.t.ppf(0.95, 3) = 2.3534).
const T_95: f64 = 2.3534;
/// Phases from one probe's start to the next: the probe's, one in which the
/// probe's last responses come in (no holding), and then its decision's.
const PERIOD_PHASES: u64 = 48;
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
    /// Phase `index` of a probe: even without holding, odd with.
    Probe { index: usize },
    /// The phase after a probe, when its decision is taken.
    Decide,
    /// The decision's phases.
    Keep,
}

fn slot(phase: u64) -> Slot {
    match (phase % PERIOD_PHASES) as usize {
        i if i < 2 * PROBE_PAIRS => Slot::Probe { index: i },
        i if i == 2 * PROBE_PAIRS => Slot::Decide,
        _ => Slot::Keep,
    }
}

/// The growth of the cycle with holding, each pair's share of its cycle
/// with holding: its mean, and the upper one-sided 95% bound of the mean.
pub(crate) fn growth(pairs: &[(f64, f64)]) -> (f64, f64) {
    let d: Vec<f64> = pairs.iter().map(|&(off, on)| 1.0 - off / on).collect();
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, mean + T_95 * (var / n).sqrt())
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
            (_, Slot::Probe { index }, _) => index % 2 == 1 && !slow,
            (_, Slot::Decide, _) => false,
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
        let pairs: Option<Vec<(f64, f64)>> = match self.period == period {
            true => self.phases.chunks(2).map(|p| Some((p[0].cycle_s()?, p[1].cycle_s()?))).collect(),
            false => None,
        };
        self.holding = pairs.as_ref().is_some_and(|p| growth(p).1 < LOSS_LIMIT);
        self.counts.probes += u64::from(pairs.is_some());
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
        let end = PHASE * (2 * PROBE_PAIRS as u32);
        let mut k = 0;
        while every * k < end {
            let sent = start + every * k;
            let on = p.holds(sent, 0.001);
            let got = sent + response(on, k);
            p.response(sent, got, got + hold(on));
            k += 1;
        }
        p.holds(start + PHASE * (2 * PROBE_PAIRS as u32 + 1), 0.001);
        p
    }

    #[test]
    fn a_response_from_the_last_probe_does_not_count_in_the_next() {
        let start = Instant::now();
        let mut p = Probe::new(start);
        let period = PHASE * PERIOD_PHASES as u32;
        // Sent in the first probe's phase 1, handled in the second probe's.
        p.response(start + PHASE * 3 / 2, start + PHASE * 2, start + period + PHASE / 2);
        assert_eq!((p.period, p.phases[1].responses, p.phases[0].holds), (1, 0, 1));
    }

    #[test]
    fn phases_alternate_then_decide_then_keep() {
        let kinds: Vec<Slot> = (0..PERIOD_PHASES + 1).map(slot).collect();
        assert_eq!(kinds[0], Slot::Probe { index: 0 });
        assert_eq!(kinds[7], Slot::Probe { index: 7 });
        assert_eq!(kinds[8], Slot::Decide);
        assert_eq!(kinds[9], Slot::Keep);
        assert_eq!(kinds[PERIOD_PHASES as usize], Slot::Probe { index: 0 });
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
        // the bound cannot be shown under 1%.
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

    #[test]
    fn slow_responses_never_hold() {
        let mut p = Probe::new(Instant::now());
        p.holding = true;
        let keep = p.start + PHASE * (2 * PROBE_PAIRS as u32 + 2);
        assert!(!p.holds(keep, PHASE.as_secs_f64()));
        assert!(!p.holds(p.start + PHASE, PHASE.as_secs_f64()), "not even in a probe's phase with holding");
    }

    #[test]
    fn growth_is_the_paired_mean_and_its_upper_bound() {
        // d = 0.1, 0.2, 0.3, 0.4: mean 0.25, sd 0.1291, bound 0.25 + 2.3534 * 0.1291 / 2.
        let pairs = [(0.9, 1.0), (0.8, 1.0), (0.7, 1.0), (0.6, 1.0)];
        let (mean, upper) = growth(&pairs);
        assert!((mean - 0.25).abs() < 1e-12);
        assert!((upper - (0.25 + 2.3534 * 0.129_099_444_873_580_56 / 2.0)).abs() < 1e-9);
    }
}
