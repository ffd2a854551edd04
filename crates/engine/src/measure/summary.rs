//! Summaries of an HDR histogram: the figures of ab's tables, a percentile
//! spectrum for the .hgrm format, and the histogram itself, encoded.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::Serialize;

/// ab's percentage table, then the tail a performance engineer asks for.
pub const PERCENTILES: [f64; 12] = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 99.99, 99.999, 100.0];

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Percentile {
    pub percentile: f64,
    pub value_us: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SpectrumPoint {
    pub value_us: u64,
    pub percentile: f64,
    pub total_count: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LatencySummary {
    pub count: u64,
    pub min_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub median_us: u64,
    pub percentiles: Vec<Percentile>,
    /// HdrHistogram's percentile distribution (5 ticks per half distance),
    /// the rows of its .hgrm output.
    pub spectrum: Vec<SpectrumPoint>,
    /// The histogram in HdrHistogram's V2 compressed encoding, base64: it can
    /// be stored, merged and re-read by any HdrHistogram implementation.
    pub histogram: String,
    /// The histogram's layout, for the footer of the .hgrm format.
    pub hdr_buckets: u32,
    pub hdr_sub_buckets: u32,
}

pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serializing to memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim()).map_err(|e| e.to_string())?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(|e| format!("{e:?}"))
}

/// The values `h` holds over `bound` as its percentiles read them: a value
/// is over where its bucket's highest equivalent is, the value a percentile
/// in that bucket reports, so "p(q) <= bound" and "at most 1 − q of the
/// values over it" agree to within one value's rounding of the rank.
pub fn count_over(h: &Histogram<u64>, bound: u64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    // The highest value whose bucket lies wholly at or below the bound.
    let within =
        if h.highest_equivalent(bound) <= bound { bound } else { h.lowest_equivalent(bound).saturating_sub(1) };
    if h.highest_equivalent(within) > bound {
        return h.len(); // the bound lies inside the lowest bucket
    }
    h.len() - h.count_between(0, within)
}

pub fn summarize(h: &Histogram<u64>) -> LatencySummary {
    let empty = h.is_empty();
    let at = |p: f64| if empty { 0 } else { h.value_at_percentile(p) };
    let mut total = 0;
    let spectrum = if empty {
        Vec::new()
    } else {
        h.iter_quantiles(5)
            .map(|v| {
                total += v.count_since_last_iteration();
                SpectrumPoint {
                    value_us: v.value_iterated_to(),
                    percentile: v.quantile_iterated_to(),
                    total_count: total,
                }
            })
            .collect()
    };
    LatencySummary {
        count: h.len(),
        min_us: if empty { 0 } else { h.min() },
        max_us: if empty { 0 } else { h.max() },
        mean_us: if empty { 0.0 } else { h.mean() },
        stdev_us: if empty { 0.0 } else { h.stdev() },
        median_us: at(50.0),
        percentiles: PERCENTILES.iter().map(|&p| Percentile { percentile: p, value_us: at(p) }).collect(),
        spectrum,
        histogram: encode(h),
        hdr_buckets: u32::from(h.buckets()),
        // HdrHistogram's sub-bucket count: 2 * 10^digits rounded up to a power of two.
        hdr_sub_buckets: (2.0 * 10f64.powi(i32::from(h.sigfig()))).log2().ceil().exp2() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::latency_histogram;

    #[test]
    fn summary_and_round_trip() {
        let mut h = latency_histogram();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let s = summarize(&h);
        assert_eq!((s.count, s.min_us, s.max_us, s.median_us), (1000, 1, 1000, 500));
        assert_eq!(s.percentiles.last().unwrap().value_us, 1000);
        assert_eq!(s.spectrum.last().unwrap().total_count, 1000);
        let back = decode(&s.histogram).unwrap();
        assert_eq!(back.len(), 1000);
        assert_eq!(back.value_at_quantile(0.99), h.value_at_quantile(0.99));
    }

    #[test]
    fn values_over_a_bound_are_counted_as_the_percentiles_read_them() {
        // Wide buckets: at 3 significant digits, values near 100,000 µs share buckets of 64.
        let mut h = latency_histogram();
        let values: Vec<u64> = (0..5000u64).map(|i| 90_000 + i * 7).collect();
        for &v in &values {
            h.record(v).unwrap();
        }
        for bound in [89_000, 90_000, 99_999, 100_000, 100_031, 100_063, 110_000, 124_993, 200_000] {
            let by_bucket = values.iter().filter(|&&v| h.highest_equivalent(v) > bound).count() as u64;
            assert_eq!(count_over(&h, bound), by_bucket, "bound {bound}");
        }
        // "p99 <= L" exactly where at most 1% are over L, across the bucket around L.
        let p99 = h.value_at_quantile(0.99);
        for bound in (p99 - 200)..(p99 + 200) {
            let allowed = count_over(&h, bound) as f64 <= 0.01 * h.len() as f64;
            assert_eq!(allowed, p99 <= bound, "bound {bound}, p99 {p99}");
        }
        assert_eq!(count_over(&latency_histogram(), 1), 0);
    }

    #[test]
    fn empty_histogram_summarizes_to_zeros() {
        let s = summarize(&latency_histogram());
        assert_eq!((s.count, s.max_us, s.spectrum.len()), (0, 0, 0));
    }
}
